package phrase

import "testing"

func TestOrJoinsTheLastWordWithOr(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"cpu"}, "cpu"},
		{[]string{"load", "fixed"}, "load or fixed"},
		{[]string{"callers", "concurrent", "scheduler"}, "callers, concurrent or scheduler"},
		{[]string{"default", "off", "check", "claims"}, "default, off, check or claims"},
	} {
		if got := Or(tc.words); got != tc.want {
			t.Errorf("Or(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
}
