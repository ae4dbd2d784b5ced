package protocol

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// Connection states, as memcached's "stats conns" names them.
const (
	stateParse   int32 = iota // conn_parse_cmd: parsing and running requests
	stateWaiting              // conn_waiting: waiting for a new request
	stateNRead                // conn_nread: waiting for the rest of a value
	stateSwallow              // conn_swallow: discarding a refused value
	stateWrite                // conn_mwrite: writing replies
)

var stateNames = [...]string{"conn_parse_cmd", "conn_waiting", "conn_nread", "conn_swallow", "conn_mwrite"}

// listenerInfo is what "stats conns" reports of a listening socket.
type listenerInfo struct {
	id    int64 // file descriptor, or -1
	addr  string
	since time.Time
}

func newListenerInfo(ln net.Listener) listenerInfo {
	return listenerInfo{id: fdOf(ln), addr: netAddr(ln.Addr()), since: time.Now()}
}

// fdOf returns the file descriptor of a socket, or -1 for one without
// (net.Pipe). Cost: one SyscallConn call, no system call.
func fdOf(x any) int64 {
	sc, ok := x.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := int64(-1)
	raw.Control(func(f uintptr) { fd = int64(f) })
	return fd
}

// netAddr formats an address as memcached does: "tcp:127.0.0.1:11211".
func netAddr(a net.Addr) string {
	if a == nil {
		return "unknown"
	}
	return strings.ToLower(a.Network()) + ":" + a.String()
}

// connStats lists the listening sockets and open connections as memcached's
// "stats conns": for each, by file descriptor, its address, the listening
// address it came through, its state and the seconds since its last
// command. Connections without a descriptor get ids past the largest one.
// Cost: the server lock and a line per connection.
func (s *Server) connStats() []kv.Stat {
	type entry struct {
		id                  int64
		addr, listen, state string
		since               time.Time
	}
	now := time.Now()
	s.mu.Lock()
	var list []entry
	listen := ""
	for _, li := range s.listeners {
		list = append(list, entry{id: li.id, addr: li.addr, state: "conn_listening", since: li.since})
		listen = li.addr
	}
	for c := range s.conns {
		list = append(list, entry{id: c.id, addr: c.peer, listen: listen,
			state: stateNames[c.state.Load()], since: time.Unix(0, c.lastCmd.Load())})
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b entry) int { return int(a.id - b.id) })
	var out []kv.Stat
	for _, e := range list {
		p := strconv.FormatInt(e.id, 10) + ":"
		out = append(out, kv.Stat{Name: p + "addr", Value: e.addr})
		if e.listen != "" {
			out = append(out, kv.Stat{Name: p + "listen_addr", Value: e.listen})
		}
		out = append(out,
			kv.Stat{Name: p + "state", Value: e.state},
			kv.Stat{Name: p + "secs_since_last_cmd", Value: strconv.FormatInt(int64(now.Sub(e.since)/time.Second), 10)})
	}
	return out
}
