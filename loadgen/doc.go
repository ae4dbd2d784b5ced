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
// Two drivers move the requests (Config.Driver). On Linux a run uses
// event loops: one per GOMAXPROCS on a locked thread, each waiting in
// epoll_wait for its share of the connections and, for each connection
// that is readable, reading once, parsing the complete replies and
// sending the next requests with one write: two system calls a request
// with one in flight, as a memcached server pays, so that a generator on
// as many cores as the server does not run out before the server. Paced,
// a loop keeps its connections' schedules in a heap behind a timerfd.
// Paced runs with more than one request in flight per connection, and
// runs elsewhere or by choice, use a writer and a reader goroutine per
// connection on Go's network poller (more CPU a request: the two
// goroutines' wake-ups and hand-offs, and a read that finds nothing before
// each wait). Neither allocates per request. The generator runs on the same
// machine as the server it measures only with that caveat: both compete
// for the CPUs.
package loadgen
