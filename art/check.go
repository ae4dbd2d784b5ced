package art

import (
	"bytes"
	"fmt"
)

// checker walks a store and verifies every invariant of the layout.
type checker struct {
	s       *store
	reached [numKinds + 1][]bool
	leaves  int
	last    []byte
	haveKey bool
	live    uint64 // arena bytes of the reached LV leaves
}

// check verifies the tree: node fill bounds per kind (the smallest kind
// that holds the children), at least two entries per node, sorted keys in
// N4 and N16, N48 index consistency (slots in byte order), zero words past
// the entries, stored prefixes equal to the path, every leaf of the right
// class, below the path its place implies (the terminator's key exactly
// the node's path), parent words, keys in strictly increasing order,
// counts, and that every record is reached exactly once or is free (no
// leak). Cost: O(tree).
func (s *store) check() error {
	c := &checker{s: s}
	for k := kindN4; k <= kindLV; k++ {
		c.reached[k] = make([]bool, s.pools[k].hwm)
	}
	if len(s.root) != rootLen(s.width) {
		return fmt.Errorf("root array of %d slots for width %d, want %d", len(s.root), s.width, rootLen(s.width))
	}
	tl := tableLen(s.width)
	for rp, total := 0, s.rootPositions(); rp < total; rp++ {
		w := s.width
		e, j := rp/(w+1), rp%(w+1)
		var slot int
		var path []byte
		if j == w {
			slot = e
			path = beBytes(uint64(e), w)
		} else {
			if e&(tableLen(w-j)-1) != 0 {
				continue
			}
			slot = tl + shortOffset(j) + e>>(8*(w-j))
			path = beBytes(uint64(e>>(8*(w-j))), j)
		}
		l := s.root[slot]
		if l == 0 {
			continue
		}
		if j < w && !isLeaf(l) {
			return fmt.Errorf("short root slot %d holds %#x, not a leaf", slot, l)
		}
		if err := c.sub(l, len(path), path, rootParent(uint64(slot)), j < w); err != nil {
			return fmt.Errorf("root slot %d: %w", slot, err)
		}
	}
	if c.leaves != s.n {
		return fmt.Errorf("%d leaves reached, %d keys counted", c.leaves, s.n)
	}
	if c.live != s.arenaLive {
		return fmt.Errorf("arena: %d live bytes reached, %d counted", c.live, s.arenaLive)
	}
	for k := kindN4; k <= kindLV; k++ {
		p := &s.pools[k]
		free := make([]bool, p.hwm)
		for _, f := range p.free {
			if uint64(f) >= p.hwm || free[f] {
				return fmt.Errorf("kind %d: free record %d out of range or listed twice", k, f)
			}
			if c.reached[k][f] {
				return fmt.Errorf("kind %d: record %d is free and in the tree", k, f)
			}
			free[f] = true
			if k == kindLV && p.words[2*int(f)+1] != lvDead {
				return fmt.Errorf("free LV leaf %d not marked dead", f)
			}
		}
		for i := range p.hwm {
			if !free[i] && !c.reached[k][i] {
				return fmt.Errorf("kind %d: record %d leaked (neither free nor reached)", k, i)
			}
		}
		if len(s.pending[k]) != 0 {
			return fmt.Errorf("kind %d: %d frees pending after a batch", k, len(s.pending[k]))
		}
	}
	return nil
}

