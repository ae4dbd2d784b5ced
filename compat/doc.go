// Package compat cross-checks warpkv against reference implementations
// (go-ethereum's trie for package mpt). It is a separate module so that
// the main module does not depend on go-ethereum; it holds only tests.
//
// Run: cd compat && go test ./...
package compat
