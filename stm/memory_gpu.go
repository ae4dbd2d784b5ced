package stm

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// runMemory is the device memory of one run, by name, and the run's
// stm_globals. Its buffers are one gpu.Buffers set: allocation errors are
// sticky, so that after the first, further allocations do nothing and
// bufs.Err says what failed.
type runMemory struct {
	vals, vers, tsnap, rsVal, wsVal, res      *gpu.Buffer[uint64]
	reqRing, finRing, reqTail, finTail, words *gpu.Buffer[uint64]
	dctl, counters, hist, histAb, done, final *gpu.Buffer[uint64]
	initv, globals, wts, tticket              *gpu.Buffer[uint64]
	histMarks, histAbMarks                    *gpu.Buffer[uint64]
	head, rsItem, wsItem, txNR, txNW, reply   *gpu.Buffer[uint32]
	claims, claimed                           *gpu.Buffer[uint32]
	inbox                                     *gpu.Buffer[uint64]
	bufs                                      *gpu.Buffers
}

// take allocates n (at least 1) elements into *dst unless an earlier
// allocation failed. Cost: one cuMemAlloc.
func take[T any](m *runMemory, dst **gpu.Buffer[T], n int) {
	*dst = gpu.AllocIn[T](m.bufs, n)
}

// release frees every buffer allocated.
func (m *runMemory) release() error { return m.bufs.Free() }

// allocate takes the run's device memory, zeroes the protocol's words and
// writes the run's stm_globals.
func (g *gpuEngine) allocate(pl *runPlan, sp *workloadSpec, ro RunOptions) (*runMemory, error) {
	d, cfg, sh, th := g.dev, pl.cfg, pl.sh, pl.threads
	m := &runMemory{bufs: gpu.NewBuffers(d)}
	take(m, &m.vals, pl.n*cfg.Versions)
	take(m, &m.vers, pl.n*cfg.Versions)
	take(m, &m.head, pl.n)
	take(m, &m.wts, pl.n)
	take(m, &m.rsItem, th*sh.r)
	if pl.hist > 0 {
		take(m, &m.rsVal, th*sh.r)
	} else {
		take(m, &m.rsVal, 1)
	}
	take(m, &m.wsItem, th*sh.w)
	take(m, &m.wsVal, th*sh.w)
	take(m, &m.claims, max(pl.claimWords, 1))
	if pl.claimWords > 0 {
		take(m, &m.claimed, th*sh.w)
	} else {
		take(m, &m.claimed, 1)
	}
	if pl.sh.migrate > 0 {
		take(m, &m.inbox, pl.clientWarps*inboxWords)
	} else {
		take(m, &m.inbox, 1)
	}
	take(m, &m.tsnap, th)
	take(m, &m.txNR, th)
	take(m, &m.txNW, th)
	take(m, &m.res, th)
	if sh.retry {
		take(m, &m.tticket, th)
	} else {
		take(m, &m.tticket, 1)
	}
	take(m, &m.reqRing, cfg.Servers*pl.ring*reqWords)
	take(m, &m.finRing, cfg.Servers*pl.ring*finWords)
	take(m, &m.reqTail, cfg.Servers*ctlSpacing)
	take(m, &m.finTail, cfg.Servers*ctlSpacing)
	take(m, &m.reply, pl.clientWarps*cfg.Servers)
	take(m, &m.words, 2*ctlSpacing) // clock, next
	take(m, &m.dctl, dctlWords)
	take(m, &m.counters, numCounters+latWords)
	take(m, &m.hist, int(pl.histWords))
	take(m, &m.histAb, int(pl.abWords))
	take(m, &m.histMarks, int(markWords(pl.histWords)))
	take(m, &m.histAbMarks, int(markWords(pl.abWords)))
	take(m, &m.done, pl.doneRing)
	take(m, &m.final, pl.n)
	take(m, &m.initv, pl.n)
	take(m, &m.globals, globalWords())
	if err := m.bufs.Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("allocating the run's device memory: %w", err), m.release())
	}
	for _, b := range []interface{ FillBytes(*gpu.Stream, byte) error }{m.reqRing, m.finRing, m.reqTail, m.finTail, m.reply, m.words, m.dctl, m.counters, m.res, m.done, m.claims, m.inbox, m.histMarks, m.histAbMarks} {
		if err := b.FillBytes(g.sSrv, 0); err != nil {
			return nil, errors.Join(err, m.release())
		}
	}
	if err := m.globals.Write(g.sSrv, 0, g.globalWords(pl, m, sp, ro)); err != nil {
		return nil, errors.Join(err, m.release())
	}
	return m, nil
}

