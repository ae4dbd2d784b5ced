package stm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// encodeHistory writes records the way stm_record does (stm/client.cu).
func encodeHistory(recs []Record) []uint64 {
	var w []uint64
	for _, r := range recs {
		kind := uint64(0)
		switch {
		case r.ReadOnly:
			kind = 1
		case r.Aborted:
			kind = 2
		}
		w = append(w, kind|uint64(r.Cause)<<8, uint64(len(r.Reads))<<32|uint64(len(r.Writes)), r.TS, r.Snapshot)
		for _, a := range append(append([]Access(nil), r.Reads...), r.Writes...) {
			w = append(w, uint64(a.Item), a.Value)
		}
	}
	return w
}

// randomHistory returns n records of every kind, with 0 to maxReads reads
// and (update and aborted records) 0 to maxWrites writes.
func randomHistory(rng *rand.Rand, n, maxReads, maxWrites int) []Record {
	out := make([]Record, n)
	for i := range out {
		r := Record{TS: rng.Uint64(), Snapshot: rng.Uint64()}
		switch rng.IntN(3) {
		case 1:
			r.ReadOnly = true
		case 2:
			r.Aborted, r.Cause = true, Cause(1+rng.IntN(4))
		}
		r.Reads = make([]Access, rng.IntN(maxReads+1))
		for j := range r.Reads {
			r.Reads[j] = Access{Item: rng.Uint32(), Value: rng.Uint64()}
		}
		if nw := rng.IntN(maxWrites + 1); !r.ReadOnly && nw > 0 {
			r.Writes = make([]Access, nw)
			for j := range r.Writes {
				r.Writes[j] = Access{Item: rng.Uint32(), Value: rng.Uint64()}
			}
		}
		out[i] = r
	}
	return out
}

func TestParseHistoryDecodesWhatTheKernelsWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name                string
		committed, aborted  int
		maxReads, maxWrites int
	}{
		{"empty", 0, 0, 4, 4},
		{"one record", 1, 0, 2, 2},
		{"no accesses", 50, 50, 0, 0},
		{"committed only", 3*historyStride + 7, 0, 8, 2},
		{"both regions", 2*historyStride + 1, historyStride + 3, 16, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := randomHistory(rng, tc.committed, tc.maxReads, tc.maxWrites)
			a := randomHistory(rng, tc.aborted, tc.maxReads, tc.maxWrites)
			want := append(append([]Record{}, c...), a...)
			for _, chunk := range []int{2, 5, 64, 1 << 20} {
				got, err := parseHistory(chunk, encodeHistory(c), encodeHistory(a))
				if err != nil {
					t.Fatalf("chunks of %d words: %v", chunk, err)
				}
				checkDecoded(t, chunk, got, want)
			}
			// As from the device: each range copied into one buffer of
			// chunk+1 words that the next range overwrites, and poisoned
			// after its call.
			for _, chunk := range []int{70, 1000} {
				words := [][]uint64{encodeHistory(c), encodeHistory(a)}
				pin := make([]uint64, chunk+1)
				rgs := []historyRegion{{n: int64(len(words[0])), marks: markHistory(words[0])}, {n: int64(len(words[1])), marks: markHistory(words[1])}}
				got, err := decodeHistory(rgs, chunk, func(region int, ranges []wordRange, fn func(k int, w []uint64) error) error {
					for k, r := range ranges {
						if r.hi-r.lo > int64(len(pin)) {
							return fmt.Errorf("range %v of %d words: more than the buffer's %d", r, r.hi-r.lo, len(pin))
						}
						n := copy(pin, words[region][r.lo:r.hi])
						if err := fn(k, pin[:n]); err != nil {
							return err
						}
						for i := range pin {
							pin[i] = 0xdeadbeef
						}
					}
					return nil
				})
				if err != nil {
					t.Fatalf("streamed in chunks of %d words: %v", chunk, err)
				}
				checkDecoded(t, chunk, got, want)
			}
		})
	}
}

// checkDecoded compares decoded records with the records encoded.
func checkDecoded(t *testing.T, chunk int, got, want []Record) {
	t.Helper()
	{
		{
			if len(got) != len(want) {
				t.Fatalf("chunks of %d words: %d records, want %d", chunk, len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("chunks of %d words: record %d: got %+v, want %+v", chunk, i, got[i], want[i])
				}
				if cap(got[i].Reads) != len(got[i].Reads) || cap(got[i].Writes) != len(got[i].Writes) {
					t.Fatalf("chunks of %d words: record %d: accesses can grow into the next record's (caps %d, %d)", chunk, i, cap(got[i].Reads), cap(got[i].Writes))
				}
			}
		}
	}
}

