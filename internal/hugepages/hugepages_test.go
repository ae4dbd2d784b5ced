package hugepages

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestAdviseLeavesTheArrayWorking: advised arrays of several sizes and
// element types read back what was written, small ones are left alone,
// and where the kernel takes the advice (THP in madvise or always mode)
// a large array filled after it is backed by huge pages, as
// /proc/self/smaps reports.
func TestAdviseLeavesTheArrayWorking(t *testing.T) {
	Advise([]byte(nil))
	Advise(make([]uint64, 10))
	for _, n := range []int{Size/8 - 1, 2 * Size / 8, 5*Size/8 + 3} {
		s := make([]uint64, n)
		Advise(s)
		for i := range s {
			s[i] = uint64(i)
		}
		for i := range s {
			if s[i] != uint64(i) {
				t.Fatalf("%d words: word %d reads %d", n, i, s[i])
			}
		}
	}
	type rec struct {
		a, b uint64
		p    []int
	}
	r := make([]rec, 3*Size/40)
	Advise(r)
	r[len(r)-1] = rec{a: 1, b: 2, p: []int{3}}
	if last := r[len(r)-1]; last.a+last.b != 3 || last.p[0] != 3 || r[0].p != nil {
		t.Fatalf("records read back %+v, first %+v", last, r[0])
	}
	if runtime.GOOS != "linux" {
		return
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Skipf("transparent huge pages not on for madvise here (%q)", mode)
	}
	s := make([]uint64, 64*Size/8)
	Advise(s)
	for i := range s {
		s[i] = 1
	}
	smaps, err := os.ReadFile("/proc/self/smaps_rollup")
	runtime.KeepAlive(s)
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			if f[1] == "0" {
				t.Logf("no huge pages after advice (the kernel may have none free): %s", line)
			}
			return
		}
	}
}

// TestTouchStoresZerosOnly: Touch leaves every element zero, on arrays of
// several sizes, element types and worker counts, including more workers
// than pages and elements larger than a page.
func TestTouchStoresZerosOnly(t *testing.T) {
	Touch([]uint64(nil), 4)
	for _, n := range []int{1, 511, 512, 513, 3*Size/8 + 5} {
		for _, w := range []int{0, 1, 3, 64} {
			s := make([]uint64, n)
			Touch(s, w)
			for i, v := range s {
				if v != 0 {
					t.Fatalf("%d words, %d workers: word %d reads %d", n, w, i, v)
				}
			}
		}
	}
	type big struct {
		a [5000]byte
		p []int
	}
	b := make([]big, 7)
	Touch(b, 3)
	for i := range b {
		if b[i].p != nil || b[i].a[4999] != 0 {
			t.Fatalf("element %d not zero", i)
		}
	}
}
