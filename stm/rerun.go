package stm

import "fmt"

// RerunMode is how the GPU engine's servers run conflicting update
// attempts again in their log turn (Options.Rerun).
type RerunMode int

const (
	// RerunOff sends a conflicting attempt back to its client, which runs
	// it again from a new snapshot (the default).
	RerunOff RerunMode = iota
	// RerunClock re-runs it in the server once the commit clock has
	// passed every timestamp handed out, from that snapshot: one wait
	// for every commit in flight, whatever the items.
	RerunClock
	// RerunItems re-runs it at once: each item the re-run reads or writes
	// is read (and later written back) after its newest logged write is
	// done (the writer's done marker), which is the newest committed
	// state of the partition; the partition's commits are then logged
	// only after their final check (no phantom entries) and not grouped.
	RerunItems
)

// rerunNames are the modes as ParseRerun takes them.
var rerunNames = [...]string{"off", "clock", "items"}

// String names the mode as ParseRerun takes it, e.g. "items".
func (m RerunMode) String() string {
	if m >= 0 && int(m) < len(rerunNames) {
		return rerunNames[m]
	}
	return fmt.Sprintf("rerun(%d)", int(m))
}

// ParseRerun returns the mode named s: off, clock or items.
func ParseRerun(s string) (RerunMode, error) {
	for i, n := range rerunNames {
		if s == n {
			return RerunMode(i), nil
		}
	}
	return 0, fmt.Errorf("stm: rerun mode %q: want off, clock or items", s)
}
