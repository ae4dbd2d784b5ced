package hashindex

import (
	"fmt"
	"math/bits"

	"github.com/warpkv/warpkv/gpu"
)

// Options configure an Index.
type Options struct {
	// Buckets is the number of 8-cell buckets, rounded up to a power of two
	// (at least 2, at most MaxBuckets). The table takes 64 bytes a bucket.
	Buckets int

	// PartitionBits is log2 of the buckets in a partition: a key's two
	// buckets share their bits above the low PartitionBits bits, and
	// partition = bucket >> PartitionBits. Inserts and deletes of one
	// partition are applied in batch order by one worker (one 8-lane group
	// on the GPU), partitions in parallel: fewer bits give more parallelism,
	// more bits give each key's alternate bucket more choice. 0 means
	// DefaultPartitionBits; it is capped at log2(Buckets).
	PartitionBits int

	// MaxDisplacements bounds the cuckoo evictions of one insert whose two
	// buckets are full. 0 means DefaultMaxDisplacements; a negative value
	// means none (such an insert drops the new entry at once).
	MaxDisplacements int

	// Device selects the engine as engine.Place does: "auto", "cpu", "gpu"
	// or "gpu:N"; "" means the value of WARPKV_DEVICE, else auto. Ignored
	// when GPU is set.
	Device string

	// GPU, when set, is an open device to run on; the caller keeps
	// ownership and must close the Index before the device.
	GPU *gpu.Device

	// Workers is the number of goroutines of the CPU engine and of the
	// host-side grouping (0: GOMAXPROCS).
	Workers int
}

// resolved is Options after defaults and validation.
type resolved struct {
	geo     geometry
	maxDisp uint32
	workers int
}

// resolve applies the defaults to o and checks it.
func (o Options) resolve() (resolved, error) {
	if o.Buckets <= 0 || o.Buckets > MaxBuckets {
		return resolved{}, fmt.Errorf("hashindex: %d buckets: want 1 to %d", o.Buckets, MaxBuckets)
	}
	buckets := max(2, 1<<bits.Len(uint(o.Buckets-1)))
	pbits := o.PartitionBits
	switch {
	case pbits < 0:
		return resolved{}, fmt.Errorf("hashindex: negative partition bits %d", pbits)
	case pbits == 0:
		pbits = DefaultPartitionBits
	}
	pbits = min(pbits, int(log2(buckets)))
	var maxDisp uint32
	switch {
	case o.MaxDisplacements == 0:
		maxDisp = DefaultMaxDisplacements
	case o.MaxDisplacements > 0:
		maxDisp = uint32(min(o.MaxDisplacements, 1<<20))
	}
	if o.Workers < 0 {
		return resolved{}, fmt.Errorf("hashindex: negative worker count %d", o.Workers)
	}
	return resolved{geo: newGeometry(buckets, uint(pbits)), maxDisp: maxDisp, workers: o.Workers}, nil
}
