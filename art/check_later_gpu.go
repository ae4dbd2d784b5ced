package art

import (
	"errors"
	"fmt"
)

// An insert's check of a large batch of keys of one length runs on the
// device's time. The check reads every offset (40 MB for 10M keys, about
// 1.5 ms on the H200 host, most of it memory bandwidth that the packing of
// the keys also needs), and before the engine's clock it held up the whole
// call. When the batch's ends say its keys all have one length
// (oneLengthEnds, checkLater: O(1)), the facade leaves the check to the
// GPU engine, which uploads the keys as one length (as_offsets writes the
// offsets on the device, reading no host offset), makes the check's pass
// on other goroutines once the sort is done, while the host waits for the
// device's classify, grouping and build rounds (startCheck; started at the
// call's start instead, beside the packing of the keys, it measured
// slower: ains9), and waits for it before the first write the tree's old
// records see (the node round, and the values of present keys: checked).
// Until then a failure leaves the tree unchanged (insertOnce restores the
// allocation counters), so a bad batch fails with the error the facade's
// check gives (a badBatch, unwrapped by the facade) and changes nothing; a
// good batch that is not of one length after all (only its ends and middle
// were) runs once more with its offsets uploaded.

// errNotOneLength is the deferred check's finding that a good batch's keys
// are not all of the length its ends gave: insert runs it again.
var errNotOneLength = errors.New("art: the batch's keys are not all of one length")

// badBatch is the deferred check's error for a batch the facade's check
// would have refused: err is that check's error, which the facade returns
// as it is.
type badBatch struct{ err error }

func (b badBatch) Error() string { return b.err.Error() }
func (b badBatch) Unwrap() error { return b.err }

// laterCheck is a deferred check of a batch's offsets running on its own
// goroutine: sc is set before done is closed.
type laterCheck struct {
	kb   Keys
	op   string
	done chan struct{}
	sc   offsetsScan
}

// oneLengthEnds reports whether kb's ends say that its keys all have one
// length, and the length: n values, offsets that start at 0 and are l,
// n/2*l and n*l at its first key's end, at its middle (where the upload
// cuts a batch in parts) and at its end, within Data, l at most MaxKeyLen,
// and no more than 4 GiB of keys. Cost: O(1).
func oneLengthEnds(kb Keys, nvals int) (uint32, bool) {
	n := kb.Len()
	if n < 2 || nvals != n || kb.isLong() {
		return 0, false
	}
	o := kb.Offs
	l := o[1] - o[0]
	return l, o[0] == 0 && l <= MaxKeyLen && uint64(o[n/2]) == uint64(n/2)*uint64(l) &&
		uint64(o[n]) == uint64(n)*uint64(l) && int(o[n]) <= len(kb.Data)
}

// checkLater reports whether the facade may leave the check of kb, whose
// ends say it has keys of one length (oneLengthEnds), to g: on unless
// turned off (deferCheck), for a batch uploaded in parts. Under the
// facade's lock. Cost: O(1).
func (g *gpuEngine) checkLater(kb Keys) bool {
	return g.deferCheck && len(g.bu.keyParts(kb.Len())) == 3
}

// startCheck starts the deferred check of kb on another goroutine when the
// facade left it to the engine (its hint says so) and it has not started.
// Cost: O(1) here; the pass runs beside the caller.
func (g *gpuEngine) startCheck(kb Keys, op string) {
	if !g.hint.later || g.later != nil {
		return
	}
	c := &laterCheck{kb: kb, op: op, done: make(chan struct{})}
	g.later = c
	go func() {
		defer close(c.done)
		c.sc = scanOffsets(kb.Offs, 0)
	}()
	g.step("check started")
}

// checked waits for the deferred check, if one runs, and returns what it
// found: nil for a batch of one length, a badBatch, or errNotOneLength.
// Cost: the wait for the pass (usually done by then).
func (g *gpuEngine) checked() error {
	c := g.later
	if c == nil {
		return nil
	}
	<-c.done
	switch {
	case !c.sc.ok:
		err := c.kb.firstBad(c.op)
		if err == nil { // offsets wrapped past 4 GiB cannot be here (checkLater)
			err = fmt.Errorf("art: %s: a key's offsets decrease or it is over %d bytes", c.op, MaxKeyLen)
		}
		return badBatch{err}
	case !c.sc.one || c.sc.l != g.hint.l:
		return errNotOneLength
	}
	g.step("checked")
	return nil
}

// endCheck waits for the deferred check's goroutine, if one ran, and
// forgets it: the batch is the caller's again. Cost: the wait.
func (g *gpuEngine) endCheck() {
	if c := g.later; c != nil {
		<-c.done
		g.later = nil
	}
}
