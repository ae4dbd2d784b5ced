package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// TestSplitsKeepEachHalfsOrder has goroutines keep two split batches in
// flight each, as event loops with RoundOverlap do (start one, start the
// other, finish both), on every engine: each half reads the value its
// previous batch wrote and its own write within the batch, and on the
// engines whose searches are batched the splits do pause at their search.
func TestSplitsKeepEachHalfsOrder(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{searchDelay: 20 * time.Microsecond})
			loops := min(max(eng.SplitLoops(), 2), 8)
			var wg sync.WaitGroup
			for g := range loops {
				wg.Go(func() {
					sp := [2]protocol.Split{eng.NewSplit(), eng.NewSplit()}
					defer sp[0].Close()
					defer sp[1].Close()
					var bs [2]kv.Batch
					val := func(h, i int) []byte { return fmt.Appendf(nil, "value %d/%d/%d", g, h, i) }
					key := func(h, i int) []byte { return fmt.Appendf(nil, "g%d:h%d:k%d", g, h, i%13) }
					for i := range 150 {
						for h := range 2 {
							bs[h].Reset()
							bs[h].Add(kv.Op{Kind: kv.Get, Key: key(h, i+12)})
							bs[h].Add(kv.Op{Kind: kv.Set, Key: key(h, i), Value: val(h, i)})
							bs[h].Add(kv.Op{Kind: kv.Get, Key: key(h, i)})
							sp[h].Start(&bs[h])
						}
						for h := range 2 {
							if err := sp[h].Finish(); err != nil {
								t.Errorf("goroutine %d batch %d half %d: %v", g, i, h, err)
								return
							}
							ops := bs[h].Ops
							if i > 0 && (ops[0].Result.Status != kv.Hit || !bytes.Equal(ops[0].Result.Value, val(h, i-1))) {
								t.Errorf("goroutine %d batch %d half %d: previous batch's write read as %s %q, want %q",
									g, i, h, ops[0].Result.Status, ops[0].Result.Value, val(h, i-1))
								return
							}
							if ops[1].Result.Status != kv.Stored || ops[2].Result.Status != kv.Hit || !bytes.Equal(ops[2].Result.Value, val(h, i)) {
								t.Errorf("goroutine %d batch %d half %d: set %s, get %s %q, want %q",
									g, i, h, ops[1].Result.Status, ops[2].Result.Status, ops[2].Result.Value, val(h, i))
								return
							}
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestSplitPausesOnlyWhileABatchRuns: a split Do whose search finds the
// shard idle launches its batch itself and runs to its end in Start; one
// that finds a batch running (the shard's role held) pauses there, and
// Finish completes it once the running batch is done.
func TestSplitPausesOnlyWhileABatchRuns(t *testing.T) {
	eng := newTestEngine(t, engineCase{"cpu-batched", "cpu", 0, "", CPUSearchBatched, ""}, Options{})
	do(t, eng, kv.Op{Kind: kv.Set, Key: []byte("k"), Value: []byte("v")})
	sp := eng.NewSplit()
	defer sp.Close()
	get := func() *kv.Batch {
		var b kv.Batch
		b.Add(kv.Op{Kind: kv.Get, Key: []byte("k")})
		return &b
	}
	check := func(b *kv.Batch) {
		t.Helper()
		if err := sp.Finish(); err != nil || b.Ops[0].Result.Status != kv.Hit || string(b.Ops[0].Result.Value) != "v" {
			t.Fatalf("get: %v, %s %q", err, b.Ops[0].Result.Status, b.Ops[0].Result.Value)
		}
	}
	if !eng.quiesce() { // the set is in the index: the get searches
		t.Fatal("engine not quiet")
	}
	b := get()
	sp.Start(b)
	if sp.(*splitDo).paused {
		t.Error("paused with the shard idle")
	}
	check(b)
	sh := eng.shards[0]
	sh.role.Lock() // a batch runs
	b = get()
	sp.Start(b)
	paused, ready := sp.(*splitDo).paused, sp.(*splitDo).Ready()
	sh.role.Unlock()
	if ready {
		t.Error("ready before its batch ran")
	}
	if !paused {
		t.Error("did not pause with a batch running")
	}
	check(b)
}

// TestSplitsStopWhenTheEngineCloses: a split started before Close
// finishes; one started after fails with the engine closed.
func TestSplitsStopWhenTheEngineCloses(t *testing.T) {
	eng := newTestEngine(t, engineCase{"cpu-batched", "cpu", 0, "", CPUSearchBatched, ""}, Options{})
	sp := eng.NewSplit()
	defer sp.Close()
	var b kv.Batch
	b.Add(kv.Op{Kind: kv.Get, Key: []byte("k")})
	sp.Start(&b)
	closed := make(chan error, 1)
	go func() { closed <- eng.Close() }()
	if err := sp.Finish(); err != nil || b.Ops[0].Result.Status != kv.Miss {
		t.Fatalf("split before Close: %v, %s", err, b.Ops[0].Result.Status)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Add(kv.Op{Kind: kv.Get, Key: []byte("k")})
	sp.Start(&b)
	if err := sp.Finish(); err == nil {
		t.Fatal("split after Close: no error")
	}
}

// TestServeWithRoundOverlap serves the client library's scenarios and
// many pipelining connections with RoundOverlap on every engine (batched
// CPU searches taking 20 µs a call, as a GPU's): each connection reads its
// own writes, in order.
func TestServeWithRoundOverlap(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			opts := Options{CPUSearch: ec.cpu, SearchLaunch: ec.launch, searchDelay: 20 * time.Microsecond}
			addr := startServerConfig(t, ec, Config{Engine: opts, Loops: 2, RoundOverlap: RoundOverlapOn})
			difftest.ClientSuite(t, addr)
			var wg sync.WaitGroup
			for c := range 16 {
				wg.Go(func() { pipelineOwnKeys(t, addr, c) })
			}
			wg.Wait()
		})
	}
}

// pipelineOwnKeys sends rounds of 8 sets and gets of its own keys in one
// write and checks every reply.
func pipelineOwnKeys(t *testing.T, addr string, c int) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	for round := range 40 {
		var req, want bytes.Buffer
		for i := range 8 {
			k := fmt.Sprintf("c%d:%d", c, i)
			v := fmt.Sprintf("v%d.%d", round, i)
			fmt.Fprintf(&req, "set %s 0 0 %d\r\n%s\r\nget %s\r\n", k, len(v), v, k)
			fmt.Fprintf(&want, "STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n", k, len(v), v)
		}
		if _, err := nc.Write(req.Bytes()); err != nil {
			t.Error(err)
			return
		}
		got := make([]byte, want.Len())
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("connection %d round %d: got %q (%v), want %q", c, round, got, err, want.Bytes())
			return
		}
	}
}
