package workload

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// MPTOp is one trie operation: set Key to Value, or delete Key when Value
// is empty (go-ethereum's convention).
type MPTOp struct {
	Key, Value []byte
}

// MPTScenario is a named operation sequence in sections: a batch never
// spans two sections, so a section that inserts and deletes the same key
// runs as one batch when the batch size is the section's (size 0 in
// Batches). Probes are the keys to look up and prove after every batch:
// every key the scenario touches and keys it never stores.
type MPTScenario struct {
	Name     string
	Sections [][]MPTOp
	Probes   [][]byte
}

// Ops returns the scenario's operations in order, sections concatenated
// (the content of a `warpkv mpt` input file).
func (s MPTScenario) Ops() []MPTOp {
	var out []MPTOp
	for _, sec := range s.Sections {
		out = append(out, sec...)
	}
	return out
}

// Batches splits the scenario into batches of at most size operations
// (size 0: one batch per section), none spanning two sections, with an
// empty batch first and after every section: empty batches must leave
// every engine's root as it was.
func (s MPTScenario) Batches(size int) [][]MPTOp {
	out := [][]MPTOp{nil}
	for _, sec := range s.Sections {
		step := size
		if step <= 0 {
			step = max(1, len(sec))
		}
		for lo := 0; lo < len(sec); lo += step {
			out = append(out, sec[lo:min(lo+step, len(sec))])
		}
		out = append(out, nil)
	}
	return out
}

// Split returns the keys and values of ops as Update takes them.
func Split(ops []MPTOp) (keys, values [][]byte) {
	keys, values = make([][]byte, len(ops)), make([][]byte, len(ops))
	for i, o := range ops {
		keys[i], values[i] = o.Key, o.Value
	}
	return keys, values
}

// MPTFile formats ops as `warpkv mpt` input: one "0xKEY VALUE" line per
// insert and one "0xKEY" line per delete (alternating with "0xKEY 0x", the
// other way to write a delete), with a comment line between sections.
func MPTFile(s MPTScenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", s.Name)
	n := 0
	for i, sec := range s.Sections {
		if i > 0 {
			fmt.Fprintf(&b, "# section %d\n", i)
		}
		for _, o := range sec {
			switch {
			case len(o.Value) > 0:
				fmt.Fprintf(&b, "0x%x %x\n", o.Key, o.Value)
			case n%2 == 0:
				fmt.Fprintf(&b, "0x%x\n", o.Key)
			default:
				fmt.Fprintf(&b, "0x%x 0x\n", o.Key)
			}
			n++
		}
	}
	return b.String()
}

// MPTModel applies ops to a map from key to value (the set every engine's
// trie must hold afterwards).
func MPTModel(model map[string][]byte, ops []MPTOp) {
	for _, o := range ops {
		if len(o.Value) == 0 {
			delete(model, string(o.Key))
		} else {
			model[string(o.Key)] = o.Value
		}
	}
}

// MPTEdgeScenarios returns the edge-case scenarios, their random keys and
// values drawn from r (keys of at most 40 bytes, which every engine takes).
// Cost: a few hundred operations in all.
func MPTEdgeScenarios(r *rand.Rand) []MPTScenario {
	g := &edgeGen{r: r}
	scenarios := []MPTScenario{
		g.deletesOnEmpty(),
		g.cancelOut(),
		g.deleteAllInsertAgain(),
		g.alternating(),
		g.collapse(),
		g.inlined(),
		g.unchanged(),
	}
	for i := range scenarios {
		scenarios[i].Probes = probes(r, scenarios[i])
	}
	return scenarios
}

// edgeGen draws the scenarios' keys and values.
type edgeGen struct {
	r *rand.Rand
}

