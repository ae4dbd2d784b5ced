package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// The slab shift of issue 16: a cache filled with one item size, then
// written with other sizes. memcached 1.6 gives a class without pages its
// first page past the memory limit and moves pages between classes
// (slab_reassign, slab_automove); warpkv must store and hit at least as
// well.

// shiftCase is one shift: the memory limit, the small values loaded first,
// the wait before the new sizes, the new sizes and how many of each, and
// the pause before they are written a second time.
type shiftCase struct {
	memMB  int
	small  int // 100-byte values loaded first
	settle time.Duration
	sizes  []shiftSize
	again  time.Duration
}

type shiftSize struct{ n, size int }

// shiftResult is what one pass of a size gave.
type shiftResult struct {
	stored, hits int
}

// runShift loads the small values, then for each size sets n values
// (counting STORED) and gets them back (counting hits), twice (again
// apart); it returns the counts of both passes, size by size.
func runShift(t *testing.T, addr string, sc shiftCase) (first, second []shiftResult) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Minute))
	r := bufio.NewReaderSize(nc, 1<<20)
	w := bufio.NewWriterSize(nc, 1<<20)
	small := strings.Repeat("s", 100)
	for i := range sc.small {
		fmt.Fprintf(w, "set small%d 0 0 100 noreply\r\n%s\r\n", i, small)
	}
	w.WriteString("version\r\n")
	w.Flush()
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "VERSION") {
		t.Fatalf("after the load: %q %v", l, err)
	}
	time.Sleep(sc.settle)
	pass := func() []shiftResult {
		var out []shiftResult
		for _, sz := range sc.sizes {
			v := strings.Repeat("v", sz.size)
			var res shiftResult
			for i := range sz.n {
				fmt.Fprintf(w, "set big%d_%d 0 0 %d\r\n%s\r\n", sz.size, i, sz.size, v)
				w.Flush()
				l, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				switch l {
				case "STORED\r\n":
					res.stored++
				case "SERVER_ERROR out of memory storing object\r\n":
				default:
					t.Fatalf("set of %d bytes: %q", sz.size, l)
				}
			}
			for i := range sz.n {
				fmt.Fprintf(w, "get big%d_%d\r\n", sz.size, i)
				w.Flush()
				l, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if l == "END\r\n" {
					continue
				}
				if _, err := io.CopyN(io.Discard, r, int64(sz.size+2)); err != nil {
					t.Fatal(err)
				}
				if l, _ := r.ReadString('\n'); l != "END\r\n" {
					t.Fatalf("get: %q after the value", l)
				}
				res.hits++
			}
			out = append(out, res)
		}
		return out
	}
	first = pass()
	time.Sleep(sc.again)
	second = pass()
	return first, second
}

// TestSlabShift runs a scaled-down shift (32 MB, 400,000 small values, then
// 2,000 1 KB, 100 50 KB and 10 300 KB values) on the binary and on
// memcached 1.6 with its default automove: warpkv must store every value
// and hit at least as many as memcached, at once and on the second pass.
// WARPKV_SHIFT_FULL=1 runs the full case instead (-m 64, 2,000,000
// small values, 200 50 KB and 20 300 KB values, a minute apart) and logs
// both servers' counts.
func TestSlabShift(t *testing.T) {
	sc := shiftCase{memMB: 32, small: 400_000, settle: 2500 * time.Millisecond,
		sizes: []shiftSize{{2000, 1 << 10}, {100, 50 << 10}, {10, 300 << 10}}, again: time.Second}
	if os.Getenv("WARPKV_SHIFT_FULL") == "1" {
		sc = shiftCase{memMB: 64, small: 2_000_000, settle: 2500 * time.Millisecond,
			sizes: []shiftSize{{2000, 1 << 10}, {200, 50 << 10}, {20, 300 << 10}}, again: time.Minute}
	}
	p := difftest.Serve(t, "-m", fmt.Sprint(sc.memMB))
	w1, w2 := runShift(t, p.Addr, sc)
	var m1, m2 []shiftResult
	if difftest.OwnMemcached() {
		mc := difftest.Memcached(t, "-m", fmt.Sprint(sc.memMB), "-t", "4", "-o", "lru_maintainer,lru_crawler")
		m1, m2 = runShift(t, mc, sc)
	}
	for i, sz := range sc.sizes {
		t.Logf("%d values of %d bytes: warpkv stored %d, hit %d (again: %d, %d)", sz.n, sz.size, w1[i].stored, w1[i].hits, w2[i].stored, w2[i].hits)
		if m1 != nil {
			t.Logf("%d values of %d bytes: memcached stored %d, hit %d (again: %d, %d)", sz.n, sz.size, m1[i].stored, m1[i].hits, m2[i].stored, m2[i].hits)
		}
		for pass, w := range []shiftResult{w1[i], w2[i]} {
			if w.stored != sz.n || w.hits != sz.n {
				t.Errorf("pass %d, %d values of %d bytes: warpkv stored %d, hit %d; want all", pass+1, sz.n, sz.size, w.stored, w.hits)
			}
		}
		if m1 != nil && (w1[i].hits < m1[i].hits || w2[i].hits < m2[i].hits) {
			t.Errorf("%d values of %d bytes: warpkv hit %d then %d, memcached %d then %d", sz.n, sz.size, w1[i].hits, w2[i].hits, m1[i].hits, m2[i].hits)
		}
	}
	st := difftest.NewTextClient(t, p.Addr).Stats("")
	t.Logf("warpkv: slabs_moved %s, slab_reassign_evictions_nomem %s, evictions %s", st["slabs_moved"], st["slab_reassign_evictions_nomem"], st["evictions"])
}

// TestFlushThenShift fills a 16 MB cache with small values, flushes it,
// then runs a 1 KB workload of 8 MB of keys: once the flushed items' pages
// move to the 1 KB class, every key hits (the issue measured 7% before
// slab rebalancing, memcached 100%).
func TestFlushThenShift(t *testing.T) {
	p := difftest.Serve(t, "-m", "16")
	c := difftest.NewTextClient(t, p.Addr)
	small := strings.Repeat("s", 100)
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "set small%d 0 0 100 noreply\r\n%s\r\n", i, small)
	}
	c.Send(b.String())
	if got := c.Do("flush_all\r\n"); got != "OK" {
		t.Fatalf("flush_all: %q", got)
	}
	time.Sleep(2500 * time.Millisecond)
	v := strings.Repeat("v", 1024)
	const keys = 8000
	hits := 0
	for round := range 3 {
		hits = 0
		for i := range keys {
			if got := c.Set(fmt.Sprint("k", i), v); got != "STORED" {
				t.Fatalf("round %d set %d: %q", round, i, got)
			}
		}
		for i := range keys {
			if _, ok := c.Get(fmt.Sprint("k", i)); ok {
				hits++
			}
		}
		st := c.Stats("")
		t.Logf("round %d: %d of %d 1 KB keys hit (evictions %s, curr_items %s, slabs_moved %s, index_entries %s of %s, index_drops %s, pending_entries %s, pending_full_waits %s)",
			round, hits, keys, st["evictions"], st["curr_items"], st["slabs_moved"], st["index_entries"], st["index_capacity"],
			st["index_drops"], st["pending_entries"], st["pending_full_waits"])
	}
	if hits != keys {
		t.Errorf("after three rounds %d of %d keys hit", hits, keys)
	}
}
