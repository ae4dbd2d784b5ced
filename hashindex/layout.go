package hashindex

import "math/bits"

// Table layout, shared word for word by the CPU and GPU engines and by
// hashindex.cu (keep the two in step).
//
// The table is nBuckets buckets of BucketWords uint32 words. Bucket b holds
// the signatures of its CellsPerBucket cells in words [16b, 16b+8) and their
// locations in words [16b+8, 16b+16), so the 8 lanes that work on a bucket
// read 32 contiguous bytes of signatures in one transaction. Signature 0
// marks an empty cell; an empty cell's location is 0 too, so equal contents
// mean equal tables.
const (
	CellsPerBucket = 8                  // cells per bucket
	BucketWords    = 2 * CellsPerBucket // uint32 words per bucket (64 bytes)
	BucketBytes    = 4 * BucketWords    // bytes per bucket

	// NotFound is the location Search reports for an absent key. It is not
	// a valid location for Insert.
	NotFound uint32 = 0xFFFFFFFF

	// MaxBuckets bounds Options.Buckets (a 64 GiB table).
	MaxBuckets = 1 << 30

	// DefaultMaxDisplacements is the cuckoo displacement bound used when
	// Options.MaxDisplacements is 0.
	DefaultMaxDisplacements = 8

	// DefaultPartitionBits is log2 of the buckets per partition used when
	// Options.PartitionBits is 0 (capped by the table size).
	DefaultPartitionBits = 8

	// MaxBatch bounds the jobs of one call (job indices are 32-bit on the
	// device).
	MaxBatch = 1<<31 - 1
)

// geometry is the shape of a table and the key-to-cell arithmetic on it.
// It is a value: every engine holds a copy.
type geometry struct {
	buckets int    // a power of two, >= 2
	mask    uint32 // buckets - 1
	pbits   uint   // log2 of buckets per partition, >= 1
	pmask   uint32 // (1 << pbits) - 1
	parts   int    // buckets >> pbits
}

// newGeometry returns the geometry of buckets (a power of two, >= 2) split
// into partitions of 1<<pbits buckets (1 <= pbits <= log2 buckets).
func newGeometry(buckets int, pbits uint) geometry {
	return geometry{
		buckets: buckets,
		mask:    uint32(buckets - 1),
		pbits:   pbits,
		pmask:   uint32(1)<<pbits - 1,
		parts:   buckets >> pbits,
	}
}

// words returns the table's length in uint32 words.
func (g geometry) words() int { return g.buckets * BucketWords }

// signature returns the key signature of hash h: its high 32 bits, with 0
// (the empty-cell mark) mapped to 1.
func signature(h uint64) uint32 {
	s := uint32(h >> 32)
	if s == 0 {
		s = 1
	}
	return s
}

// sigMix scrambles a signature into the bits XORed into a bucket index to
// get the key's alternate bucket.
func sigMix(sig uint32) uint32 {
	m := sig * 0x9E3779B1
	return m ^ m>>16
}

// primary returns the first bucket of hash h: its low bits.
func (g geometry) primary(h uint64) uint32 { return uint32(h) & g.mask }

// alternate returns the other bucket of a key with signature sig that has
// bucket b. Only the low pbits bits change, so both buckets are in the same
// partition; the change is never zero, so the buckets differ; and
// alternate(alternate(b)) == b, so a displaced cell can always be sent
// back.
func (g geometry) alternate(b, sig uint32) uint32 {
	x := sigMix(sig) & g.pmask
	if x == 0 {
		x = 1
	}
	return b ^ x
}

// partition returns the partition of bucket b.
func (g geometry) partition(b uint32) int { return int(b >> g.pbits) }

// preferred returns the preferred cell of a signature: its top 3 bits.
func preferred(sig uint32) uint32 { return sig >> 29 }

// nearestFree returns the cell of a bucket whose bit is set in free (bit i:
// cell i is empty) that is nearest the preferred cell pref, searching
// outward circularly: pref, pref+1, pref-1, pref+2, pref-2, pref+3, pref-3,
// pref+4 (mod 8). ok is false when free is 0.
func nearestFree(free, pref uint32) (cell uint32, ok bool) {
	for k := uint32(0); k < CellsPerBucket; k++ {
		if c := (pref + outward(k)) & (CellsPerBucket - 1); free>>c&1 != 0 {
			return c, true
		}
	}
	return 0, false
}

// outward returns the k-th offset of the circular outward search order:
// 0, +1, -1, +2, -2, +3, -3, +4 (mod 8).
func outward(k uint32) uint32 {
	switch {
	case k == 0:
		return 0
	case k&1 == 1:
		return (k + 1) / 2
	default:
		return CellsPerBucket - k/2
	}
}

// log2 returns log2 of a power of two.
func log2(n int) uint { return uint(bits.TrailingZeros64(uint64(n))) }
