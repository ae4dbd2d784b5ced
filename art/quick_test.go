package art

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestQuick(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr, err := New(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]uint64{}
	mode := 0
	gen := func() []byte {
		switch mode {
		case 0:
			n := r.IntN(6)
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('a' + r.IntN(3))
			}
			return b
		case 1:
			n := r.IntN(50)
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			if n > 3 && r.IntN(2) == 0 {
				copy(b, "commonprefixthatislong")
			}
			return b
		default:
			b := []byte(fmt.Sprintf("k%05d", r.IntN(3000)))
			return b
		}
	}
	for step := range 600 {
		mode = (step / 100) % 3
		n := 1 + r.IntN(400)
		keys := make([][]byte, n)
		vals := make([]uint64, n)
		for i := range keys {
			keys[i] = gen()
			vals[i] = r.Uint64()
		}
		if r.IntN(3) == 0 {
			if _, err := tr.Delete(keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				delete(model, string(k))
			}
		} else {
			if err := tr.Insert(keys, vals); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				model[string(k)] = vals[i]
			}
		}
		if err := tr.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if tr.Len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, tr.Len(), len(model))
		}
		var mk []string
		for k := range model {
			mk = append(mk, k)
		}
		sort.Strings(mk)
		ks, vs, err := tr.Range(nil, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ks) != len(mk) {
			t.Fatalf("step %d: range %d keys, want %d", step, len(ks), len(mk))
		}
		for i := range ks {
			if !bytes.Equal(ks[i], []byte(mk[i])) || vs[i] != model[mk[i]] {
				t.Fatalf("step %d: key %d %q=%d want %q=%d", step, i, ks[i], vs[i], mk[i], model[mk[i]])
			}
		}
		got, found, _ := tr.Get([][]byte{[]byte("ab"), []byte("")})
		for i, k := range []string{"ab", ""} {
			v, ok := model[k]
			if ok != found[i] || v != got[i] {
				t.Fatalf("step %d: get %q", step, k)
			}
		}
	}
	fmt.Println("ok", tr.Len())
}
