package art

import (
	"fmt"

	"warpkv/engine"
	"warpkv/gpu"
	"warpkv/prim"
)

// insert is store.insert on the device: upload, sort and dedupe;
// ai_classify (one walk per key); the new keys selected and ordered by
// edge (a stable radix sort), grouped (a select), ai_groups (the old
// element's rank: a binary search per group), a scan placing the items,
// ai_items and ai_segs; the build rounds of the groups' subtrees (fresh
// records only); ai_entries and the node round (the first writes to the
// tree the old records see); ai_root_writes and ai_values. A failure
// before the node round's writes (out of memory) rolls the allocation
// counters back: the tree is unchanged.
func (g *gpuEngine) insert(kb Keys, vals []uint64) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.start()
	b, err := g.upload("batch", kb, vals)
	if err != nil {
		return 0, fmt.Errorf("upload: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	t := g.t
	if err := g.setDesc(t, b); err != nil {
		return 0, err
	}
	order, n, err := g.sortBatch(b)
	if err != nil {
		return 0, err
	}
	g.clock.Mark(g.s, engine.MarkSorted)
	save := t.counters()
	added, err := g.insertSorted(t, b, order, n)
	if err != nil {
		t.restore(save)
		return 0, err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	return added, g.finish("insert", kb.Len())
}

// insertSorted runs the phases after the sort; it returns how many keys
// were new.
func (g *gpuEngine) insertSorted(t *devTree, b *devBatch, order *gpu.Buffer[uint32], n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	k := g.k
	var u8s [2]*gpu.Buffer[uint8]
	var u32s [4]*gpu.Buffer[uint32]
	var u64s [3]*gpu.Buffer[uint64]
	var err error
	for i, name := range []string{"i.cls", "i.fresh"} {
		if u8s[i], err = g.b8(name, n); err != nil {
			return 0, err
		}
	}
	for i, name := range []string{"i.slot1", "i.gd", "i.idx", "i.fpos"} {
		if u32s[i], err = g.b32(name, n+1); err != nil {
			return 0, err
		}
	}
	for i, name := range []string{"i.par", "i.tgt", "i.ek"} {
		if u64s[i], err = g.b64(name, n); err != nil {
			return 0, err
		}
	}
	cls, fresh := u8s[0], u8s[1]
	slot1, gd, idx, fpos := u32s[0], u32s[1], u32s[2], u32s[3]
	par, tgt, ek := u64s[0], u64s[1], u64s[2]
	cnt, err := g.b32("i.cnt", 1)
	if err != nil {
		return 0, err
	}
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
	if F > 0 {
		if err := g.insertFresh(t, b, order, F, cls, fresh, slot1, gd, idx, fpos, par, tgt, ek, cnt); err != nil {
			return 0, err
		}
	}
	// Values of present keys, then the frees.
	if err := firstErr(g.setDesc(t, b), g.launch(k.iValues, n, g.descBuf, uint64(n), order, cls, tgt), g.flushFrees(t)); err != nil {
		return 0, fmt.Errorf("values: %w", err)
	}
	t.n += F
	return F, nil
}

// insertFresh places the F new keys (sorted positions in fpos).
func (g *gpuEngine) insertFresh(t *devTree, b *devBatch, order *gpu.Buffer[uint32], F int, cls, gflag *gpu.Buffer[uint8],
	slot1, gd, idx, fpos *gpu.Buffer[uint32], par, tgt, ek *gpu.Buffer[uint64], cnt *gpu.Buffer[uint32]) error {
	k := g.k
	fs, err := g.b32("i.fs", F)
	if err != nil {
		return err
	}
	gstart, err := g.b32("i.gstart", F+1)
	if err != nil {
		return err
	}
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
	var u32s [5]*gpu.Buffer[uint32]
	for i, name := range []string{"i.tn", "i.trank", "i.issplit", "i.sb", "i.trimd"} {
		if u32s[i], err = g.b32(name, G+1); err != nil {
			return err
		}
	}
	tn, trank, issplit, sb, trimd := u32s[0], u32s[1], u32s[2], u32s[3], u32s[4]
	var u64s [3]*gpu.Buffer[uint64]
	for i, name := range []string{"i.tref", "i.glink", "i.trimpar"} {
		if u64s[i], err = g.b64(name, G+1); err != nil {
			return err
		}
	}
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
	it, err := g.itemBufs(m)
	if err != nil {
		return err
	}
	cur, err := g.segBufs("b.segA", m)
	if err != nil {
		return err
	}
	if err := firstErr(
		g.launch(k.iItems, F, g.descBuf, uint64(F), uint64(G), gstart, sb, issplit, trank, fs, order, it.ref, it.n, it.old, it.grp),
		g.launch(k.iSegs, G, uint64(G), uint64(F), gstart, sb, issplit, trank, tref, tn, fs, par, slot1, tgt, gd,
			it.ref, it.n, it.old, it.grp, cur.start, cur.end, cur.d, cur.dst, cur.par)); err != nil {
		return fmt.Errorf("items: %w", err)
	}
	if err := g.rounds(t, b, it, m, cur, G, insertOut{glink: glink, trimd: trimd, trimpar: trimpar}); err != nil {
		return err
	}
	// The groups' entries, then the node round.
	ents, err := g.entryBufs("i.ents", 2*G)
	if err != nil {
		return err
	}
	valid, err := g.b64("i.valid", 1)
	if err != nil {
		return err
	}
	if err := firstErr(valid.FillBytes(g.s, 0),
		g.launch(k.iEntries, G, uint64(G), gstart, fs, cls, par, slot1, tgt, glink, ents.key, ents.node, ents.code, ents.op,
			ents.link, ents.grp, valid)); err != nil {
		return fmt.Errorf("entries: %w", err)
	}
	vv, err := g.readU64(valid, 0, 1)
	if err != nil {
		return err
	}
	if _, err := g.nodeRound(t, roundIn{e: ents, n: int(vv[0]), sorted: 2 * G, insert: true,
		gtn: tn, gtref: tref, trimd: trimd, trimpr: trimpar}); err != nil {
		return err
	}
	if err := firstErr(g.setDesc(t, b), g.launch(k.iRootWrites, G, g.descBuf, uint64(G), gstart, fs, par, glink)); err != nil {
		return fmt.Errorf("root writes: %w", err)
	}
	return nil
}
