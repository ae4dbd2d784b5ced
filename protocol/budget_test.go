package protocol

import (
	"testing"
	"time"
)

// TestGiveBackTooSoonIsScheduled checks that a hand-back of memory asked
// for within giveBackEvery of the last one is done once the interval has
// passed, not dropped: the last drain of held replies must return its
// memory too (a 16-core run kept 21 MB after the clients closed).
func TestGiveBackTooSoonIsScheduled(t *testing.T) {
	var s Server
	s.giveBack()
	first := s.gaveBack.Load()
	if first == 0 {
		t.Fatal("the first hand-back did not run")
	}
	s.giveBack()
	s.giveBack()
	if !s.backLater.Load() {
		t.Fatal("a hand-back too soon after the last was dropped, not scheduled")
	}
	deadline := time.Now().Add(giveBackEvery + 3*time.Second)
	for s.gaveBack.Load() == first && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if s.gaveBack.Load() == first {
		t.Fatalf("no hand-back within %v of the scheduled one", giveBackEvery+3*time.Second)
	}
	if s.backLater.Load() {
		t.Fatal("the schedule flag stayed set after the hand-back ran")
	}
}
