package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// insert is store.insert on the device: the pools it may outgrow grown
// beside the upload (growAhead); upload, sort and dedupe;
// ai_classify (one walk per key); the new keys selected and ordered by
// edge (a stable radix sort), grouped (a select), ai_groups (the old
// element's rank: a binary search per group), a scan placing the items,
// ai_items and ai_segs; the build rounds of the groups' subtrees (fresh
// records only); ai_entries and the node round (the first writes to the
// tree the old records see); ai_root_writes and ai_values. A failure
// before the node round's writes (out of memory) rolls the allocation
// counters back: the tree is unchanged. The insert runs beside the frees
// of earlier batches (freeBeside); out of memory while they ran, it waits
// for them and runs once more.
func (g *gpuEngine) insert(kb Keys, vals []uint64) (int, error) {
	if long, n, err := longInsert(g, kb, vals); long {
		return n, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.endCheck()
	pending := g.freesPending()
	added, err := g.insertOnce(kb, vals)
	if pending && errors.Is(err, gpu.ErrOutOfMemory) {
		// The retry reuses the first try's deferred check of the batch
		// (check_later_gpu.go): a try that got past its sort started it,
		// and g.later stays set until insert returns (endCheck), so the
		// retry's startCheck is a no-op and its checked() waits for the
		// same pass over the same kb (TestGPUInsertRetry); a try that
		// failed before leaves the retry to start it.
		g.waitFrees()
		if g.beforeRetry != nil {
			g.beforeRetry()
		}
		added, err = g.insertOnce(kb, vals)
	}
	if errors.Is(err, errNotOneLength) {
		// The deferred check found keys of other lengths: their offsets
		// are uploaded this time.
		g.endCheck()
		g.hint.one, g.hint.later = false, false
		added, err = g.insertOnce(kb, vals)
	}
	if err != nil && g.hint.later {
		// A batch that failed otherwise before its deferred check said
		// it was bad fails as the facade's check fails it.
		g.startCheck(kb, "insert")
		var bad badBatch
		if e := g.checked(); errors.As(e, &bad) {
			return 0, e
		}
	}
	return added, err
}

// insertOnce is insert's one try, under g.mu.
func (g *gpuEngine) insertOnce(kb Keys, vals []uint64) (added int, err error) {
	t := g.t
	ahead := g.growAhead(t, kb.Len(), leafGuess(kb))
	// The pools grown ahead are adopted between the key parts when their
	// allocation is done by then (their device copies overlap the
	// packing of the second part), else after the sort.
	adopt := func(wait bool) error {
		if ahead == nil || !wait && !ahead.ready() {
			return nil
		}
		a := ahead
		ahead = nil
		if err := g.adoptAhead(t, a); err != nil {
			return fmt.Errorf("insert: pools grown ahead: %w", err)
		}
		g.step("pools grown ahead")
		return nil
	}
	b, order, n, err := g.uploadSorted(kb, vals, func() error { return adopt(false) })
	if err != nil {
		return 0, errors.Join(err, g.dropAhead(ahead))
	}
	g.startCheck(kb, "insert")
	defer func() { err = errors.Join(err, g.dropVals()) }()
	if err := adopt(true); err != nil {
		return 0, err
	}
	save := t.counters()
	added, err = g.insertSorted(t, b, order, n, leafGuess(kb))
	if err != nil {
		g.late = nil
		t.restore(save)
		return 0, err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	if err := g.finish("insert", kb.Len()); err != nil {
		g.late = nil
		return 0, err
	}
	g.step("drained, frees") // traced: the host's time to the end of the call
	g.applyLate(t)
	return added, nil
}

// leafGuess is the leaf kind of kb's keys when they look all of one length
// (their bytes are Len times the first key's length: a guess for growing
// the pools early, not a check), or 0 (none, or arena keys). Cost: O(1).
func leafGuess(kb Keys) int {
	n := kb.Len()
	if n == 0 {
		return 0
	}
	l := int(kb.Offs[1] - kb.Offs[0])
	if int(kb.Offs[n]-kb.Offs[0]) != n*l || leafKind(l) == kindLV {
		return 0
	}
	return leafKind(l)
}

// insertSorted runs the phases after the sort; it returns how many keys
// were new. lk is leafGuess's kind of the batch's leaves (0: none).
func (g *gpuEngine) insertSorted(t *devTree, b *devBatch, order *gpu.Buffer[uint32], n, lk int) (int, error) {
	if n == 0 {
		return 0, g.checked()
	}
	k := g.k
	needs := append(needsOf[uint8](n, "i.cls", "i.fresh"), needsOf[uint32](n+1, "i.slot1", "i.gd", "i.idx", "i.fpos")...)
	needs = append(append(needs, needsOf[uint64](n, "i.par", "i.tgt", "i.ek")...), gpu.NeedOf[uint32]("i.cnt", 1))
	if err := g.pool.Reserve(needs...); err != nil {
		return 0, fmt.Errorf("classify: %w", err)
	}
	u8s := takeAll[uint8](g.pool, n, "i.cls", "i.fresh")
	u32s := takeAll[uint32](g.pool, n+1, "i.slot1", "i.gd", "i.idx", "i.fpos")
	u64s := takeAll[uint64](g.pool, n, "i.par", "i.tgt", "i.ek")
	cls, fresh := u8s[0], u8s[1]
	slot1, gd, idx, fpos := u32s[0], u32s[1], u32s[2], u32s[3]
	par, tgt, ek := u64s[0], u64s[1], u64s[2]
	cnt := gpu.Take[uint32](g.pool, "i.cnt", 1)
	// Classify and select the new keys.
	if err := firstErr(g.setDesc(t, b),
		g.launch(k.iClassify, n, g.descBuf, uint64(n), order, cls, par, slot1, tgt, gd, fresh),
		g.launch(k.iota, n, uint64(n), idx),
		prim.DevSelect(g.pe, idx, fresh, fpos, n, cnt)); err != nil {
		return 0, fmt.Errorf("classify: %w", err)
	}
	c, err := g.readU32(cnt, 0, 1)
	if err != nil {
		return 0, err
	}
	F := int(c[0])
	g.step("classify")
	if F > 0 {
		if err := g.insertFresh(t, b, order, F, lk, cls, fresh, slot1, gd, idx, fpos, par, tgt, ek, cnt); err != nil {
			return 0, err
		}
	}
	// Values of present keys, then the frees.
	if err := g.checked(); err != nil {
		return 0, err
	}
	if err := firstErr(g.waitVals(), g.setDesc(t, b), g.launch(k.iValues, n, g.descBuf, uint64(n), order, cls, tgt), g.flushFrees(t)); err != nil {
		return 0, fmt.Errorf("values: %w", err)
	}
	g.step("values")
	t.n += F
	return F, nil
}

// insertFresh places the F new keys (sorted positions in fpos); lk, when
// not 0, is the likely kind of their leaves. The first build round grows
// that pool for F more, and the N4 pool for one per split, while the
// device plans.
func (g *gpuEngine) insertFresh(t *devTree, b *devBatch, order *gpu.Buffer[uint32], F, lk int, cls, gflag *gpu.Buffer[uint8],
	slot1, gd, idx, fpos *gpu.Buffer[uint32], par, tgt, ek *gpu.Buffer[uint64], cnt *gpu.Buffer[uint32]) error {
	k := g.k
	if err := g.pool.Reserve(gpu.NeedOf[uint32]("i.fs", F), gpu.NeedOf[uint32]("i.gstart", F+1)); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	fs, gstart := gpu.Take[uint32](g.pool, "i.fs", F), gpu.Take[uint32](g.pool, "i.gstart", F+1)
	// Order by edge (stable) and group.
	if err := firstErr(
		g.launch(k.iEdgekeys, F, uint64(F), fpos, par, slot1, ek, fs),
		prim.DevSortPairs(g.pe, ek, fs, F),
		g.launch(k.iGflags, F, uint64(F), ek, gflag),
		prim.DevSelect(g.pe, idx, gflag, gstart, F, cnt)); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	c, err := g.readU32(cnt, 0, 1)
	if err != nil {
		return err
	}
	G := int(c[0])
	g.step("group")
	names32, names64 := []string{"i.tn", "i.trank", "i.issplit", "i.sb", "i.trimd"}, []string{"i.tref", "i.glink", "i.trimpar"}
	if err := g.pool.Reserve(append(needsOf[uint32](G+1, names32...), needsOf[uint64](G+1, names64...)...)...); err != nil {
		return fmt.Errorf("groups: %w", err)
	}
	u32s := takeAll[uint32](g.pool, G+1, names32...)
	tn, trank, issplit, sb, trimd := u32s[0], u32s[1], u32s[2], u32s[3], u32s[4]
	u64s := takeAll[uint64](g.pool, G+1, names64...)
	tref, glink, trimpar := u64s[0], u64s[1], u64s[2]
	if err := firstErr(g.setDesc(t, b),
		g.launch(k.iGroups, G+1, g.descBuf, uint64(G), uint64(F), gstart, fs, order, cls, tgt, gd, tref, tn, trank, issplit),
		prim.DevScanExclusive(g.pe, issplit, sb, G+1)); err != nil {
		return fmt.Errorf("groups: %w", err)
	}
	sv, err := g.readU32(sb, G, 1)
	if err != nil {
		return err
	}
	m := F + int(sv[0])
	g.step("groups")
	if err := g.pool.Reserve(append(itemNeeds(m), segNeeds("b.segA", m)...)...); err != nil {
		return fmt.Errorf("items: %w", err)
	}
	it, cur := g.takeItems(m), g.takeSegs("b.segA", m)
	if err := firstErr(
		g.launch(k.iItems, F, g.descBuf, uint64(F), uint64(G), gstart, sb, issplit, trank, fs, order, it.ref, it.n, it.old, it.grp),
		g.launch(k.iSegs, G, uint64(G), uint64(F), gstart, sb, issplit, trank, tref, tn, fs, par, slot1, tgt, gd,
			it.ref, it.n, it.old, it.grp, cur.start, cur.end, cur.d, cur.dst, cur.par)); err != nil {
		return fmt.Errorf("items: %w", err)
	}
	g.step("items")
	// The guess of the first round's allocations: a leaf per new key, an
	// N4 per split leaf or prefix (most splits part two items).
	io := insertOut{glink: glink, trimd: trimd, trimpar: trimpar}
	io.grow[kindN4] = uint64(m - F)
	if lk != 0 {
		io.grow[lk] = uint64(F)
	}
	if err := g.rounds(t, b, it, m, cur, G, io); err != nil {
		return err
	}
	// The groups' entries, then the node round.
	if err := g.pool.Reserve(append(entryNeeds("i.ents", 2*G), gpu.NeedOf[uint64]("i.valid", 2), gpu.NeedOf[uint8]("i.eflag", 2*G))...); err != nil {
		return fmt.Errorf("entries: %w", err)
	}
	ents, valid, eflag := g.takeEntries("i.ents", 2*G), gpu.Take[uint64](g.pool, "i.valid", 2), gpu.Take[uint8](g.pool, "i.eflag", 2*G)
	if err := firstErr(valid.FillBytes(g.s, 0),
		g.launch(k.iEntries, G, uint64(G), gstart, fs, cls, par, slot1, tgt, glink, ents.key, ents.node, ents.code, ents.op,
			ents.link, ents.grp, eflag, valid)); err != nil {
		return fmt.Errorf("entries: %w", err)
	}
	vv, err := g.readU64(valid, 0, 2)
	if err != nil {
		return err
	}
	g.step("entries")
	if err := g.checked(); err != nil {
		return err
	}
	if _, err := g.nodeRound(t, roundIn{e: ents, n: int(vv[0]), sorted: 2 * G, valid: eflag, ascending: int(vv[1]), insert: true,
		gtn: tn, gtref: tref, trimd: trimd, trimpr: trimpar}); err != nil {
		return err
	}
	if err := firstErr(g.setDesc(t, b), g.launch(k.iRootWrites, G, g.descBuf, uint64(G), gstart, fs, par, glink)); err != nil {
		return fmt.Errorf("root writes: %w", err)
	}
	g.step("root writes")
	return nil
}
