package protocol

import "time"

// Stage is a part of serving a connection's round of requests, timed when
// Config.Stages is set.
type Stage uint8

// Stages of a round, in order.
const (
	StageRead   Stage = iota // waiting for and reading request bytes (includes idle time)
	StageParse               // parsing the round's requests into a batch
	StageCache               // the cache's Do on the batch
	StageRender              // rendering the replies
	StageWrite               // writing the replies to the socket
	NumStages
)

var stageNames = [NumStages]string{"read", "parse", "cache", "render", "write"}

// String names the stage: read, parse, cache, render or write.
func (s Stage) String() string {
	if s < NumStages {
		return stageNames[s]
	}
	return "unknown"
}

// StageClock receives the time a connection spent in each stage of its
// rounds (ops: the batch's ops for StageCache, else 0). It is called from
// every connection goroutine and must be safe for concurrent use.
type StageClock interface {
	AddStage(s Stage, d time.Duration, ops int)
}

// stageTimer times a connection's stages when its clock is set: each lap
// charges the time since the previous one to a stage. Cost when off: a nil
// check per lap.
type stageTimer struct {
	clock StageClock
	t     time.Time
}

// start begins timing.
func (s *stageTimer) start() {
	if s.clock != nil {
		s.t = time.Now()
	}
}

// lap charges the time since the last lap to st.
func (s *stageTimer) lap(st Stage, ops int) {
	if s.clock != nil {
		now := time.Now()
		s.clock.AddStage(st, now.Sub(s.t), ops)
		s.t = now
	}
}
