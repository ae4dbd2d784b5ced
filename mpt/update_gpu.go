package mpt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// A batch on the GPU engine (update) and PhaseNU's walks, expansions and
// inserts (update.cu); sort_gpu.go sorts the batch, lock_gpu.go holds
// LockNU, compress_gpu.go and hash_gpu.go the phases after.

// update applies a batch (an empty value deletes; the last operation on a
// key wins) and hashes the changed nodes. Its scratch is reserved first
// (batchNeeds). Errors before the trie changes leave it as it was; after
// that (only a device failure or running out of memory while growing the
// node arrays), the batch is abandoned, the nodes already expanded are
// compressed back, and the trie is again as before the batch.
func (g *gpuTrie) update(keys, values [][]byte) error {
	t0 := time.Now()
	g.times = BatchStats{Keys: len(keys)}
	defer func() { g.last = g.times.timings() }()
	n := len(keys)
	if n == 0 {
		return nil
	}
	if err := g.checkKeys(keys); err != nil {
		return err
	}
	l := g.layoutKeys(keys)
	if err := g.pool.Reserve(g.batchNeeds(l)...); err != nil {
		return fmt.Errorf("mpt: gpu engine: scratch for a batch of %d: %w", n, err)
	}
	sk, err := g.stageKeys(keys, l)
	if err != nil {
		return err
	}
	vbase, anyInsert, anyDelete, err := g.stageValues(values)
	if err != nil {
		return err
	}
	t1 := time.Now()
	if err := g.s.Synchronize(); err != nil {
		return err
	}
	t2 := time.Now()
	g.times.Stage, g.times.Upload = t1.Sub(t0), t2.Sub(t1)
	m, err := g.sortBatch(sk, n)
	if err != nil {
		return err
	}
	t3 := time.Now()
	g.times.Sort = t3.Sub(t2)
	if g.root == 0 && !anyInsert {
		g.times.Total = time.Since(t0)
		return nil // deletes from an empty trie
	}
	g.rootOK = false // until hash reads the new root back
	wasEmpty := g.root == 0
	if wasEmpty {
		if err := g.newRoot(); err != nil {
			return err
		}
	}
	o, err := g.opInit(sk, m, vbase)
	if err != nil {
		return errors.Join(err, g.abandon())
	}
	algo, why := chooseUpdate(g.mode, m, o.lcpMean, g.liveNodes(), anyDelete, wasEmpty)
	g.times.Algorithm, g.times.Why = algo, why
	if algo == NodeUpdateLock {
		if err := g.lockApply(o); err != nil {
			return errors.Join(err, g.abandon())
		}
		c, err := g.readCtl(ctlTouched, 1)
		if err != nil {
			return err
		}
		if _, err := g.markUp(int(c[0])); err != nil {
			return err
		}
	} else {
		if err := g.apply(o); err != nil {
			return errors.Join(err, g.abandon())
		}
		if err := g.compress(); err != nil {
			return err
		}
	}
	t4 := time.Now()
	g.times.Update = t4.Sub(t3)
	if err := g.hash(); err != nil {
		return err
	}
	g.times.Hash = time.Since(t4)
	g.times.Total = time.Since(t0)
	return nil
}

// abandon restores canonical form after a batch failed midway: the
// expansions made so far only re-shaped nodes, so compressing the dirty
// set and re-hashing gives back the trie as it was.
func (g *gpuTrie) abandon() error {
	return errors.Join(g.compress(), g.hash())
}

// newRoot makes an empty branch the root (the walks need one to start at)
// and puts it on the dirty list, so that compress makes it canonical or
// frees it even when no operation of the batch touches it (a batch whose
// inserts all lose to later deletes of the same keys): an empty branch
// must never stay the root.
func (g *gpuTrie) newRoot() error {
	if err := g.reserveNodes(1); err != nil {
		return err
	}
	ids, err := g.allocIDs(1)
	if err != nil {
		return err
	}
	var id [1]uint32
	if err := errors.Join(ids.Read(g.s, 0, id[:]), g.s.Synchronize()); err != nil {
		return err
	}
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return err
	}
	rec := make([]byte, nodeBytes)
	binary.LittleEndian.PutUint32(rec[nodeKindOffset:], kindBranch)
	binary.LittleEndian.PutUint32(rec[nodeFlagsOffset:], flagDirty)
	if err := errors.Join(g.nodes.Write(g.s, int(id[0])*nodeBytes, rec), g.touched.Write(g.s, int(c[0]), id[:]),
		g.setCtl(ctlTouched, c[0]+1), g.s.Synchronize()); err != nil {
		return err
	}
	g.root = id[0]
	return nil
}

// maxRounds bounds the expansion rounds: each round expands at least one
// short node on some walk's path, and a path has at most one short node
// per nibble.
const maxRounds = 2*maxKeyBytes + 2

// opState is the per-operation state of a batch on the device (m kept
// operations in key order).
type opState struct {
	sk                        stagedKeys
	m                         int
	ops                       *gpu.Buffer[uint32] // batch index of each kept operation
	klen, vid, need, cur, dep *gpu.Buffer[uint32]
	prev                      *gpu.Buffer[uint32] // nibbles shared with the previous operation
	st                        *gpu.Buffer[uint8]
	lcpMean                   float64 // mean need: nibbles shared with a sorted neighbour
}

