package art

import (
	"bytes"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// tileWalkModel is walk.cu's tile_walk on the CPU store, lane by lane: each
// turn the TILE lanes read the positions from c.pos on (desc: down from
// it), the leaves before the first inner node are taken in lane order up
// to the first one past the far bound (far not nil: ascending keys below
// far, descending keys at or above it), and the cursor descends into that
// node, moves TILE positions on, or climbs (through tileLowerPosModel, as
// tile_climb), or the walk ends at the bound. It returns up to limit
// leaves, which must be what next (prev) returns from the same cursor up
// to the bound.
func tileWalkModel(s *store, tile int, c cursor, limit int, desc bool, far []byte) []uint64 {
	var out []uint64
	for len(out) < limit {
		root := c.node == rootCur
		var r []uint64
		k := linkKind(c.node)
		first, last := 0, s.rootPositions()-1
		if !root {
			r = s.rec(c.node)
			first, last = -1, positions(r, k)-1
		}
		if (desc && c.pos < first) || (!desc && c.pos > last) {
			if root {
				break
			}
			pw := r[wParent]
			step := 1
			if desc {
				step = -1
			}
			if linkKind(pw) == kindRoot {
				c = cursor{rootCur, 0, s.rootPosOf(linkIndex(pw)) + step}
				continue
			}
			p := nodeID(pw)
			pos, _ := tileLowerPosModel(tile, s.rec(p), linkKind(p), linkAux(pw))
			c = cursor{p, 0, pos + step}
			continue
		}
		links := make([]uint64, tile)
		var inner, leaves uint32
		for lane := range tile {
			p := c.pos + lane
			if desc {
				p = c.pos - lane
			}
			switch {
			case root && ((desc && p >= first) || (!desc && p <= last)):
				links[lane] = s.rootPosLink(p)
			case !root && p >= -1 && p < capacity[k]: // read within the record, then cut at the count
				if links[lane], _ = childAt(r, k, p); p > last {
					links[lane] = 0
				}
			}
			if l := links[lane]; l != 0 && isLeaf(l) {
				leaves |= 1 << lane
			} else if l != 0 {
				inner |= 1 << lane
			}
		}
		f := tile
		if inner != 0 {
			f = bits.TrailingZeros32(inner)
		}
		past := false
		for lane := 0; lane < f; lane++ {
			if leaves&(1<<lane) != 0 && len(out) < limit {
				if far != nil {
					cmp := bytes.Compare(s.leafKey(links[lane]), far)
					if past = (desc && cmp < 0) || (!desc && cmp >= 0); past {
						break
					}
				}
				out = append(out, links[lane])
			}
		}
		switch {
		case past:
			return out
		case inner != 0:
			ch := links[f]
			c.node, c.pos = ch, -1
			if desc {
				c.pos = positions(s.rec(ch), linkKind(ch)) - 1
			}
		case desc:
			c.pos -= tile
		default:
			c.pos += tile
		}
	}
	return out
}

// tileLowerPosModel is walk.cu's TileLowerPos on the CPU: an N4's or N16's
// key bytes TILE at a time, the first at or above b; an N48's index bytes
// below b counted 8 a lane, 8*TILE a turn.
func tileLowerPosModel(tile int, r []uint64, k int, b int) (int, bool) {
	bs := wordBytes(r)
	switch k {
	case kindN4, kindN16:
		off := n4KeyByte
		if k == kindN16 {
			off = n16KeyByte
		}
		c := countOf(r)
		for i0 := 0; i0 < c; i0 += tile {
			for lane := range tile {
				if i := i0 + lane; i < c && int(bs[off+i]) >= b {
					return i, int(bs[off+i]) == b
				}
			}
		}
		return c, false
	case kindN48:
		if x := bs[n48IndexByte+b]; x != 0 {
			return int(x) - 1, true
		}
		p := 0
		for c0 := 0; c0 < b; c0 += 8 * tile {
			for lane := range tile {
				c := c0 + 8*lane
				if c >= b {
					continue
				}
				x := r[(n48IndexByte+c)/8]
				for j := 0; j < 8 && c+j < b; j++ {
					if x>>(8*j)&0xff != 0 {
						p++
					}
				}
			}
		}
		return p, false
	}
	return b, r[n256Child+b] != 0
}

// TestTileWalkModel checks the tile walk of walk.cu, modelled lane by lane
// on the CPU store (tileWalkModel), against the cursor's steps (next,
// prev) from the same seeks, for tiles of 8, 16 and 32 lanes on trees
// with nodes of every kind, and tileLowerPosModel against lowerPos on
// every node's every byte. It runs without a GPU, so that the algorithm
// is checked where the kernels cannot run; TestGPUWalkLanes checks the
// kernels.
func TestTileWalkModel(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 16))
	all := allBytes()
	gens := map[string]func() []byte{
		"all bytes": func() []byte { return randomBytes(r, 0, 3, all) },
		"30 bytes":  func() []byte { return randomBytes(r, 0, 8, all[100:130]) },
		"long":      func() []byte { return append([]byte("shared-prefix-"), randomBytes(r, 0, 40, []byte("xy\xff"))...) },
		"16 bytes":  func() []byte { return randomBytes(r, 16, 16, nil) },
		"dense":     func() []byte { return append([]byte{"abc"[r.IntN(3)]}, randomBytes(r, 1, 2, all)...) },
	}
	for name, gen := range gens {
		tr, _ := Open(Options{Device: "cpu"})
		n := 5000
		keys, vals := make([][]byte, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = gen(), uint64(i)
		}
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
		s := tr.eng.(*cpuEngine).s
		t.Logf("%s: width %d, nodes %d %d %d %d", name, s.width, s.pools[kindN4].hwm, s.pools[kindN16].hwm, s.pools[kindN48].hwm, s.pools[kindN256].hwm)
		for kind := kindN4; kind <= kindN256; kind++ {
			for i := range s.pools[kind].hwm {
				rec := s.rec(link(kind, 0, i))
				for b := range 256 {
					for _, tile := range []int{8, 16, 32} {
						wp, we := lowerPos(rec, kind, b)
						gp, ge := tileLowerPosModel(tile, rec, kind, b)
						if gp != wp || ge != we {
							t.Fatalf("%s: kind %d node %d byte %d, %d lanes: %d %v, want %d %v", name, kind, i, b, tile, gp, ge, wp, we)
						}
					}
				}
			}
		}
		for q := range 300 {
			bound := gen()
			if q%2 == 0 {
				bound = keys[r.IntN(n)]
			}
			// The far bound: from a key near the start (a walk of a few
			// leaves), or any.
			farBound := func(desc bool) []byte {
				if q%3 == 0 {
					return gen()
				}
				k := bytes.Clone(bound)
				if desc {
					return k[:len(k)*2/3]
				}
				return append(k, 0)
			}
			for _, desc := range []bool{false, true} {
				start := s.seekGE(bound)
				if desc {
					start = s.seekLT(bound)
				}
				for _, limit := range []int{1, 7, 40, 200} {
					for _, far := range [][]byte{nil, farBound(desc)} {
						var want []uint64
						c := start
						for len(want) < limit {
							var l uint64
							if desc {
								l = s.prev(&c)
							} else {
								l = s.next(&c)
							}
							if l == 0 || far != nil && (bytes.Compare(s.leafKey(l), far) < 0) == desc {
								break
							}
							want = append(want, l)
						}
						for _, tile := range []int{8, 16, 32} {
							if got := tileWalkModel(s, tile, start, limit, desc, far); !slices.Equal(got, want) {
								t.Fatalf("%s: bound %q, far %q, desc %v, limit %d, %d lanes: %d leaves, want %d", name, bound, far, desc, limit, tile,
									len(got), len(want))
							}
						}
					}
				}
			}
		}
	}
}

// allBytes is the 256 byte values in order, an alphabet of randomBytes.
func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
