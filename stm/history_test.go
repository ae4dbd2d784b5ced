package stm

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestSortedIndexIsAStableSort compares sortedIndex with a stable sort of
// the records by (timestamp, flag) on timestamps of every width: few
// distinct ones (many ties), below 2^8, 2^32 and up to 2^64-1, and with
// and without a filter.
func TestSortedIndexIsAStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	for _, tc := range []struct {
		name string
		ts   func() uint64
	}{
		{"all zero", func() uint64 { return 0 }},
		{"three values", func() uint64 { return r.Uint64N(3) }},
		{"below 2^8", func() uint64 { return r.Uint64N(1 << 8) }},
		{"below 2^32", func() uint64 { return r.Uint64N(1 << 32) }},
		{"any uint64", func() uint64 { return r.Uint64() | uint64(r.IntN(2))<<63 }},
		{"the ends", func() uint64 { return []uint64{0, math.MaxUint64, 1 << 63}[r.IntN(3)] }},
	} {
		for _, n := range []int{0, 1, 7, 5000, 100_003} { // the last in parts (3 with 3 cores or more)
			t.Run(fmt.Sprintf("%s/%d", tc.name, n), func(t *testing.T) {
				h := make([]Record, n)
				for i := range h {
					h[i] = Record{TS: tc.ts(), ReadOnly: r.IntN(2) == 0, Aborted: r.IntN(4) == 0}
				}
				key := func(r *Record) (uint64, bool) { return r.TS, r.ReadOnly }
				for _, keep := range []func(*Record) bool{nil, func(r *Record) bool { return !r.Aborted }} {
					var want []int
					for i := range h {
						if keep == nil || keep(&h[i]) {
							want = append(want, i)
						}
					}
					slices.SortStableFunc(want, func(a, b int) int {
						if c := cmp.Compare(h[a].TS, h[b].TS); c != 0 {
							return c
						}
						return cmp.Compare(boolInt(h[a].ReadOnly), boolInt(h[b].ReadOnly))
					})
					if got := sortedIndex(h, key, keep); !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
						t.Fatalf("filtered %v: got %v, want %v", keep != nil, got[:min(len(got), 20)], want[:min(len(want), 20)])
					}
				}
			})
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestWriteHistoryInPiecesIsTheSerialText: WriteHistory, which formats
// pieces of historyLines records on all cores, writes the same bytes as
// formatting the committed records one by one in timestamp order, for
// histories of no record to several batches of pieces (batches of 1 and 2
// pieces too, so that a batch is written while the next is formatted),
// and returns a failing writer's error.
func TestWriteHistoryInPiecesIsTheSerialText(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 1, historyLines - 1, historyLines + 1, 3*historyLines + 5} {
		h := randomHistory(rng, n, 6, 3)
		for i := range h {
			h[i].TS = rng.Uint64N(uint64(n) + 1) // ties and any order
		}
		var want []byte
		for _, j := range committed(h) {
			want = h[j].AppendJSON(want)
		}
		for _, batch := range []int{1, 2, 0} { // 0: WriteHistory's own
			var got bytes.Buffer
			var err error
			if batch == 0 {
				err = WriteHistory(&got, h)
			} else {
				err = writeHistory(&got, h, batch)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%d records, batches of %d pieces: %d bytes written, want %d (first difference at %d)", n, batch, got.Len(), len(want), firstByteDiff(got.Bytes(), want))
			}
		}
	}
	h := randomHistory(rng, 100, 2, 2)
	if err := WriteHistory(failingWriter{}, h); err == nil || !strings.Contains(err.Error(), "stm: writing history: disk full") {
		t.Fatalf("error %v, want the writer's", err)
	}
	// A writer that fails in the first batch, with more batches behind it.
	h = randomHistory(rng, 5*historyLines, 2, 2)
	for i := range h {
		h[i].Aborted = false
	}
	if err := writeHistory(failingWriter{}, h, 1); err == nil || !strings.Contains(err.Error(), "stm: writing history: disk full") {
		t.Fatalf("batches of 1 piece: error %v, want the writer's", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// firstByteDiff returns the first index where a and b differ.
func firstByteDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkCommittedOrder orders a history (a tenth of the records
// aborted, 90% of the rest read-only, timestamps near their records'
// places) by timestamp, as WriteHistory does before it formats the lines:
// 4Mi records, and the 34,362,337 of the package example's checked "stm
// run" (2.5 GB of records; its first call in a process is the one that
// run makes: -test.bench 'CommittedOrder/34M' -test.benchtime 1x).
func BenchmarkCommittedOrder(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"4Mi", 1 << 22}, {"34M", 34_362_337}} {
		n := c.n
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			h := make([]Record, n)
			for i := range h {
				h[i] = Record{TS: uint64(i/8) + r.Uint64N(64), ReadOnly: r.IntN(10) != 0, Aborted: r.IntN(10) == 0}
			}
			runtime.GC() // not during the calls: the records hold pointers
			for b.Loop() {
				committed(h)
			}
		})
	}
}

// BenchmarkWriteHistory writes 2Mi doc-shaped records as JSON lines (about
// 300 MB) to a file and to io.Discard (the formatting alone).
func BenchmarkWriteHistory(b *testing.B) {
	_, h, _ := docShapedHistory(2<<20, 1<<20)
	b.Run("file", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "h.jsonl")
		for b.Loop() {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := WriteHistory(f, h); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("discard", func(b *testing.B) {
		for b.Loop() {
			if err := WriteHistory(io.Discard, h); err != nil {
				b.Fatal(err)
			}
		}
	})
}