// opInit computes every kept operation's path length, value id, need and
// walk start, and the batch's mean need (for the decision model).
func (g *gpuTrie) opInit(sk stagedKeys, m int, vbase uint32) (*opState, error) {
	u32 := func(name string) *gpu.Buffer[uint32] { return gpu.Take[uint32](g.pool, name, m) }
	o := &opState{sk: sk, m: m, ops: u32(bufOps), klen: u32(bufKlen), vid: u32(bufVid), need: u32(bufNeed),
		cur: u32(bufCur), dep: u32(bufDep), prev: u32(bufPrev), st: gpu.Take[uint8](g.pool, bufSt, m)}
	if err := g.setCtl(ctlLCP, 0); err != nil {
		return nil, err
	}
	if err := g.launch(g.k.opInit, threads(m), kernelBlock, sk.keys, uint32(sk.stride), sk.lens, gpu.Take[uint32](g.pool, bufVlens, sk.n), vbase, o.ops,
		uint64(m), g.root, o.klen, o.vid, o.need, o.prev, o.cur, o.dep, o.st, g.ctl); err != nil {
		return nil, err
	}
	c, err := g.readCtl(ctlLCP, 1)
	if err != nil {
		return nil, err
	}
	o.lcpMean = float64(c[0]) / float64(m)
	return o, nil
}

// apply runs PhaseNU's walks and expansions, then the inserts and
// deletes, on the kept operations.
func (g *gpuTrie) apply(o *opState) error {
	sk, m, ops := o.sk, o.m, o.ops
	klen, vid, need, cur, dep, st := o.klen, o.vid, o.need, o.cur, o.dep, o.st
	stride := uint32(sk.stride)
	list := gpu.Take[uint32](g.pool, bufExpand, m)
	for round := 0; ; round++ {
		if round > maxRounds {
			return fmt.Errorf("mpt: gpu engine: expansion did not settle after %d rounds", round)
		}
		if err := g.setCtl(ctlWait, 0, 0); err != nil {
			return err
		}
		if err := g.launch(g.k.walk, threads(m), kernelBlock, g.nodes, sk.keys, stride, ops, klen, vid, uint64(m),
			cur, dep, st, list, g.ctl); err != nil {
			return err
		}
		c, err := g.readCtl(ctlWait, 2)
		if err != nil {
			return err
		}
		nwait, ne := int(c[0]), int(c[1])
		if ne == 0 {
			if nwait > 0 {
				return fmt.Errorf("mpt: gpu engine: %d walks wait but no node is listed for expansion (a bug)", nwait)
			}
			break
		}
		g.times.Rounds++
		g.times.Expanded += ne
		if err := g.expandRound(list, ne); err != nil {
			// The listed nodes keep their need unless it is cleared:
			// a later batch would not list them again.
			return errors.Join(err, g.launch(g.k.resetVersions, threads(ne), kernelBlock, g.nodes, list, uint64(ne)))
		}
	}
	counts := gpu.Take[uint32](g.pool, bufCounts, m+1)
	if err := g.launch(g.k.insertCount, threads(m), kernelBlock, g.nodes, klen, vid, need, o.prev, cur, dep, st, uint64(m), counts); err != nil {
		return err
	}
	_, ids, total, err := g.placeIDs(counts, m)
	if err != nil {
		return err
	}
	if err := g.setCtl(ctlPool, 0); err != nil {
		return err
	}
	if err := g.launch(g.k.insert, threads(m), kernelBlock, g.nodes, sk.keys, stride, ops, klen, vid, need, cur, dep, st,
		uint64(m), ids, total, g.touched, g.ctl); err != nil {
		return err
	}
	return g.reclaim(ids, total)
}

// expandRound expands the ne short nodes of list (counted, placed by a
// scan, given ids, then rewritten by mpt_expand, which clears their need).
func (g *gpuTrie) expandRound(list *gpu.Buffer[uint32], ne int) error {
	counts := gpu.Take[uint32](g.pool, bufCounts, ne+1) // a listed node has a waiting walk: ne <= m
	if err := g.launch(g.k.expandCount, threads(ne), kernelBlock, g.nodes, list, uint64(ne), counts); err != nil {
		return err
	}
	offs, ids, _, err := g.placeIDs(counts, ne)
	if err != nil {
		return err
	}
	return g.launch(g.k.expand, threads(ne), kernelBlock, g.nodes, list, uint64(ne), offs, ids, g.touched, g.ctl)
}

// placeIDs turns per-item node counts[0, n) into exclusive offsets and
// reserves and materializes that many node ids (count, scan, allocate: the
// allocation every node-creating phase starts with). On failure nothing
// was allocated.
func (g *gpuTrie) placeIDs(counts *gpu.Buffer[uint32], n int) (offs, ids *gpu.Buffer[uint32], total uint32, err error) {
	if offs, total, err = g.scanCounts(counts, n); err != nil {
		return nil, nil, 0, err
	}
	if err := g.reserveNodes(total); err != nil {
		return nil, nil, 0, err
	}
	if ids, err = g.allocIDs(total); err != nil {
		return nil, nil, 0, err
	}
	return offs, ids, total, nil
}

// reclaim returns the reserved ids that were not used (kind FREE) to the
// free list and checks the error word.
func (g *gpuTrie) reclaim(ids *gpu.Buffer[uint32], total uint32) error {
	if err := g.setCtl(ctlFreed, 0); err != nil {
		return err
	}
	if total > 0 {
		if err := g.launch(g.k.reclaim, threads(int(total)), kernelBlock, g.nodes, ids, uint64(total), g.freelist, g.nfree, g.ctl); err != nil {
			return err
		}
	}
	c, err := g.readCtl(ctlFreed, 3)
	if err != nil {
		return err
	}
	g.nfree += c[0]
	if c[2] != 0 {
		return fmt.Errorf("mpt: gpu engine: insert invariant %d failed (a bug)", c[2])
	}
	return nil
}
