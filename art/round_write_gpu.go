package art

import "fmt"

// nodeWrite are the knobs of a node round's U3 write (an_write): the zero
// value is the default, each N4's and N16's old children staged in shared
// memory before the merge.
type nodeWrite struct {
	// local runs an_write_local instead: every old child read from the
	// record when the merge reaches it, and an N4 or N16 in place copied
	// through local memory (the way before the stage; benchmarks
	// compare).
	local bool
	// split, when the engine is traced, writes each class of touched
	// nodes (moves; N4, N16 and N48 in place; N256 in place; collapses)
	// in a launch and a step of its own, so that the trace times them
	// apart. The result is the same: each node has one writer, whose
	// reads do not depend on another's writes in the round.
	split bool
}

// writeClasses are an_write's classes (round.cu's WC_*) with the names of
// their trace steps.
var writeClasses = []struct {
	mask uint32
	name string
}{{1, "moves"}, {2, "N4, N16, N48 in place"}, {4, "N256 in place"}, {8, "collapses"}}

// writeTouched runs U3, an_write (or an_write_local) over the T touched
// nodes with M moved entries: one launch, or one per class when traced
// with split. Cost: one thread per touched node per launch.
func (r *nodeRun) writeTouched(M int) error {
	g, T := r.g, r.T
	f := g.k.nWrite
	if g.nw.local {
		f = g.k.nWriteLocal
	}
	launch := func(classes uint32) error {
		return g.launch(f, T, g.descBuf, uint64(T), int32(r.insert), r.tstart, r.scode, r.sop, r.slink, r.sgrp, r.out, r.htrim,
			r.final, r.rem, r.remb, r.mcode, r.mop, r.mlink, uint64(M), r.gtn, r.gtref, r.trimd, r.trimpr, r.tnode, r.runs, classes)
	}
	if g.trace == nil || !g.nw.split {
		if err := launch(15); err != nil {
			return err
		}
		g.step("node round: write")
		return nil
	}
	for _, c := range writeClasses {
		if err := launch(c.mask); err != nil {
			return err
		}
		g.step(fmt.Sprintf("node round: write (%s)", c.name))
	}
	return nil
}
