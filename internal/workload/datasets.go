package workload

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"golang.org/x/crypto/sha3"
)

// Dataset names a synthetic key-value data set with the statistics of one
// of the GPU MPT paper's three benchmark data sets (warpkv bench mpt and
// compat's mptbench build tries from them).
type Dataset string

// The data sets.
const (
	// YCSB: YCSB's keys, "user" followed by the decimal FNV-1a-64
	// hash of the record number (23 or 24 bytes, about 47 nibbles), with
	// 523-byte random values.
	YCSB Dataset = "ycsb"
	// ETHT: Ethereum-transaction-like pairs, 32-byte Keccak-256 keys
	// (hashes of the seed and record number) and random values of 768 to
	// 1280 bytes (about 1 KB).
	ETHT Dataset = "etht"
	// Wiki: Wikipedia-like clustered keys, URL-style titles
	// "en.wikipedia.org/wiki/<word>_<word>_<nnnnn>" where the first word and
	// the number are drawn Zipf-distributed so that keys share long
	// prefixes (the fixed-width number keeps the keys prefix-free), with random
	// values of 9,900 to 11,900 bytes (about 10.9 KB).
	Wiki Dataset = "wiki"
)

// Datasets lists the data sets in the paper's order.
func Datasets() []Dataset { return []Dataset{YCSB, ETHT, Wiki} }

// MeanValueBytes returns the data set's mean value size in bytes.
func (d Dataset) MeanValueBytes() int {
	switch d {
	case YCSB:
		return 523
	case ETHT:
		return 1024
	case Wiki:
		return 10900
	}
	return 0
}

// valuePool is the random bytes values are cut from: values of a data set
// are slices of it at random offsets, so that generating millions of
// 10 KB values costs no more memory than the pool (the trie copies them).
const valuePool = 1 << 24

// Generate returns n distinct keys and their values from data set d,
// keys in no particular order and, as go-ethereum's StackTrie needs, none
// a prefix of another (for YCSB-like keys of 19 and 20 digits this holds
// with overwhelming probability, and is checked by the tests at 20 K),
// deterministic in seed (the same seed gives the same pairs in the same
// order, in every process). Values alias a shared read-only pool and must
// not be modified. Cost: O(n) keys plus a 16 MiB value pool.
func Generate(d Dataset, n int, seed uint64) (keys, values [][]byte, err error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("workload: generate: %d pairs", n)
	}
	r := rand.New(rand.NewPCG(seed, uint64(len(d))<<32|0x6d7074))
	var minV, maxV int
	switch d {
	case YCSB:
		minV, maxV = 523, 523
	case ETHT:
		minV, maxV = 768, 1280
	case Wiki:
		minV, maxV = 9900, 11900
	default:
		return nil, nil, fmt.Errorf("workload: unknown data set %q (want ycsb, etht or wiki)", d)
	}
	pool := make([]byte, valuePool+maxV)
	for i := 0; i+8 <= len(pool); i += 8 {
		binary.LittleEndian.PutUint64(pool[i:], r.Uint64())
	}
	keys, values = make([][]byte, 0, n), make([][]byte, n)
	seen := make(map[string]struct{}, n)
	h := sha3.NewLegacyKeccak256()
	var zipf *rand.Zipf
	if d == Wiki {
		zipf = rand.NewZipf(r, 1.3, 4, 1<<16)
	}
	for i := uint64(0); len(keys) < n; i++ {
		var k []byte
		switch d {
		case YCSB:
			f := fnv.New64a()
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], i^seed)
			f.Write(b[:])
			k = strconv.AppendUint([]byte("user"), f.Sum64(), 10)
		case ETHT:
			var b [16]byte
			binary.LittleEndian.PutUint64(b[:], seed)
			binary.LittleEndian.PutUint64(b[8:], i)
			h.Reset()
			h.Write(b[:])
			k = h.Sum(nil)
		case Wiki:
			k = fmt.Appendf(nil, "en.wikipedia.org/wiki/%s_%s_%05d",
				wikiWords[zipf.Uint64()%uint64(len(wikiWords))],
				wikiWords[r.IntN(len(wikiWords))], zipf.Uint64())
		}
		if _, dup := seen[string(k)]; dup {
			continue
		}
		seen[string(k)] = struct{}{}
		keys = append(keys, k)
	}
	for i := range values {
		l := minV + r.IntN(maxV-minV+1)
		off := r.IntN(valuePool)
		values[i] = pool[off : off+l : off+l]
	}
	return keys, values, nil
}

// wikiWords are the title words of the Wiki-like data set.
var wikiWords = []string{
	"History", "List", "University", "Battle", "John", "County", "River", "Church", "Station", "Football",
	"Album", "Film", "Season", "Election", "National", "School", "Railway", "Park", "Island", "Music",
	"American", "British", "German", "French", "Royal", "Saint", "New", "North", "South", "Lake",
	"Mount", "William", "George", "Charles", "Company", "Party", "District", "Village", "Airport", "Club",
}

// Stats are summary statistics of a generated data set.
type Stats struct {
	Pairs          int
	MeanKeyNibbles float64 // mean key length in nibbles
	MeanValueBytes float64
	KeyBytes       int64   // total key bytes
	ValueBytes     int64   // total value bytes
	SharedNibbles  float64 // mean common prefix in nibbles of keys adjacent in sorted order (clustering)
}

// DatasetStats computes the statistics of keys and values; sorted, when
// not nil, is keys in ascending order (for SharedNibbles; 0 otherwise).
// Cost: O(total bytes).
func DatasetStats(keys, values, sorted [][]byte) Stats {
	s := Stats{Pairs: len(keys)}
	for i := range keys {
		s.KeyBytes += int64(len(keys[i]))
		s.ValueBytes += int64(len(values[i]))
	}
	if len(keys) > 0 {
		s.MeanKeyNibbles = 2 * float64(s.KeyBytes) / float64(len(keys))
		s.MeanValueBytes = float64(s.ValueBytes) / float64(len(keys))
	}
	if len(sorted) > 1 {
		total := 0
		for i := 1; i < len(sorted); i++ {
			total += sharedNibbles(sorted[i-1], sorted[i])
		}
		s.SharedNibbles = float64(total) / float64(len(sorted)-1)
	}
	return s
}

// sharedNibbles returns the length in nibbles of the common prefix of a
// and b.
func sharedNibbles(a, b []byte) int {
	n := 0
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			if a[i]>>4 == b[i]>>4 {
				n++
			}
			return n
		}
		n += 2
	}
	return n
}

// String formats the statistics on one line.
func (s Stats) String() string {
	out := fmt.Sprintf("%d pairs, keys %.1f nibbles, values %.0f B", s.Pairs, s.MeanKeyNibbles, s.MeanValueBytes)
	if s.SharedNibbles > 0 {
		out += fmt.Sprintf(", adjacent sorted keys share %.1f nibbles", s.SharedNibbles)
	}
	return out
}
