// Package kv defines the key-value operations of warpkv's memcached-compatible
// server and their semantics, independent of wire protocol and engine.
//
// The protocol layer (package protocol) turns text, meta and binary requests
// into Ops, hands a connection's pipelined Ops to a Cache in one Batch, and
// encodes the results. A Cache executes a Batch as if its Ops ran one after
// the other, in order; engines are free to run the index work of many
// batches together (the Mega-KV engine in package server batches them onto a
// GPU), but every reply must be the one sequential execution gives.
//
// Apply holds the rules of memcached 1.6 for every operation (add on an
// existing key, CAS mismatch, incr on a non-numeric value, append keeping
// the old flags, ...), so that every Cache, including the reference Model,
// answers alike. Model is a plain map under a mutex: the oracle for tests
// and a Cache for protocol tests.
package kv
