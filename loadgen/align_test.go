package loadgen

import "testing"

func TestAlignRows(t *testing.T) {
	for _, tc := range []struct {
		rows [][]string
		want string
	}{
		{nil, ""},
		{[][]string{{"a", "bb", "1", "22"}, {"ccc", "d", "333", "4"}},
			"a    bb    1  22\n" +
				"ccc  d   333   4\n"},
		{[][]string{{"workload", "x", "12"}, {"µs", "", "1"}, {"z"}},
			"workload  x  12\n" +
				"µs            1\n" +
				"z\n"},
	} {
		if got := AlignRows(tc.rows); got != tc.want {
			t.Errorf("AlignRows(%q) =\n%q, want\n%q", tc.rows, got, tc.want)
		}
	}
}
