package art

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

func TestDebugReplay(t *testing.T) {
	seed, err := strconv.ParseUint(os.Getenv("DBG_SEED"), 10, 64)
	if err != nil {
		t.Skip()
	}
	name := os.Getenv("DBG_CASE")
	var gen func(*rand.Rand, int, *model) batch
	switch name {
	case "nested":
		gen = randomBatches(func(r *rand.Rand) []byte { return randomBytes(r, 0, 12, []byte("ab")) }, 300, defaultMix)
		name = "keys that are prefixes of each other"
	case "long":
		gen = randomBatches(func(r *rand.Rand) []byte {
			p := []int{100, 500, 1200}[r.IntN(3)]
			k := make([]byte, p)
			for i := range k {
				k[i] = byte('p' + p%7)
			}
			return append(k, randomBytes(r, 0, 12, []byte("xyz\x00\xff"))...)
		}, 400, defaultMix)
		name = "long shared prefixes"
	}
	r := rand.New(rand.NewPCG(seed, uint64(len(name))))
	m := newModel()
	tr, _ := New(Options{Device: "cpu", Workers: 1})
	s := &subject{tr}
	for step := 0; step < 40; step++ {
		b := gen(r, step, m)
		if step == 9 {
			st := tr.eng.(*cpuEngine).s
			for _, i := range []uint64{0x72, 0x7d, 0x80, 0x8b} {
				if i < st.pools[kindN4].hwm {
					r := st.rec(link(kindN4, 0, i))
					t.Logf("pre N4 %#x: plen %d count %d prefix %x term %#x parent %#x kids %#x", i, plenOf(r), countOf(r), prefixBytes(r), r[wTerm], r[wParent], r[4:8])
				}
			}
			t.Logf("free N4: %v", st.pools[kindN4].free)
		}
		m.Apply(b)
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		if err := tr.Check(); err != nil {
			t.Logf("step %d op %s keys %d: %v", step, opNames[b.op], len(b.keys), err)
			if len(b.keys) < 50 {
				for _, k := range b.keys {
					t.Logf("  %x", k)
				}
			}
			st := tr.eng.(*cpuEngine).s
			for _, i := range []uint64{0x72, 0x7d, 0x80, 0x8b} {
				r := st.rec(link(kindN4, 0, i))
				t.Logf("post N4 %#x: plen %d count %d prefix %x term %#x parent %#x kids %#x", i, plenOf(r), countOf(r), prefixBytes(r), r[wTerm], r[wParent], r[4:8])
			}
			t.FailNow()
		}
		if err := sameContents(m, s); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		t.Logf("step %d %s %d ok, len %d width %d", step, opNames[b.op], len(b.keys), tr.Len(), tr.Width())
	}
}
