// Package peerbench holds what compat's peer benchmark commands share:
// the flags of the commands that run a warpkv bench suite's cases on peers
// beside warpkv's engines (btreebench, artbench), and how every command
// prints its report.
package peerbench