func TestParseHistoryNamesTheBadWord(t *testing.T) {
	good := encodeHistory(randomHistory(rand.New(rand.NewPCG(3, 4)), 3, 2, 2))
	second := 4 + 2*int(good[1]>>32+uint64(uint32(good[1])))
	for _, tc := range []struct {
		name  string
		words []uint64
		want  string
	}{
		{"cut inside a header", good[:second+3], fmt.Sprintf("truncated record at word %d", second)},
		{"cut inside the accesses", append(append([]uint64{}, good[:second]...), 0, 5<<32, 1, 1, 7), fmt.Sprintf("bad record at word %d", second)},
		{"unknown kind", append(append([]uint64{}, good[:second]...), 3, 0, 1, 1), fmt.Sprintf("bad record at word %d", second)},
		{"counts past the region", append(append([]uint64{}, good[:second]...), 0, 1<<62, 1, 1), fmt.Sprintf("bad record at word %d", second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{3, 64, 1 << 20} {
				_, err := parseHistory(chunk, tc.words)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("chunks of %d words: error %v, want one with %q", chunk, err, tc.want)
				}
			}
		})
	}
}

// BenchmarkParseHistory decodes 1Mi records shaped like the documented
// CUDA body's (docShapedHistory), their starts marked before the timer,
// as the device marks them.
func BenchmarkParseHistory(b *testing.B) {
	_, recs, _ := docShapedHistory(1<<20, 1<<20)
	words := encodeHistory(recs)
	rgs := []historyRegion{{words: words, n: int64(len(words)), marks: markHistory(words)}}
	b.SetBytes(int64(len(words) * 8))
	for b.Loop() {
		if _, err := decodeHistory(rgs, historyChunkWords, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// parseHistory decodes regions of recorded words already in host memory
// (decodeHistory in chunks of chunk words), each with its marks set as
// stm_record sets them (markHistory).
func parseHistory(chunk int, regions ...[]uint64) ([]Record, error) {
	rgs := make([]historyRegion, len(regions))
	for i, w := range regions {
		rgs[i] = historyRegion{words: w, n: int64(len(w)), marks: markHistory(w)}
	}
	return decodeHistory(rgs, chunk, nil)
}

// markHistory returns the marks of words (markWords of them): the first
// word of every record, walking the records by their headers, up to and
// including the first record whose header is cut off or bad.
func markHistory(words []uint64) []uint64 {
	n := int64(len(words))
	marks := make([]uint64, markWords(n))
	for i := int64(0); i < n; {
		marks[i>>6] |= 1 << (i & 63)
		if i+4 > n {
			break
		}
		kind, nr, nw := words[i]&0xFF, words[i+1]>>32, uint64(uint32(words[i+1]))
		if kind > 2 || nr+nw > uint64(n-i-4)/2 {
			break
		}
		i += 4 + 2*int64(nr+nw)
	}
	return marks
}

// TestMarkedDecodeNamesRecordsTheMarksDisagreeWith corrupts the marks of
// a good history (a record's start unmarked, a word inside a record
// marked, no mark at word 0, two corruptions pieces apart) and checks that
// the decoding names the first record whose header disagrees with them.
func TestMarkedDecodeNamesRecordsTheMarksDisagreeWith(t *testing.T) {
	recs := randomHistory(rand.New(rand.NewPCG(7, 8)), 3*historyStride+5, 3, 3)
	words := encodeHistory(recs)
	starts := make([]int64, len(recs)) // each record's first word
	for i, at := 0, int64(0); i < len(recs); i++ {
		starts[i] = at
		at += 4 + 2*int64(len(recs[i].Reads)+len(recs[i].Writes))
	}
	if _, err := decodeHistory([]historyRegion{{words: words, n: int64(len(words))}}, 64, nil); err == nil || !strings.Contains(err.Error(), "words of marks") {
		t.Fatalf("a region without marks: error %v, want one naming its marks", err)
	}
	flip := func(marks []uint64, w int64) { marks[w>>6] ^= 1 << (w & 63) }
	for _, tc := range []struct {
		name   string
		change func(marks []uint64)
		want   string
	}{
		{"a start unmarked", func(m []uint64) { flip(m, starts[10]) }, fmt.Sprintf("bad record at word %d", starts[9])},
		{"a word inside a record marked", func(m []uint64) { flip(m, starts[20]+2) }, fmt.Sprintf("bad record at word %d", starts[20])},
		{"no mark at word 0", func(m []uint64) { flip(m, 0) }, "bad record at word 0"},
		{"two pieces apart: the first named", func(m []uint64) {
			flip(m, starts[2*historyStride+3]+1)
			flip(m, starts[historyStride+1]+1)
		}, fmt.Sprintf("bad record at word %d", starts[historyStride+1])},
		{"the last record unmarked", func(m []uint64) { flip(m, starts[len(starts)-1]) }, fmt.Sprintf("bad record at word %d", starts[len(starts)-2])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{64, 4096, 1 << 20} {
				marks := markHistory(words)
				tc.change(marks)
				_, err := decodeHistory([]historyRegion{{words: words, n: int64(len(words)), marks: marks}}, chunk, nil)
				if err == nil || err.Error() != "history: "+tc.want {
					t.Fatalf("chunks of %d words: error %v, want %q", chunk, err, "history: "+tc.want)
				}
			}
		})
	}
}