func beBytes(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// sub checks the subtree of link l at base depth d whose keys start with
// path (len d), its parent word wantParent; exact: l is a leaf whose key is
// path.
func (c *checker) sub(l uint64, d int, path []byte, wantParent uint64, exact bool) error {
	s := c.s
	k := linkKind(l)
	if k < kindN4 || k > kindLV {
		return fmt.Errorf("link %#x: kind %d", l, k)
	}
	i := linkIndex(l)
	if i >= s.pools[k].hwm {
		return fmt.Errorf("link %#x: index past the %d records", l, s.pools[k].hwm)
	}
	if c.reached[k][i] {
		return fmt.Errorf("link %#x reached twice", l)
	}
	c.reached[k][i] = true
	if isLeaf(l) {
		return c.leaf(l, path, exact)
	}
	if linkAux(l) != 0 {
		return fmt.Errorf("node link %#x has an aux field", l)
	}
	r := s.rec(l)
	plen, cnt := plenOf(r), countOf(r)
	if r[wParent] != wantParent {
		return fmt.Errorf("node %#x: parent word %#x, want %#x", l, r[wParent], wantParent)
	}
	if cnt < minChildren[k] || cnt > capacity[k] {
		return fmt.Errorf("node %#x of kind %d has %d children", l, k, cnt)
	}
	entries := cnt
	if r[wTerm] != 0 {
		entries++
	}
	if entries < 2 {
		return fmt.Errorf("node %#x has %d entries", l, entries)
	}
	full := s.leafKey(s.minLeaf(l))
	if len(full) < d+plen || !bytes.Equal(full[:d], path) {
		return fmt.Errorf("node %#x: smallest leaf %x leaves the path %x (prefix %d)", l, full, path, plen)
	}
	if want := packPrefix(full[d : d+plen]); r[wPrefix] != want {
		return fmt.Errorf("node %#x: prefix word %#x, want %#x (path %x, prefix %d)", l, r[wPrefix], want, path, plen)
	}
	np := append(append([]byte(nil), path...), full[d:d+plen]...)
	nd := d + plen
	if r[wTerm] != 0 {
		if !isLeaf(r[wTerm]) {
			return fmt.Errorf("node %#x: terminator %#x is not a leaf", l, r[wTerm])
		}
		if err := c.sub(r[wTerm], nd, np, 0, true); err != nil {
			return fmt.Errorf("node %#x terminator: %w", l, err)
		}
	}
	bs := wordBytes(r)
	child := func(b int, cl uint64) error {
		if cl == 0 {
			return fmt.Errorf("node %#x: empty child for byte %d", l, b)
		}
		want := uint64(0)
		if isNode(cl) {
			want = parentWord(l, b)
		}
		if err := c.sub(cl, nd+1, append(np[:nd:nd], byte(b)), want, false); err != nil {
			return fmt.Errorf("node %#x byte %#x: %w", l, b, err)
		}
		return nil
	}
	zero := func(from, to int) error {
		for w := from; w < to; w++ {
			if r[w] != 0 {
				return fmt.Errorf("node %#x: word %d is %#x, want 0", l, w, r[w])
			}
		}
		return nil
	}
	switch k {
	case kindN4, kindN16:
		kb, cw, capc := n4KeyByte, n4Child, 4
		if k == kindN16 {
			kb, cw, capc = n16KeyByte, n16Child, 16
		}
		for j := range capc {
			if j >= cnt {
				if bs[kb+j] != 0 || r[cw+j] != 0 {
					return fmt.Errorf("node %#x: slot %d past the %d children not zero", l, j, cnt)
				}
				continue
			}
			if j > 0 && bs[kb+j] <= bs[kb+j-1] {
				return fmt.Errorf("node %#x: keys not increasing at %d", l, j)
			}
			if err := child(int(bs[kb+j]), r[cw+j]); err != nil {
				return err
			}
		}
		if k == kindN16 {
			if err := zero(n16Child+16, kindWords[k]); err != nil {
				return err
			}
		} else if r[wMeta]>>32>>(8*cnt) != 0 && cnt < 4 {
			return fmt.Errorf("node %#x: meta word %#x has keys past %d", l, r[wMeta], cnt)
		}
	case kindN48:
		if r[wMeta]>>32 != 0 {
			return fmt.Errorf("node %#x: meta word %#x", l, r[wMeta])
		}
		next := 1
		for b := range 256 {
			v := int(bs[n48IndexByte+b])
			if v == 0 {
				continue
			}
			if v != next {
				return fmt.Errorf("node %#x: index of byte %d is %d, want %d (slots in byte order)", l, b, v, next)
			}
			next++
			if err := child(b, r[n48Child+v-1]); err != nil {
				return err
			}
		}
		if next-1 != cnt {
			return fmt.Errorf("node %#x: index holds %d bytes, count %d", l, next-1, cnt)
		}
		if err := zero(n48Child+cnt, kindWords[k]); err != nil {
			return err
		}
	case kindN256:
		if r[wMeta]>>32 != 0 {
			return fmt.Errorf("node %#x: meta word %#x", l, r[wMeta])
		}
		got := 0
		for b := range 256 {
			if r[n256Child+b] != 0 {
				got++
				if err := child(b, r[n256Child+b]); err != nil {
					return err
				}
			}
		}
		if got != cnt {
			return fmt.Errorf("node %#x: %d children, count %d", l, got, cnt)
		}
	}
	return nil
}

// leaf checks leaf l below path (exactly path when exact).
func (c *checker) leaf(l uint64, path []byte, exact bool) error {
	s := c.s
	k := linkKind(l)
	n := linkAux(l)
	if leafKind(n) != k {
		return fmt.Errorf("leaf %#x: key of %d bytes in class %d", l, n, k)
	}
	r := s.rec(l)
	var key []byte
	if k == kindLV {
		w := r[1]
		if w == lvDead {
			return fmt.Errorf("leaf %#x is marked dead", l)
		}
		off, ln := w&linkIndexMask, int(w>>linkAuxShift)
		if ln != n || off+roundArena(n) > uint64(len(s.arena)) || off%arenaGranule != 0 {
			return fmt.Errorf("leaf %#x: arena word %#x (length %d, arena %d bytes)", l, w, n, len(s.arena))
		}
		key = s.arena[off : off+uint64(n)]
		c.live += roundArena(n)
	} else {
		bs := wordBytes(r)
		key = bs[:n]
		for j := n; j < 8*leafValueWord[k]; j++ {
			if bs[j] != 0 {
				return fmt.Errorf("leaf %#x: key padding not zero", l)
			}
		}
		if vw := leafValueWord[k]; vw+1 < kindWords[k] && r[vw+1] != 0 {
			return fmt.Errorf("leaf %#x: pad word not zero", l)
		}
	}
	if !bytes.HasPrefix(key, path) || (exact && len(key) != len(path)) || (!exact && len(key) < len(path)) {
		return fmt.Errorf("leaf %#x: key %x below path %x (exact %v)", l, key, path, exact)
	}
	if c.haveKey && bytes.Compare(c.last, key) >= 0 {
		return fmt.Errorf("leaf %#x: key %x after %x: order broken", l, key, c.last)
	}
	c.last, c.haveKey = append(c.last[:0], key...), true
	c.leaves++
	return nil
}
