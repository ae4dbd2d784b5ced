package server

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoSpace is a searchSpace whose search writes a function of each hash,
// so a test can tell whose result a waiter got.
type echoSpace struct {
	hashes []uint64
	out    []uint32
	delay  time.Duration
}

func (s *echoSpace) Hashes() []uint64 { return s.hashes }
func (s *echoSpace) Out() []uint32    { return s.out }
func (s *echoSpace) Cap() int         { return len(s.hashes) }
func (s *echoSpace) Free() error      { return nil }
func (s *echoSpace) Search(n int) error {
	for i, h := range s.hashes[:n] {
		s.out[i] = echo(h)
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	return nil
}

func echo(h uint64) uint32 { return uint32(h*0x9E3779B97F4A7C15>>32) | 1 }

// TestSearchQueueDeliversEachRequestItsOwnResults has many goroutines post
// searches of random sizes into a shard with small batch buffers (so that
// batches fill, close and are reused while waiters still read) and checks
// that every result is the one of the request's own hashes.
func TestSearchQueueDeliversEachRequestItsOwnResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cap     int
		delay   time.Duration
		launch  string
		batches int
	}{
		{"small batches", 64, 0, SearchLaunchScheduler, 0},
		{"slow calls", 1024, 50 * time.Microsecond, SearchLaunchScheduler, 0},
		{"callers, small batches", 64, 0, SearchLaunchCallers, 0},
		{"concurrent, small batches", 64, 0, SearchLaunchConcurrent, concurrentBatches},
		{"concurrent, slow calls", 1024, 50 * time.Microsecond, SearchLaunchConcurrent, concurrentBatches},
		{"concurrent, few buffers", 64, 20 * time.Microsecond, SearchLaunchConcurrent, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newSpace := func() (searchSpace, error) {
				return &echoSpace{hashes: make([]uint64, tc.cap), out: make([]uint32, tc.cap), delay: tc.delay}, nil
			}
			s, err := newShard(nil, false, 0, tc.cap, newSpace, shardHooks{searchLat: new(latencyHist), updateLat: new(latencyHist), searchSize: new(latencyHist),
				unlink: func([]pendingUnlink) {}, complete: func(*updateList) {},
				launch: tc.launch, batches: tc.batches})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			var bad atomic.Int64
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), 11))
					wake := make(chan struct{}, 1)
					var held []ticket
					for range 2000 {
						n := 1 + r.IntN(tc.cap/4)
						hs := make([]uint64, n)
						for i := range hs {
							hs[i] = r.Uint64()
						}
						out := make([]uint32, n)
						if err := s.search(hs, out, wake, &held); err != nil {
							t.Error(err)
							return
						}
						for i := range hs {
							if out[i] != echo(hs[i]) {
								bad.Add(1)
							}
						}
						for _, tk := range held {
							tk.done()
						}
						held = held[:0]
					}
				})
			}
			wg.Wait()
			if n := bad.Load(); n > 0 {
				t.Fatalf("%d results belonged to other requests", n)
			}
		})
	}
}
