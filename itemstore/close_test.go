//go:build linux

package itemstore

import (
	"errors"
	"syscall"
	"testing"
	"unsafe"
)

// mapped reports whether the page at addr (page-aligned) is mapped in this
// process: mincore fails with ENOMEM on unmapped memory.
func mapped(addr unsafe.Pointer) bool {
	var vec [1]byte
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(addr), 4096, uintptr(unsafe.Pointer(&vec[0])))
	return errno != syscall.ENOMEM
}

// TestCloseUnmaps checks that Close unmaps every page and that the store
// refuses use afterwards.
func TestCloseUnmaps(t *testing.T) {
	s, err := New(Options{MemoryLimit: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var locs []uint32
	for i, vlen := range []int{10, 100, 1000, 10000, 100000} {
		loc, _ := setRelease(t, s, i, vlen, 1, 0, 0)
		locs = append(locs, loc)
	}
	var bases []unsafe.Pointer
	for i := range s.npages {
		bases = append(bases, s.table.Load().pages[i].Load().base)
	}
	if len(bases) != 5 {
		t.Fatalf("%d pages mapped, want 5", len(bases))
	}
	for _, b := range bases {
		if !mapped(b) {
			t.Fatal("page not mapped before Close")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, b := range bases {
		if mapped(b) {
			t.Errorf("page %d still mapped after Close", i)
		}
	}
	if st := s.Stats(); st.Pages != 0 || st.PageBytes != 0 {
		t.Errorf("stats after Close: %+v", st)
	}
	for _, loc := range locs {
		if _, ok := s.Acquire(loc); ok {
			t.Errorf("Acquire(%x) after Close succeeded", loc)
		}
		if s.Unlink(loc, 0) {
			t.Errorf("Unlink(%x) after Close succeeded", loc)
		}
	}
	if _, _, err := s.Alloc(1, []byte("k"), 1, 0, 0, 0, 0, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v, want ErrClosed", err)
	}
}
