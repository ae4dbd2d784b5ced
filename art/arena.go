package art

// Arena compaction: deletes leave dead bytes in the arena of long keys;
// when they outweigh the live ones (and pass arenaSlack), the live keys are
// moved down in LV record order (an exclusive scan of their rounded
// lengths gives the new offsets; art.cu's ac_* kernels do the same).
const arenaSlack = 1 << 16

// arenaNeedsCompaction reports whether the dead bytes call for compaction.
func arenaNeedsCompaction(used, live uint64) bool {
	dead := used - live
	return dead >= arenaSlack && dead > live
}

// maybeCompactArena compacts the arena when arenaNeedsCompaction says so.
// Cost: O(LV records + live bytes).
func (s *store) maybeCompactArena() {
	if !arenaNeedsCompaction(uint64(len(s.arena)), s.arenaLive) {
		return
	}
	p := &s.pools[kindLV]
	na := make([]byte, s.arenaLive)
	var off uint64
	for i := range p.hwm {
		w := p.words[2*i+1]
		if w == lvDead {
			continue
		}
		o, n := w&linkIndexMask, w>>linkAuxShift
		copy(na[off:], s.arena[o:o+roundArena(int(n))])
		p.words[2*i+1] = off | n<<linkAuxShift
		off += roundArena(int(n))
	}
	s.arena = na
}
