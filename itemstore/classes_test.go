package itemstore

import (
	"errors"
	"math"
	"testing"
)

// TestDefaultClassTable checks the first classes against memcached 1.6's
// defaults (-n 48 -f 1.25, 48-byte header, 1 MiB pages).
func TestDefaultClassTable(t *testing.T) {
	s := newStore(t, Options{})
	want := []struct{ size, perPage int }{
		{96, 10922}, {120, 8738}, {152, 6898}, {192, 5461}, {240, 4369},
		{304, 3449}, {384, 2730}, {480, 2184}, {600, 1747}, {752, 1394},
		{944, 1110}, {1184, 885},
	}
	cs := s.Classes()
	for i, w := range want {
		if cs[i].Class != i+1 || cs[i].ChunkSize != w.size || cs[i].ChunksPerPage != w.perPage {
			t.Errorf("class %d: got %+v, want chunk size %d, %d per page", i+1, cs[i], w.size, w.perPage)
		}
	}
	last := cs[len(cs)-1]
	if last.ChunkSize != 1<<20 || last.ChunksPerPage != 1 {
		t.Errorf("last class %+v, want one 1 MiB chunk per page", last)
	}
}

// TestClassTableInvariants checks, for several option sets, that chunk
// sizes are 8-byte aligned, start at header + ChunkMin, grow by about the
// factor (at least 8 bytes) up to half a page, and end with a page.
func TestClassTableInvariants(t *testing.T) {
	cases := []struct {
		name string
		o    Options
	}{
		{"defaults", Options{}},
		{"factor 1.01 hits the class cap", Options{GrowthFactor: 1.01}},
		{"factor 1.001 grows by 8 bytes", Options{GrowthFactor: 1.001}},
		{"factor 2", Options{GrowthFactor: 2}},
		{"chunk min 1", Options{ChunkMin: 1}},
		{"chunk min 1000", Options{ChunkMin: 1000}},
		{"4 MiB items", Options{ItemSizeMax: 4 << 20, MemoryLimit: 64 << 20}},
		{"1 KiB items keep 1 MiB pages", Options{ItemSizeMax: 1 << 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.o)
			f := s.cfg.factor
			page := s.PageSize()
			if want := max(1<<20, s.ItemSizeMax()); page != want {
				t.Fatalf("page size %d, want %d", page, want)
			}
			cs := s.Classes()
			if len(cs) > MaxClasses || len(cs) < 2 {
				t.Fatalf("%d classes", len(cs))
			}
			if want := align8(headerSize + s.cfg.chunkMin); cs[0].ChunkSize != want {
				t.Errorf("first chunk %d, want %d", cs[0].ChunkSize, want)
			}
			for i, cl := range cs {
				if cl.ChunkSize%8 != 0 || cl.ChunksPerPage != page/cl.ChunkSize || cl.Class != i+1 {
					t.Errorf("class %+v: misaligned or wrong count", cl)
				}
				if i == 0 || i == len(cs)-1 {
					continue
				}
				prev := float64(cs[i-1].ChunkSize)
				lo, hi := prev*f-1, max(prev*f, prev+8)+8
				if got := float64(cl.ChunkSize); got < lo || got > hi || got < prev+8 {
					t.Errorf("class %d: %v after %v, want %.1f to %.1f", i+1, got, prev, lo, hi)
				}
			}
			last, grown := cs[len(cs)-1], cs[len(cs)-2]
			if last.ChunkSize != page || grown.ChunkSize > page/2 {
				t.Errorf("last two classes %d, %d with %d-byte pages", grown.ChunkSize, last.ChunkSize, page)
			}
			next := align8(max(int(float64(grown.ChunkSize)*f), grown.ChunkSize+8))
			if next <= page/2 && len(cs) != MaxClasses {
				t.Errorf("growth stopped at %d with %d classes though %d fits", grown.ChunkSize, len(cs), next)
			}
		})
	}
}

