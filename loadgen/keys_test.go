package loadgen

import "testing"

func TestPutKey(t *testing.T) {
	for _, tc := range []struct {
		i    uint64
		size int
		want string
	}{
		{0, 8, "k0000000"},
		{255, 8, "k00000ff"},
		{1<<28 - 1, 8, "kfffffff"},
		{99999, 16, "k00000000001869f"},
	} {
		b := make([]byte, tc.size)
		putKey(b, tc.i)
		if string(b) != tc.want {
			t.Errorf("putKey(%d, %d) = %q, want %q", tc.i, tc.size, b, tc.want)
		}
	}
}

func TestMinKeySize(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{1, 2}, {16, 2}, {17, 3}, {1 << 28, 8}, {1<<28 + 1, 9}} {
		if got := minKeySize(tc.n); got != tc.want {
			t.Errorf("minKeySize(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
