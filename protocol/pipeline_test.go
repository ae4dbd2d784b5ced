package protocol

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// newCountingServer is a test server whose cache counts batches.
func newCountingServer(t testing.TB, cfg Config) (*testServer, *countingCache) {
	t.Helper()
	s := newTestServer(t, cfg)
	cc := &countingCache{Cache: s.model}
	s.Server = NewServer(cc, s.cfg)
	return s, cc
}

func TestPipelineRunsOneBatchPerRead(t *testing.T) {
	s, cc := newCountingServer(t, Config{})
	var req, want strings.Builder
	for i := range 60 {
		fmt.Fprintf(&req, "set k%d 0 0 1\r\n%d\r\n", i, i%10)
		want.WriteString("STORED\r\n")
	}
	req.WriteString("get k1 k2 nope\r\nversion\r\nbogus\r\nincr k3 1\r\nmg k4 v\r\n")
	want.WriteString("VALUE k1 0 1\r\n1\r\nVALUE k2 0 1\r\n2\r\nEND\r\nVERSION 1.6.18\r\nERROR\r\n4\r\nVA 1\r\n4\r\n")
	if got := textExchange(t, s.pipe(t), req.String()); got != want.String() {
		t.Fatalf("replies out of order:\n got %q\nwant %q", got, want.String())
	}
	if n := cc.batches.Load(); n != 1 {
		t.Errorf("%d cache batches for one pipelined write, want 1", n)
	}
	if n := cc.ops.Load(); n != 66 {
		t.Errorf("%d ops, want 66 (60 sets, 3 gets, incr, mg, the exchange's sentinel mg)", n)
	}
}

// The batch counts include the op of textExchange's sentinel mg.
func TestPipelineBatchBounds(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		req, want   string
		wantBatches int64
	}{
		{"requests per batch", Config{MaxBatch: 4},
			strings.Repeat("get a\r\n", 10), strings.Repeat("END\r\n", 10), 3},
		{"keys of a multi-get span batches", Config{MaxBatch: 4},
			"set a 0 0 1\r\nx\r\nget a b a b a b a b a b\r\n", "STORED\r\n" + strings.Repeat("VALUE a 0 1\r\nx\r\n", 5) + "END\r\n", 3},
		{"a multi-get chunk does not end the reply", Config{MaxBatch: 3},
			"get a b c d\r\nversion\r\n", "END\r\nVERSION 1.6.18\r\n", 2},
		{"a long key after the first chunk answers only the error", Config{MaxBatch: 3},
			"set a 0 0 1\r\nx\r\nget a a a a " + strings.Repeat("k", 251) + " a\r\nget a\r\n",
			"STORED\r\nCLIENT_ERROR bad command line format\r\nVALUE a 0 1\r\nx\r\nEND\r\n", 3},
		{"value bytes per batch", Config{MaxBatchBytes: 10},
			"set a 0 0 8\r\n12345678\r\nset b 0 0 8\r\n12345678\r\nset c 0 0 8\r\n12345678\r\n", strings.Repeat("STORED\r\n", 3), 2},
		{"stats ends its batch", Config{},
			"set a 0 0 1\r\nx\r\nstats detail on\r\nstats items\r\nset b 0 0 1\r\ny\r\n", "STORED\r\nOK\r\nEND\r\nSTORED\r\n", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, cc := newCountingServer(t, tc.cfg)
			if got := textExchange(t, s.pipe(t), tc.req); got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
			if n := cc.batches.Load(); n != tc.wantBatches {
				t.Errorf("%d batches, want %d", n, tc.wantBatches)
			}
		})
	}
}

func TestBinaryPipelineKeepsOrder(t *testing.T) {
	s, cc := newCountingServer(t, Config{})
	var reqs []binReq
	var want []binRes
	for i := range 50 {
		key := fmt.Sprint("k", i)
		reqs = append(reqs, bset(opSetQ, key, key, 0, 0, 0), bget(opGetKQ, key), bget(opGetQ, "nope"))
		want = append(want, bres(opGetKQ, stOK, flags0, key, key, uint64(i+1)))
	}
	reqs = append(reqs, binReq{op: opVersion, opaque: 7})
	want = append(want, bres(opVersion, stOK, "", "", "1.6.18", 0))
	checkBinary(t, binExchange(t, s.pipe(t), reqs...), want, false)
	if n := cc.batches.Load(); n != 1 {
		t.Errorf("%d batches, want 1", n)
	}
}

func TestConcurrentConnections(t *testing.T) {
	s := newTestServer(t, Config{})
	var wg sync.WaitGroup
	for c := range 8 {
		nc := s.pipe(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := fmt.Sprintf("c%d-%d", c, i)
				req := fmt.Sprintf("set %s 0 0 %d\r\n%s\r\nget %s\r\nincr n 1\r\n", key, len(key), key, key)
				got := textExchange(t, nc, req)
				want := fmt.Sprintf("STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(key), key)
				if !strings.HasPrefix(got, want) {
					t.Errorf("connection %d: got %q, want prefix %q", c, got, want)
					return
				}
			}
		}()
	}
	// n does not exist: every incr answers NOT_FOUND, and the counts add up.
	wg.Wait()
	if got := s.Stats().Commands["incr"]; got != 400 {
		t.Errorf("Commands[incr] = %d, want 400", got)
	}
	var b kv.Batch
	b.Add(kv.Op{Kind: kv.Get, Key: []byte("c7-49")})
	s.model.Do(&b)
	if b.Ops[0].Result.Status != kv.Hit {
		t.Errorf("c7-49 not stored: %v", b.Ops[0].Result.Status)
	}
}

func TestLargeHitsShrinkTheNextBatches(t *testing.T) {
	s, cc := newCountingServer(t, Config{MaxBatchBytes: 1 << 20})
	nc := s.pipe(t)
	value := strings.Repeat("v", 256<<10)
	textExchange(t, nc, "set big 0 0 262144\r\n"+value+"\r\n")
	gets := strings.Repeat("get big\r\n", 16)
	want := strings.Repeat("VALUE big 0 262144\r\n"+value+"\r\nEND\r\n", 16)
	for round := range 2 {
		before := cc.batches.Load()
		if got := textExchange(t, nc, gets); got != want {
			t.Fatalf("round %d: wrong replies (%d bytes, want %d)", round, len(got), len(want))
		}
		n := cc.batches.Load() - before
		switch {
		case round == 0 && n != 1:
			t.Errorf("first pipeline ran in %d batches, want 1", n)
		case round == 1 && n < 4:
			t.Errorf("after 4 MiB of hits, 4 MiB more ran in %d batches, want at least 4 of about 1 MiB", n)
		}
	}
}