// globalWords returns the run's stm_globals (layout_gpu.go's fields).
func (g *gpuEngine) globalWords(pl *runPlan, m *runMemory, sp *workloadSpec, ro RunOptions) []uint64 {
	cfg, sh := pl.cfg, pl.sh
	gl := make([]uint64, globalWords())
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"vals", uint64(m.vals.Ptr())}, {"vers", uint64(m.vers.Ptr())}, {"head", uint64(m.head.Ptr())},
		{"wts", uint64(m.wts.Ptr())},
		{"n_items", uint64(pl.n)}, {"part_size", uint64(pl.part)}, {"stripe", uint64(pl.stripe)}, {"servers", uint64(cfg.Servers)},
		{"k", uint64(sh.k)}, {"r_cap", uint64(sh.r)}, {"w_cap", uint64(sh.w)}, {"hist_mode", uint64(pl.hist)},
		{"log_e", uint64(sh.logE)}, {"log_n", uint64(cfg.LogSize)}, {"log_a", uint64(sh.logA)}, {"log_w", uint64(cfg.LogWrites)},
		{"smem", uint64(pl.props.SharedPerBlockOptin)},
		{"rs_item", uint64(m.rsItem.Ptr())}, {"rs_val", uint64(m.rsVal.Ptr())},
		{"ws_item", uint64(m.wsItem.Ptr())}, {"ws_val", uint64(m.wsVal.Ptr())},
		{"tx_snap", uint64(m.tsnap.Ptr())}, {"tx_nr", uint64(m.txNR.Ptr())}, {"tx_nw", uint64(m.txNW.Ptr())},
		{"res", uint64(m.res.Ptr())}, {"tx_ticket", uint64(m.tticket.Ptr())},
		{"req_ring", uint64(m.reqRing.Ptr())}, {"req_tail", uint64(m.reqTail.Ptr())},
		{"fin_ring", uint64(m.finRing.Ptr())}, {"fin_tail", uint64(m.finTail.Ptr())},
		{"ring_mask", uint64(pl.ring - 1)}, {"reply", uint64(m.reply.Ptr())},
		{"clock", uint64(m.words.PtrAt(0))}, {"next", uint64(m.words.PtrAt(ctlSpacing))},
		{"done", uint64(m.done.Ptr())}, {"done_mask", uint64(pl.doneRing - 1)},
		{"dctl", uint64(m.dctl.Ptr())}, {"hctl", uint64(g.ctl.Ptr())}, {"counters", uint64(m.counters.Ptr())},
		{"n_tx", uint64(pl.nTickets)}, {"seed", ro.Seed}, {"limit_ns", uint64(ro.Timeout.Nanoseconds())},
		{"client_warps", uint64(pl.clientWarps)}, {"threads", uint64(pl.threads)},
		{"throttle", uint64(pl.throttle)},
		{"contention", uint64(pl.contention)}, {"claims", uint64(m.claims.Ptr())},
		{"claim_mask", uint64(max(pl.claimWords, 1) - 1)}, {"claimed", uint64(m.claimed.Ptr())},
		{"refresh", uint64(pl.refresh)}, {"inbox", uint64(m.inbox.Ptr())},
		{"hist", uint64(m.hist.Ptr())}, {"hist_cap", uint64(pl.histWords)}, {"hist_off", uint64(m.dctl.PtrAt(dctlHistOff))},
		{"hist_ab", uint64(m.histAb.Ptr())}, {"hist_ab_cap", uint64(pl.abWords)},
		{"hist_ab_off", uint64(m.dctl.PtrAt(dctlHistAbOff))}, {"hist_ab_end", uint64(m.dctl.PtrAt(dctlHistAbEnd))},
		{"hist_marks", uint64(m.histMarks.Ptr())}, {"hist_ab_marks", uint64(m.histAbMarks.Ptr())},
	} {
		gl[globalIndex(f.name)] = f.v
	}
	copy(gl[globalIndex("params"):], sp.params)
	return gl
}
