package gpu_test

import (
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGrowableReusesSpareMemory frees Growables into the device's spare
// memory and grows others from it, on a device of its own (so that no
// other test's spare memory counts): a freed Growable's bytes become
// spare; a growth takes the smallest spare chunk that holds it (not one
// more than twice its size), else spare chunks that fit and a new chunk
// for the rest; the reused memory reads back what is written into it;
// the limit releases what passes it, ReleaseSpare everything, and Close
// what is left.
func TestGrowableReusesSpareMemory(t *testing.T) {
	gputest.Device(t) // skip or fail consistently
	d, err := gpu.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	gran, err := d.VMMGranularity()
	if err != nil {
		gputest.Unavailable(t, err.Error())
	}
	spare := func(want int64, when string) {
		t.Helper()
		if got := d.SpareBytes(); got != want*gran {
			t.Fatalf("%s: %d spare bytes, want %d granules (%d)", when, got, want, want*gran)
		}
	}
	// grown returns a Growable grown by steps of the given granules: one
	// chunk a step.
	grown := func(steps ...int64) *gpu.Growable {
		t.Helper()
		g := growable(t, d, 64*gran)
		var total int64
		for _, s := range steps {
			total += s
			if err := g.Grow(total * gran); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	free := func(g *gpu.Growable) {
		t.Helper()
		if err := g.Free(); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip := func(g *gpu.Growable, seed uint32) {
		t.Helper()
		n := int(g.Mapped() / 4)
		want := make([]uint32, n)
		for i := range want {
			want[i] = uint32(i)*2654435761 + seed
		}
		v := gpu.GrowableView[uint32](g, n)
		if err := v.Write(nil, 0, want); err != nil {
			t.Fatal(err)
		}
		got, err := v.Download()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("word %d of %d = %d, want %d", i, n, got[i], want[i])
			}
		}
	}

	spare(0, "a new device")
	free(grown(2, 3, 5))
	spare(10, "after freeing chunks of 2, 3 and 5 granules")

	g := grown(4) // the 5-granule chunk: the smallest that holds 4
	if g.Mapped() != 5*gran {
		t.Fatalf("a growth of 4 granules mapped %d bytes, want the 5-granule chunk (%d)", g.Mapped(), 5*gran)
	}
	spare(5, "after reusing the 5-granule chunk")
	roundTrip(g, 1)
	free(g)
	spare(10, "after freeing it again")

	g = grown(11) // the 5, 3 and 2 chunks (largest first) and a new granule
	if g.Mapped() != 11*gran {
		t.Fatalf("a growth of 11 granules mapped %d bytes, want %d", g.Mapped(), 11*gran)
	}
	spare(0, "after a growth larger than every chunk")
	roundTrip(g, 2)
	free(g)
	spare(11, "after freeing the 11 granules (4 chunks)")

	g = grown(1) // the 1-granule chunk created for the 11's rest
	if g.Mapped() != gran {
		t.Fatalf("a growth of 1 granule mapped %d bytes, want the 1-granule chunk (%d)", g.Mapped(), gran)
	}
	roundTrip(g, 3)
	free(g)

	if err := d.SetSpareLimit(4 * gran); err != nil {
		t.Fatal(err)
	}
	if got := d.SpareBytes(); got > 4*gran {
		t.Fatalf("%d spare bytes past a limit of %d", got, 4*gran)
	}
	if err := d.ReleaseSpare(); err != nil {
		t.Fatal(err)
	}
	spare(0, "after ReleaseSpare")
	free(grown(3))
	spare(3, "after freeing 3 granules under a limit of 4")
	free(grown(2))
	spare(3, "after freeing 2 more granules under a limit of 4 (released)")

	if err := d.SetSpareLimit(0); err != nil {
		t.Fatal(err)
	}
	spare(0, "with a limit of 0")
	free(grown(1))
	spare(0, "after a free with a limit of 0")

	if err := d.SetSpareLimit(-1); err != nil { // the default again
		t.Fatal(err)
	}
	free(grown(2))
	spare(2, "before Close")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	spare(0, "after Close")
}
