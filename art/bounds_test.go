package art

import (
	"bytes"
	"errors"
	"testing"
)

// TestPackQueriesBounds checks that packing a batch of queries fails with
// the first query whose bound is longer than a key can be (a lower bound
// of MaxKeyLen+1 bytes, an upper one of MaxKeyLen+2), as Tree.query's
// check does, both when every bound has the first query's lengths (one
// pass) and when they differ (sized first, in parts); and that bounds at
// the limits pack.
func TestPackQueriesBounds(t *testing.T) {
	long, longer := bytes.Repeat([]byte{1}, MaxKeyLen+1), bytes.Repeat([]byte{2}, MaxKeyLen+2)
	host := func(n int) ([]byte, error) { return make([]byte, n), nil }
	batch := func(q int, lo, hi []byte) []Query {
		qs := make([]Query, q)
		for i := range qs {
			qs[i] = Query{Lo: lo, Hi: hi}
		}
		return qs
	}
	mixed := func(q, at int, bad Query) []Query {
		qs := make([]Query, q)
		for i := range qs {
			qs[i] = Query{Lo: []byte{byte(i), 1, 2}, Hi: []byte{byte(i), 9}}
			if i%3 == 0 {
				qs[i].Hi = nil
			}
		}
		qs[at] = bad
		return qs
	}
	for _, c := range []struct {
		name string
		qs   []Query
		want *boundErr
	}{
		{"same lengths, lower bounds too long", batch(10, long, nil), &boundErr{0, MaxKeyLen + 1}},
		{"same lengths, upper bounds too long", batch(10, []byte("a"), longer), &boundErr{0, MaxKeyLen + 2}},
		{"same lengths at the limits", batch(10, long[:MaxKeyLen], long), nil},
		{"mixed, a lower bound too long", mixed(20000, 15000, Query{Lo: long}), &boundErr{15000, MaxKeyLen + 1}},
		{"mixed, an upper bound too long", mixed(20000, 3, Query{Hi: longer}), &boundErr{3, MaxKeyLen + 2}},
		{"mixed, two", append(mixed(9000, 8000, Query{Lo: long}), mixed(9000, 100, Query{Hi: longer})...), &boundErr{8000, MaxKeyLen + 1}},
		{"mixed at the limits", mixed(20000, 7, Query{Lo: long[:MaxKeyLen], Hi: long}), nil},
	} {
		_, _, err := packQueries(c.qs, 16, host)
		var be *boundErr
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != nil && (!errors.As(err, &be) || *be != *c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if cerr := checkBounds(c.qs); (cerr == nil) != (c.want == nil) || (cerr != nil && cerr.Error() != c.want.Error()) {
			t.Errorf("%s: checkBounds %v, want %v", c.name, cerr, c.want)
		}
	}
	if got := asBoundErr(&boundErr{3, 9}, 100); got == nil || got.Error() != (&boundErr{103, 9}).Error() {
		t.Errorf("asBoundErr moved by 100: %v", got)
	}
}
