package itemstore

import (
	"fmt"
	"math"
)

// Defaults and bounds of Options.
const (
	DefaultMemoryLimit  = 64 << 20 // bytes, memcached -m 64
	DefaultItemSizeMax  = 1 << 20  // bytes, memcached -I 1m
	DefaultGrowthFactor = 1.25     // memcached -f
	DefaultChunkMin     = 48       // bytes, memcached -n

	MinItemSizeMax = 1 << 10 // smallest ItemSizeMax (memcached: 1k)
	MaxItemSizeMax = 1 << 30 // largest ItemSizeMax (memcached: 1g)

	// MaxKeyLen is the longest key, as in memcached.
	MaxKeyLen = 250

	// MaxClasses bounds the number of size classes (memcached's 64 slab
	// classes less the unused class 0); a small growth factor stops
	// growing there and the page-sized class follows.
	MaxClasses = 63

	// basePageSize is the page size when ItemSizeMax is not larger.
	basePageSize = 1 << 20
)

// Options configure a Store. The zero value of each field selects its
// default.
type Options struct {
	// MemoryLimit is a hard cap, in bytes, on the pages the store maps
	// (memcached -m). At least one page; 0 means DefaultMemoryLimit.
	MemoryLimit int64

	// ItemSizeMax is the longest value in bytes (memcached -I), from
	// MinItemSizeMax to MaxItemSizeMax. The page size is the larger of
	// 1 MiB and ItemSizeMax. 0 means DefaultItemSizeMax.
	ItemSizeMax int

	// GrowthFactor is the ratio of consecutive chunk sizes (memcached -f),
	// greater than 1. 0 means DefaultGrowthFactor.
	GrowthFactor float64

	// ChunkMin is the data space (key and value bytes) of the smallest
	// chunk (memcached -n); the smallest chunk is the item header plus
	// ChunkMin, rounded up to 8 bytes. 0 means DefaultChunkMin.
	ChunkMin int

	// Slabs configures how pages move between size classes (memcached's
	// slab_reassign and slab_automove); the zero value is memcached 1.6's
	// default, on.
	Slabs SlabPolicy
}

// config is Options after defaults and validation.
type config struct {
	limit       int64
	itemSizeMax int
	factor      float64
	chunkMin    int
	pageSize    int
	slabs       SlabPolicy
}

// resolve applies the defaults to o and checks it.
func (o Options) resolve() (config, error) {
	c := config{limit: o.MemoryLimit, itemSizeMax: o.ItemSizeMax, factor: o.GrowthFactor, chunkMin: o.ChunkMin}
	slabs, err := o.Slabs.resolve()
	if err != nil {
		return config{}, err
	}
	c.slabs = slabs
	if c.limit == 0 {
		c.limit = DefaultMemoryLimit
	}
	if c.itemSizeMax == 0 {
		c.itemSizeMax = DefaultItemSizeMax
	}
	if c.factor == 0 {
		c.factor = DefaultGrowthFactor
	}
	if c.chunkMin == 0 {
		c.chunkMin = DefaultChunkMin
	}
	if c.itemSizeMax < MinItemSizeMax || c.itemSizeMax > MaxItemSizeMax {
		return config{}, fmt.Errorf("itemstore: item size max %d: want %d to %d", c.itemSizeMax, MinItemSizeMax, MaxItemSizeMax)
	}
	c.pageSize = max(basePageSize, c.itemSizeMax)
	if c.limit < int64(c.pageSize) {
		return config{}, fmt.Errorf("itemstore: memory limit %d: less than one %d-byte page", c.limit, c.pageSize)
	}
	if !(c.factor > 1) || math.IsInf(c.factor, 0) {
		return config{}, fmt.Errorf("itemstore: growth factor %v: want a finite number above 1", c.factor)
	}
	if c.chunkMin < 1 || headerSize+c.chunkMin > c.pageSize/2 {
		return config{}, fmt.Errorf("itemstore: chunk min %d: want 1 to %d", c.chunkMin, c.pageSize/2-headerSize)
	}
	return c, nil
}
