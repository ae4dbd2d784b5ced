package gpu

import (
	"fmt"
	"slices"
	"testing"
)

// hostMarker stands in for a slot's event: it logs records and waits.
type hostMarker struct {
	id  int
	log *[]string
}

func (m *hostMarker) Record(*Stream) error {
	*m.log = append(*m.log, fmt.Sprintf("record %d", m.id))
	return nil
}
func (m *hostMarker) Synchronize() error {
	*m.log = append(*m.log, fmt.Sprintf("wait %d", m.id))
	return nil
}
func (m *hostMarker) Close() error { return nil }

// hostRing returns a pipeline whose ring of chunks is Go memory with
// host markers, to test the ring's order without a GPU.
func hostRing(chunks, bytes int, log *[]string) *Pipeline {
	p := &Pipeline{cfg: PipelineConfig{ChunkBytes: bytes, Chunks: chunks, Workers: 2}}
	for i := range chunks {
		p.slots = append(p.slots, slot{buf: &HostBuffer[byte]{data: make([]byte, bytes)}, ev: &hostMarker{i, log}})
	}
	return p
}

// TestRingUnpacksEachDownloadBeforeReusingItsChunk queues more downloads
// than the ring has chunks: each chunk's download is unpacked (after its
// wait) before the chunk is taken again, in queue order, with the bytes
// its copy left there; Drain unpacks the rest; an upload waits for its
// chunk's previous copy; Discard drops downloads but keeps their chunks
// busy.
func TestRingUnpacksEachDownloadBeforeReusingItsChunk(t *testing.T) {
	var log []string
	p := hostRing(2, 4, &log)
	var got []int
	for k := range 5 {
		i, pin, err := p.take()
		if err != nil {
			t.Fatal(err)
		}
		pin[0] = byte(k) // the DMA's bytes
		if err := p.queued(i, nil); err != nil {
			t.Fatal(err)
		}
		p.pending = append(p.pending, pendingOut{slot: i, unpack: func(pin []byte) {
			if pin[0] != byte(k) {
				t.Errorf("download %d unpacked bytes of download %d", k, pin[0])
			}
			got = append(got, k)
		}})
		if len(p.pending) > len(p.slots) {
			t.Fatalf("%d downloads pending in a ring of %d", len(p.pending), len(p.slots))
		}
	}
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("unpacked %v before Drain, want [0 1 2]", got)
	}
	if err := p.Drain(); err != nil || !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("after Drain: unpacked %v, %v", got, err)
	}
	want := []string{"record 0", "record 1", "wait 0", "record 0", "wait 1", "record 1", "wait 0", "record 0", "wait 1", "wait 0"}
	if !slices.Equal(log, want) {
		t.Fatalf("ring order %v, want %v", log, want)
	}
	// An upload into chunk 1 (free: its download was waited for) then
	// chunk 0 and chunk 1 again (busy with the first upload: waited for).
	log = nil
	for range 3 {
		i, _, err := p.take()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.queued(i, nil); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"record 1", "record 0", "wait 1", "record 1"}; !slices.Equal(log, want) {
		t.Fatalf("uploads: %v, want %v", log, want)
	}
	// A dropped download's chunk is still waited for before reuse.
	log = nil
	i, _, _ := p.take() // chunk 0, busy: waited for
	_ = p.queued(i, nil)
	p.pending = append(p.pending, pendingOut{slot: i, unpack: func([]byte) { t.Error("a discarded download was unpacked") }})
	p.Discard()
	p.take() // chunk 1: waited for
	p.take() // chunk 0: waited for, not unpacked
	if want := []string{"wait 0", "record 0", "wait 1", "wait 0"}; !slices.Equal(log, want) {
		t.Fatalf("after Discard: %v, want %v", log, want)
	}
}
