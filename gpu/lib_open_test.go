package gpu

import (
	"strings"
	"sync"
	"testing"
)

// TestOpenFirstAlwaysSaysWhy loads libraries that do not exist from many
// goroutines at once: every error must give a reason for each candidate
// (dlerror is per thread, so a goroutine moved between dlopen and dlerror
// used to read an empty one: "libcuda.so): ;").
func TestOpenFirstAlwaysSaysWhy(t *testing.T) {
	names := []string{"libwarpkv-missing-a.so.1", "/nonexistent/libwarpkv-missing-b.so"}
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = openFirst("test library", names) })
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Fatalf("load %d of a missing library succeeded", i)
		}
		_, reasons, ok := strings.Cut(err.Error(), "): ")
		if !ok {
			t.Fatalf("load %d: %q has no reasons", i, err)
		}
		for _, r := range strings.Split(reasons, "; ") {
			if strings.TrimSpace(r) == "" {
				t.Fatalf("load %d: an empty reason in %q", i, err)
			}
		}
	}
}
