// Package difftest tests memcached-compatible servers against each other
// and against real clients.
//
// Run sends the same random sequences of text, meta and binary protocol
// commands (including malformed ones) to two servers and requires the same
// replies, up to CAS values, version strings, stats bodies and TTLs that
// may differ by a second or two. The usual reference is a real memcached,
// which Memcached starts for a test. ClientSuite drives a server through
// the gomemcache client library.
//
// Package server's tests run the same checks against the Mega-KV engine:
//
//	difftest.Run(t, difftest.Memcached(t), addr, difftest.Config{})
//	difftest.ClientSuite(t, addr)
package difftest