func (g *edgeGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

// value returns a value of one of the sizes that matter to the encoding:
// a single byte below 0x80 (its own RLP string), a single byte above, a
// few bytes (a leaf under 32 bytes, inlined in its parent), around 32
// bytes (the inlining boundary), and long ones (55+ bytes: a long string
// header).
func (g *edgeGen) value() []byte {
	switch g.r.IntN(6) {
	case 0:
		return []byte{byte(g.r.IntN(0x80))}
	case 1:
		return []byte{0x80 + byte(g.r.IntN(0x80))}
	case 2:
		return g.bytes(2 + g.r.IntN(6))
	case 3:
		return g.bytes(24 + g.r.IntN(16))
	default:
		return g.bytes(55 + g.r.IntN(100))
	}
}

// small returns a value of 1 to 3 bytes (leaves and small branches then
// encode in under 32 bytes and are inlined in their parents).
func (g *edgeGen) small() []byte { return g.bytes(1 + g.r.IntN(3)) }

// key returns a random key of 1 to 40 bytes.
func (g *edgeGen) key() []byte { return g.bytes(1 + g.r.IntN(40)) }

// keys returns n distinct random keys, some sharing prefixes.
func (g *edgeGen) keys(n int) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	for len(out) < n {
		var k []byte
		if len(out) > 0 && g.r.IntN(3) == 0 { // extend or cut an earlier key
			base := out[g.r.IntN(len(out))]
			if g.r.IntN(2) == 0 {
				k = append(slices.Clone(base), g.bytes(1+g.r.IntN(3))...)
			} else {
				k = slices.Clone(base[:g.r.IntN(len(base)+1)])
			}
		} else {
			k = g.key()
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

func inserts(keys [][]byte, value func() []byte) []MPTOp {
	ops := make([]MPTOp, len(keys))
	for i, k := range keys {
		ops[i] = MPTOp{k, value()}
	}
	return ops
}

func deletes(keys [][]byte) []MPTOp {
	ops := make([]MPTOp, len(keys))
	for i, k := range keys {
		ops[i] = MPTOp{Key: k}
	}
	return ops
}

func (g *edgeGen) shuffled(ops []MPTOp) []MPTOp {
	ops = slices.Clone(ops)
	g.r.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	return ops
}

// deletesOnEmpty: deletes of absent keys on a fresh trie (one, several,
// the empty key), inserts, then delete-only sections on the non-empty
// trie: of absent keys (nothing changes), then of present ones.
func (g *edgeGen) deletesOnEmpty() MPTScenario {
	ks := g.keys(12)
	absent := g.keys(6)
	absent = slices.DeleteFunc(absent, func(k []byte) bool { return slices.ContainsFunc(ks, func(p []byte) bool { return bytes.Equal(p, k) }) })
	return MPTScenario{Name: "deletes-on-empty", Sections: [][]MPTOp{
		deletes(ks[:1]),
		append(deletes(ks[1:5]), MPTOp{Key: []byte{}}),
		inserts(ks, g.value),
		deletes(absent),
		deletes(ks[:6]),
		deletes(ks[6:]),
		deletes(ks[:3]),
	}}
}

// cancelOut: sections whose inserts are all undone by deletes of the same
// keys in the same section, on an empty and on a non-empty trie, each
// followed by inserts only (where the GPU engine may pick LockNU, which
// must then start from the right root).
func (g *edgeGen) cancelOut() MPTScenario {
	a, b := g.keys(6), g.keys(10)
	var cancel []MPTOp
	for _, k := range a[:3] {
		cancel = append(cancel, MPTOp{k, g.value()}, MPTOp{Key: k})
	}
	interleaved := append(inserts(a[3:], g.value), deletes(a[3:])...)
	var cancelNonEmpty []MPTOp
	for _, k := range a {
		cancelNonEmpty = append(cancelNonEmpty, MPTOp{k, g.value()})
	}
	cancelNonEmpty = append(cancelNonEmpty, deletes(a)...)
	return MPTScenario{Name: "cancel-out", Sections: [][]MPTOp{
		{{[]byte{0x01}, []byte{0x02}}, {Key: []byte{0x01}}}, // the case
		inserts(b[:1], g.value),
		{{b[0], nil}},
		cancel,
		interleaved,
		inserts(b[:5], g.value),
		cancelNonEmpty,
		inserts(b[5:], g.value),
		append(inserts(b[:2], g.value), deletes(b[:2])...), // overwrites of present keys, then deletes
		inserts(a[:2], g.value),
	}}
}

// deleteAllInsertAgain: fill, delete everything, insert again (old and
// new keys), then delete everything and insert in one section, and end
// empty.
func (g *edgeGen) deleteAllInsertAgain() MPTScenario {
	ks := g.keys(24)
	first, second := ks[:16], ks[8:]
	return MPTScenario{Name: "delete-all-insert-again", Sections: [][]MPTOp{
		inserts(first, g.value),
		g.shuffled(deletes(first)),
		inserts(second, g.value),
		append(deletes(second), inserts(first[:5], g.value)...),
		deletes(ks),
		inserts(ks[:1], g.value),
		deletes(ks[:1]),
	}}
}

// alternating: the same keys inserted and deleted over and over within a
// section, ending on an insert for some keys and on a delete for others,
// on an empty trie and then on a non-empty one.
func (g *edgeGen) alternating() MPTScenario {
	ks := g.keys(8)
	round := func(keys [][]byte) []MPTOp {
		var ops []MPTOp
		for rep := range 5 {
			for i, k := range keys {
				if (rep+i)%2 == 0 || rep == 4 && i%3 == 0 {
					ops = append(ops, MPTOp{k, g.value()})
				} else {
					ops = append(ops, MPTOp{Key: k})
				}
			}
		}
		return ops
	}
	return MPTScenario{Name: "alternating", Sections: [][]MPTOp{
		round(ks[:4]),
		inserts(ks[4:], g.value),
		round(ks),
		round(ks[2:6]),
	}}
}

// collapse: keys from a two-nibble alphabet (0 and 1 in each nibble) of 0
// to 3 bytes, so that branches hold values and one-nibble children;
// deleting them in random order collapses branches into extensions (one
// branch child left), into leaves (one leaf child left, merged with its
// path) and into leaves of an empty path (only the value left). Then
// some fixed shapes: a branch under an extension losing all but one
// child, and a branch losing its children down to its value.
func (g *edgeGen) collapse() MPTScenario {
	var ks [][]byte
	var rec func(prefix []byte, depth int)
	rec = func(prefix []byte, depth int) {
		ks = append(ks, slices.Clone(prefix))
		if depth == 2 {
			return
		}
		for _, b := range []byte{0x00, 0x01, 0x10, 0x11} {
			if g.r.IntN(3) > 0 || depth == 0 {
				rec(append(prefix, b), depth+1)
			}
		}
	}
	rec(nil, 0)
	all := inserts(ks, g.value)
	var sections [][]MPTOp
	sections = append(sections, all)
	order := g.shuffled(deletes(ks))
	for lo := 0; lo < len(order); lo += 3 {
		sections = append(sections, order[lo:min(lo+3, len(order))])
	}
	ext := [][]byte{{0x12, 0x34}, {0x12, 0x35}, {0x12, 0x36, 0x01}, {0x12, 0x44}, {0x12}}
	sections = append(sections,
		inserts(ext, g.small),
		deletes(ext[3:4]), // 0x12's branch keeps its value and its 0x123 branch
		deletes(ext[4:]),  // then loses its value: one branch child left, an extension
		deletes(ext[:2]),  // 0x123's branch keeps one leaf: extension and leaf merge
		inserts(ext, g.value),
		deletes(ext[:4]), // only the shortest key: a single leaf
		inserts([][]byte{{0xab}, {0xab, 0xcd}, {0xab, 0xce}}, g.small),
		deletes([][]byte{{0xab, 0xcd}, {0xab, 0xce}}), // the branch keeps only its value: a leaf of empty path, merged
	)
	return MPTScenario{Name: "collapse", Sections: sections}
}

// inlined: short keys and 1-to-3-byte values, so that leaves and even
// branches encode in under 32 bytes and are inlined in their parents,
// with inserts, overwrites and deletes across sections.
func (g *edgeGen) inlined() MPTScenario {
	var ks [][]byte
	for range 20 {
		k := make([]byte, g.r.IntN(3))
		for i := range k {
			k[i] = byte(g.r.IntN(3)) * 0x11
		}
		ks = append(ks, k)
	}
	var sections [][]MPTOp
	for range 6 {
		var sec []MPTOp
		for range 1 + g.r.IntN(8) {
			k := ks[g.r.IntN(len(ks))]
			if g.r.IntN(3) == 0 {
				sec = append(sec, MPTOp{Key: k})
			} else {
				sec = append(sec, MPTOp{k, g.small()})
			}
		}
		sections = append(sections, sec)
	}
	return MPTScenario{Name: "inlined", Sections: sections}
}

// unchanged: sections that leave a non-empty trie as it was: the same
// pairs again, deletes of absent keys, an insert and a delete of a new key,
// overwrites that end on the old value.
func (g *edgeGen) unchanged() MPTScenario {
	ks := g.keys(10)
	pairs := inserts(ks[:8], g.value)
	var back []MPTOp
	for _, p := range pairs[:4] {
		back = append(back, MPTOp{p.Key, g.value()}, p)
	}
	return MPTScenario{Name: "unchanged", Sections: [][]MPTOp{
		pairs,
		slices.Clone(pairs),
		deletes(ks[8:]),
		{{ks[9], g.value()}, {Key: ks[9]}},
		back,
		append(deletes(ks[8:]), pairs[:2]...),
	}}
}

// probes returns the keys a scenario looks up and proves after every
// batch: every key it touches, the empty key, and keys it never stores (a
// random one, one extending a stored key, one cutting it short, and one
// of 0xff bytes).
func probes(r *rand.Rand, s MPTScenario) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	add := func(k []byte) {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	add([]byte{})
	ops := s.Ops()
	for _, o := range ops {
		add(o.Key)
	}
	for range 3 {
		k := make([]byte, 1+r.IntN(32))
		for i := range k {
			k[i] = byte(r.Uint32())
		}
		add(k)
		if len(ops) > 0 {
			base := ops[r.IntN(len(ops))].Key
			add(append(slices.Clone(base), byte(r.Uint32())))
			if len(base) > 0 {
				add(slices.Clone(base[:len(base)-1]))
			}
		}
	}
	add(bytes.Repeat([]byte{0xff}, 20))
	return out
}

// HexKey formats a key as `warpkv mpt prove` takes it.
func HexKey(k []byte) string { return "0x" + hex.EncodeToString(k) }
