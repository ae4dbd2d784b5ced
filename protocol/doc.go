// Package protocol is the network front of warpkv's memcached-compatible
// server: it serves memcached clients over stream connections (TCP, or any
// net.Conn) and runs their requests on a kv.Cache.
//
// # Protocols
//
// All three memcached 1.6 protocols are served, with memcached 1.6.18's
// replies and error strings byte for byte: the text protocol (get, gets,
// gat, gats, set, add, replace, append, prepend, cas, delete, incr, decr,
// touch, flush_all, version, verbosity, stats, quit, with noreply), the
// meta protocol (mg, ms, md, ma, mn, me) and the binary protocol (every
// opcode memcached implements; SASL and unknown opcodes, verbosity among
// them, answer "Unknown command", after reading and throwing away bodylen
// bytes past the extras and key as memcached does). As in memcached, a connection's first byte fixes its protocol:
// 0x80 makes it binary, anything else text (meta commands are text
// commands). Numbers are parsed with memcached's C-library rules, including
// its truncation of too-wide flags and expiry times to 32 bits.
//
// # Connection model and batching
//
// A connection works in rounds: it parses every complete request already
// in its read buffer into a kv.Batch, the batch runs with a single
// Cache.Do, and its replies are rendered in request order and written
// with one vectored write. A multi-get is one Get op per key. Requests
// needing no op (version, mn, errors, ...) keep their place in the reply
// order.
//
// On Linux, Serve hands accepted connections (TCP or unix sockets) to
// Config.Loops event loops (default: Threads), each a goroutine that owns
// many connections and waits for them with epoll (level-triggered). A
// loop's round reads every readable connection once, parses all their
// complete requests into one batch, runs it with one Cache.Do, then
// renders and writes each connection's replies with one writev: per
// connection and round one read and one write system call, and per round
// one epoll_wait and one batch, however many connections take part. Its
// reads and writes are raw non-blocking system calls. Replies a socket does
// not take at once are copied to the connection (held, see Limits) and the
// connection is watched for writability only: it is neither read nor
// parsed until they are sent, while the loop serves its other connections.
// ServeConn, connections without a file descriptor (net.Pipe), other
// platforms and Config.Loops < 0 serve each connection on its own
// goroutine, in the same rounds; it blocks in Read and Write.
//
// A connection's part of a round holds at most Config.MaxBatch requests,
// an op limit of ops and Config.MaxBatchBytes of stored values, so one
// pipelining connection cannot monopolize the cache or its loop; a longer
// multi-get is fetched over several rounds. After a round whose hits
// exceed MaxBatchBytes the connection's op limit shrinks in proportion
// (it doubles back after rounds that use half of it with small hits), and
// the server keeps an estimate of recent bytes per get that caps every
// connection's next rounds at about MaxBatchBytes of values. An event
// loop's connection starts at one op per round (slow start), so that a
// client sending a long pipeline of gets and never reading holds one
// value before the server has seen the values' size. A loop's round holds
// at most 4096 ops; connections past it run first in the next round.
// stats ends its round, so it reports the effect of the requests before
// it; quit and binary protocol errors close the connection after the
// round's replies. An incomplete request waits in the buffer while the
// complete ones before it are answered.
//
// # Limits
//
// A connection's read buffer starts at 16 KiB and grows only to hold one
// request: a value up to Config.ItemSizeMax, a multi-get line up to
// Config.MaxGetLine. Replies not yet taken by their clients count against
// Config.MaxReplyBytes: each client that does not read holds at most its
// last round of replies (it is not read meanwhile), and while the held
// replies exceed the budget every connection's round is limited to one op,
// so a further such client adds at most one value. Their memory is handed
// back to the operating system once they are sent or their connections
// closed. A value over the item size limit is answered "object
// too large" and discarded as it arrives, never buffered; a refused set
// also removes the key's old item, as memcached does. The growth of all
// connections' buffers together is bounded by Config.MaxPendingBytes and,
// when set, Config.PendingBudget: a value that would exceed them is
// refused as memcached refuses a value it has no memory for
// ("SERVER_ERROR out of memory storing object"), so clients that send half
// a value and stop cannot grow the server. warpkv serve counts these bytes
// inside the item memory limit, as memcached does (it receives a value
// into the item it allocated): past one largest request they take pages
// from the stored items, and a value is refused only when they would leave
// the items less than an eighth of the limit. Text lines over 2048
// bytes without a newline (other than get and gets) close the connection,
// as do binary requests with a bad magic byte. Beyond Config.MaxConns
// connections, a new one gets "ERROR Too many open connections" and is
// closed; when the process runs out of file descriptors, a spare one is
// freed to answer the same and close. Config.IdleTimeout closes the
// connections memcached 1.6.18's idle timeout closes: a TCP connection
// whose last command is older than that, waiting for the next one (with
// part of its line or binary header, or none); not one in the middle of
// a value or of discarding a refused one, nor one whose replies are not
// all sent, nor a unix socket's. A loop looks every 100 ms. A panic while serving a connection is logged
// and closes only that connection (in a loop, a panic in the shared
// Cache.Do closes the round's connections). Shutdown stops accepting,
// lets running rounds finish and write their replies within
// Config.ShutdownGrace, and closes the connections, those of clients that
// do not read included.
//
// # Differences from memcached 1.6.18
//
//   - Every meta flag of 1.6.18 is supported, the win token (mg N, R; W, Z)
//     and stale items (md I, ms I; X) included: items carry memcached's
//     marks (kv.ItemMeta). mg N runs an add of an empty item before the
//     get, so mg with both T and N, N after T, on a missing key gives the
//     created item T's TTL (memcached gives it N's).
//   - ma with both N and T where N comes after T gives a created item T's
//     TTL (memcached gives it N's); kv.Op has one expiry field.
//   - memcached drops all not yet sent replies of a connection when a get
//     has a key over 250 bytes, and on closing for a bad line or magic;
//     which ones are unsent depends on its read timing. warpkv drops only
//     the get's own VALUE lines, and writes all earlier replies before
//     closing.
//   - A value parse waiting for data does not hold back the replies before
//     it (memcached sends them once the value is complete).
//   - A binary request of an unknown opcode with a body over 16 KiB (the
//     read buffer) is answered before memcached's bodylen bytes past its
//     extras and key are read and thrown away (memcached answers once
//     they are); one with a shorter body is answered, as memcached's,
//     only once they have come.
//   - slabs reassign, slabs automove, cache_memlimit, stats cachedump and
//     lru_crawler metadump work through the cache's kv.Admin (ERROR
//     without one); metadump's lines come in slab order (memcached's in
//     its LRUs' or hash table's) and the whole dump is held in the reply
//     buffer (about 100 bytes an item; memcached streams it); lru, the
//     other lru_crawler commands, watch and extstore answer ERROR;
//     shutdown answers as memcached with the shutdown command disabled. "stats detail" only
//     validates its arguments; "stats reset" resets the connection counts.
//   - The version command answers Config.Version (memcached's 1.6.18 by
//     default); the embedding server's own version goes in Config.Stats.
//   - The t flag and me's la and exp use the cache's clock (kv.TTL), so an
//     item touched with a negative TTL shows 0 where memcached shows a
//     wrapped unsigned number.
//   - memcached has no limit on a multi-get line; warpkv's is
//     Config.MaxGetLine.
package protocol
