package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// The floor server ("warpkv bench floor") is a reference for "bench
// serve": the least a memcached-protocol server can do per request in the
// design memcached and warpkv share (event loops, one read and one write
// per connection per round). It answers the text protocol's get and set
// with no index and no item memory: a get replies with the last value set
// on any of its loops, a set keeps its value and replies STORED. Its throughput
// under a load tool is the ceiling that tool and the kernel's TCP path
// leave any real server on the same cores; it stores nothing, so it is a
// measuring stick, never a cache.

// runBenchFloor is "warpkv bench floor": it serves until killed.
func runBenchFloor(e *env, args []string) error {
	fs := newFlagSet(e, "bench floor", "warpkv bench floor [-l ADDR] [-p PORT] [-t N]: a reference server for bench serve that answers get and set with no index and no items (the floor of one read and one write a request); it stores nothing")
	host := fs.String("l", "127.0.0.1", "IPv4 `ADDR` to listen on")
	port := fs.Int("p", 11211, "TCP `PORT` to listen on")
	threads := fs.Int("t", 4, "event loops, each with its own listener on the port (SO_REUSEPORT)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *port < 1 || *port > 65535 {
		return usagef("-p %d: want a port from 1 to 65535", *port)
	}
	if *threads < 1 || *threads > 1024 {
		return usagef("-t %d: want 1 to 1024 loops", *threads)
	}
	return serveFloor(*host, *port, *threads)
}

// floorMaxValue is the largest value a floor set accepts (memcached's
// default item size limit).
const floorMaxValue = 1 << 20

// floorValue is the value every floor get answers with: the last one set
// on any loop, shared by the loops of one server (nil: none, after a
// flush_all or before the first set).
type floorValue struct{ p atomic.Pointer[[]byte] }

// floorState is what one floor loop keeps: the server's shared value.
type floorState struct {
	shared *floorValue
}

// set makes v the value gets answer with; an unchanged value (the load
// tools set one value everywhere) costs a comparison, not a copy.
func (st *floorState) set(v []byte) {
	if cur := st.shared.p.Load(); cur != nil && bytes.Equal(*cur, v) {
		return
	}
	c := bytes.Clone(v)
	st.shared.p.Store(&c)
}

// floorServe answers every complete request at the front of in, appending
// the replies to out. It returns how many bytes of in it consumed, the
// extended out, and whether the client asked to quit (or sent a request
// the floor server cannot frame, after which the connection is closed).
// Cost: one pass over the consumed bytes, plus a copy of each set's value.
func floorServe(st *floorState, in, out []byte) (consumed int, _ []byte, quit bool) {
	for consumed < len(in) {
		rest := in[consumed:]
		eol := bytes.IndexByte(rest, '\n')
		if eol < 0 {
			if len(rest) > 2048 {
				return consumed, append(out, "CLIENT_ERROR line too long\r\n"...), true
			}
			return consumed, out, false
		}
		line := rest[:eol]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		cmd, args, _ := bytes.Cut(line, []byte{' '})
		switch string(cmd) {
		case "get", "gets":
			value := st.shared.p.Load()
			for len(args) > 0 {
				var key []byte
				key, args, _ = bytes.Cut(args, []byte{' '})
				if len(key) == 0 || value == nil {
					continue
				}
				out = append(out, "VALUE "...)
				out = append(out, key...)
				out = append(out, " 0 "...)
				out = strconv.AppendInt(out, int64(len(*value)), 10)
				out = append(out, "\r\n"...)
				out = append(out, *value...)
				out = append(out, "\r\n"...)
			}
			out = append(out, "END\r\n"...)
		case "set", "add", "replace", "append", "prepend":
			n, noreply, err := floorSetLength(args)
			if err != nil {
				return consumed, append(out, fmt.Sprintf("CLIENT_ERROR %v\r\n", err)...), true
			}
			need := eol + 1 + n + 2
			if len(rest) < need {
				return consumed, out, false // the value is still on its way
			}
			st.set(rest[eol+1 : eol+1+n])
			if !noreply {
				out = append(out, "STORED\r\n"...)
			}
			consumed += need
			continue
		case "flush_all":
			st.shared.p.Store(nil)
			out = append(out, "OK\r\n"...)
		case "version":
			out = append(out, "VERSION warpkv-floor\r\n"...)
		case "stats":
			out = append(out, "END\r\n"...)
		case "quit":
			return consumed + eol + 1, out, true
		default:
			out = append(out, "ERROR\r\n"...)
		}
		consumed += eol + 1
	}
	return consumed, out, false
}

// floorSetLength parses a storage command's "key flags exptime bytes
// [noreply]" arguments for the value's length.
func floorSetLength(args []byte) (n int, noreply bool, err error) {
	var f [6][]byte
	k, orig := 0, args
	for len(args) > 0 && k < len(f) {
		var w []byte
		w, args, _ = bytes.Cut(args, []byte{' '})
		if len(w) > 0 {
			f[k] = w
			k++
		}
	}
	if k < 4 || k > 5 {
		return 0, false, fmt.Errorf("bad storage command: %q", orig)
	}
	n, err = strconv.Atoi(string(f[3]))
	if err != nil || n < 0 || n > floorMaxValue {
		return 0, false, fmt.Errorf("bad data chunk length %q", f[3])
	}
	return n, k == 5 && string(f[4]) == "noreply", nil
}
