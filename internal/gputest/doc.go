// Package gputest gives tests a GPU when one is usable. Without one, tests
// skip with the reason; with WARPKV_REQUIRE_GPU=1 they fail instead.
package gputest
