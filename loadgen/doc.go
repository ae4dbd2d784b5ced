// Package loadgen is a load generator for memcached-compatible servers.
//
// Run drives one server: many connections, each keeping a pipeline of get
// (multi-get) and set requests in flight, with keys drawn uniformly or by
// Zipfian popularity (YCSB's theta 0.99), after a preload of every key and
// a warm-up. It reports operations per second, hit ratio, errors and
// request latency percentiles from a logarithmic histogram. Compare runs
// several workloads (the Mega-KV paper's key/value sizes a to d, GET:SET
// mixes, distributions) against several servers and WriteTable prints
// them side by side. The command "warpkv loadgen" is its front end.
//
// Each connection has one writer and one reader goroutine; neither
// allocates per request, so that the generator is rarely the bottleneck.
// It runs on the same machine as the server it measures only with that
// caveat: both compete for the CPUs.
package loadgen
