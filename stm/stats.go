package stm

import (
	"fmt"
	"strings"
)

// Cause is why a transaction attempt aborted.
type Cause int

// The abort causes.
const (
	// ReadWrite: an item the transaction read was written by a transaction
	// that committed after its snapshot.
	ReadWrite Cause = iota
	// WriteWrite: an item the transaction wrote (without reading it) was
	// written by a transaction that committed after its snapshot.
	WriteWrite
	// LogFull: the commit log no longer holds every commit since the
	// transaction's first validation (or holds one whose write set was
	// too large to list), so a final check made after its entries were
	// logged cannot be completed: a spurious abort. Checks made in the
	// server's turn validate again instead (Config.LogSize).
	LogFull
	// SnapshotTooOld: an item no longer keeps a version as old as the
	// transaction's snapshot.
	SnapshotTooOld
	// NumCauses is the number of causes.
	NumCauses
)

var causeNames = [NumCauses]string{"read-write", "write-write", "log full", "snapshot too old"}

// String names the cause as the command line prints it, e.g. "read-write".
func (c Cause) String() string {
	if c >= 0 && c < NumCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// Stats counts what a store or a run did.
type Stats struct {
	Commits         uint64            // committed update transactions
	ReadOnlyCommits uint64            // committed read-only transactions
	Aborts          [NumCauses]uint64 // aborted attempts by cause
}

// Total returns all commits, update and read-only.
func (s Stats) Total() uint64 { return s.Commits + s.ReadOnlyCommits }

// TotalAborts returns the aborts of every cause.
func (s Stats) TotalAborts() uint64 {
	var n uint64
	for _, a := range s.Aborts {
		n += a
	}
	return n
}

// AbortRate is aborts over attempts (aborts + commits), 0 without attempts.
func (s Stats) AbortRate() float64 {
	a := s.TotalAborts()
	if a+s.Total() == 0 {
		return 0
	}
	return float64(a) / float64(a+s.Total())
}

// Sub returns s - o, counter by counter.
func (s Stats) Sub(o Stats) Stats {
	s.Commits -= o.Commits
	s.ReadOnlyCommits -= o.ReadOnlyCommits
	for i := range s.Aborts {
		s.Aborts[i] -= o.Aborts[i]
	}
	return s
}

// AbortString lists the aborts by cause, e.g.
// "12 (read-write 10, write-write 1, log full 0, snapshot too old 1)".
func (s Stats) AbortString() string {
	parts := make([]string, NumCauses)
	for c := range NumCauses {
		parts[c] = fmt.Sprintf("%s %d", c, s.Aborts[c])
	}
	return fmt.Sprintf("%d (%s)", s.TotalAborts(), strings.Join(parts, ", "))
}