// TestClassFor checks which class items of given lengths go to, and the
// lengths that fit none.
func TestClassFor(t *testing.T) {
	s := newStore(t, Options{ItemSizeMax: 4 << 20, MemoryLimit: 64 << 20}) // 4 MiB pages
	small := newStore(t, Options{ItemSizeMax: 1 << 10})                    // 1 MiB pages, 1 KiB values
	last := len(s.Classes())
	cases := []struct {
		name          string
		s             *Store
		keyLen, value int
		class         int
		ok            bool
	}{
		{"empty value", s, 1, 0, 1, true},
		{"exact fit of the first chunk", s, 10, 38, 1, true},
		{"one byte over the first chunk", s, 10, 39, 2, true},
		{"longest key", s, MaxKeyLen, 0, 6, true},
		{"largest item that fits a page", s, 1, 4<<20 - headerSize - 1, last, true},
		{"one byte more than a page", s, 2, 4<<20 - headerSize - 1, 0, false},
		{"value of ItemSizeMax does not fit with its header", s, 1, 4 << 20, 0, false},
		{"empty key", s, 0, 10, 0, false},
		{"key too long", s, MaxKeyLen + 1, 10, 0, false},
		{"negative value", s, 1, -1, 0, false},
		{"value at ItemSizeMax", small, 1, 1 << 10, 0, true},
		{"value over ItemSizeMax but within a page", small, 1, 1<<10 + 1, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class, ok := c.s.ClassFor(c.keyLen, c.value)
			if ok != c.ok || (c.class != 0 && class != c.class) {
				t.Fatalf("ClassFor(%d, %d) = %d, %v; want %d, %v", c.keyLen, c.value, class, ok, c.class, c.ok)
			}
			if ok && c.s.Classes()[class-1].ChunkSize < itemSize(c.keyLen, c.value) {
				t.Fatalf("class %d too small for %d bytes", class, itemSize(c.keyLen, c.value))
			}
		})
	}
}

// TestNewRejects checks that New refuses out-of-bounds options and accepts
// the bounds themselves.
func TestNewRejects(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"defaults", Options{}, true},
		{"negative limit", Options{MemoryLimit: -1}, false},
		{"limit under one page", Options{MemoryLimit: 1<<20 - 1}, false},
		{"limit of one page", Options{MemoryLimit: 1 << 20}, true},
		{"limit under one large page", Options{MemoryLimit: 2 << 20, ItemSizeMax: 4 << 20}, false},
		{"item size max too small", Options{ItemSizeMax: 1<<10 - 1}, false},
		{"item size max too large", Options{ItemSizeMax: 1<<30 + 1}, false},
		{"item size max 1 GiB", Options{ItemSizeMax: 1 << 30, MemoryLimit: 1 << 30}, true},
		{"factor 1", Options{GrowthFactor: 1}, false},
		{"factor below 1", Options{GrowthFactor: 0.5}, false},
		{"factor NaN", Options{GrowthFactor: math.NaN()}, false},
		{"factor infinite", Options{GrowthFactor: math.Inf(1)}, false},
		{"negative chunk min", Options{ChunkMin: -1}, false},
		{"chunk min past half a page", Options{ChunkMin: 1<<19 - headerSize + 1}, false},
		{"chunk min at half a page", Options{ChunkMin: 1<<19 - headerSize}, true},
		{"256 GiB: 2^18 pages of 14-bit chunk indices", Options{MemoryLimit: 256 << 30}, true},
		{"256 GiB and a page: not addressable", Options{MemoryLimit: 256<<30 + 1<<20}, false},
		{"64-byte chunks: 2^14 per page leave 2^18-1 pages", Options{ChunkMin: 16, MemoryLimit: 256<<30 - 1<<20}, true},
		{"64-byte chunks: 2^18 pages would reach NotFound", Options{ChunkMin: 16, MemoryLimit: 256 << 30}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.o)
			if (err == nil) != c.ok {
				t.Fatalf("New(%+v): error %v, want ok %v", c.o, err, c.ok)
			}
			if err == nil {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); !errors.Is(err, ErrClosed) {
					t.Fatalf("second Close: %v, want ErrClosed", err)
				}
			}
		})
	}
}
