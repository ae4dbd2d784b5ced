package stm

import (
	_ "embed"
	"fmt"
)

//go:embed memcached.cuh
var memcachedCUDA string

// Memcached is MemcachedGPU's cache as a transactional workload: an n-way
// set-associative cache of Slots slots (Slots/Ways sets), each slot four
// items: the two words of a 16-byte key, an LRU stamp and a 64-bit handle
// of the 32-byte value (MemcachedGPU keeps values outside the index). A GET
// is a read-only transaction that scans its key's set and reads the handle
// on a hit; a PUT is an update transaction that scans the set for the key
// (or the least recently put slot) and writes the slot's 4 metadata items.
// Keys are drawn from twice as many keys as slots by a Zipf distribution
// (rank 0 hottest); the hottest half starts in the cache.
type Memcached struct {
	Slots int     // cache capacity in key-value pairs; items = 4 x Slots
	Ways  int     // associativity: slots per set (Slots must be a multiple)
	Gets  float64 // share of GETs in [0, 1] (MemcachedGPU: 0.998)
	Zipf  float64 // Zipf exponent of key popularity (MemcachedGPU: 0.99); 0 uniform
}

// Slot words.
const (
	mcKey0 = iota
	mcKey1
	mcLRU
	mcValue
	mcWords
)

// Name describes the workload.
func (m Memcached) Name() string {
	return fmt.Sprintf("memcached %d slots, %d ways, %g%% GET, zipf %g", m.Slots, m.Ways, 100*m.Gets, m.Zipf)
}

// Items returns 4 x Slots.
func (m Memcached) Items() int { return mcWords * m.Slots }

func (m Memcached) sets() int { return m.Slots / m.Ways }

// mcKey returns the two words of the key of rank r (never zero: an empty
// slot has key word 0).
func mcKey(r uint64) (uint64, uint64) { return mix64(r+0x51ED27) | 1, mix64(r + 0xC0FFEE) }

// InitialValue places rank s + w*sets in way w of set s, LRU stamp 0, value
// handle mix64(rank).
func (m Memcached) InitialValue(i int) uint64 {
	slot, word := i/mcWords, i%mcWords
	sets := m.sets()
	set, way := slot/m.Ways, slot%m.Ways
	rank := uint64(set + way*sets)
	k0, k1 := mcKey(rank)
	switch word {
	case mcKey0:
		return k0
	case mcKey1:
		return k1
	case mcValue:
		return mix64(rank)
	}
	return 0
}

// Validate reports a bad parameter, naming it.
func (m Memcached) Validate() error {
	switch {
	case m.Ways < 1 || m.Ways > 1<<12:
		return fmt.Errorf("memcached: %d ways: want 1 to 4096", m.Ways)
	case m.Slots < m.Ways || m.Slots%m.Ways != 0 || mcWords*int64(m.Slots) > MaxItems:
		return fmt.Errorf("memcached: %d slots: want a multiple of the %d ways, at most %d", m.Slots, m.Ways, MaxItems/mcWords)
	case m.Gets < 0 || m.Gets > 1 || m.Gets != m.Gets:
		return fmt.Errorf("memcached: GET share %g: want 0 to 1", m.Gets)
	case m.Zipf < 0 || m.Zipf >= 1 && m.Zipf != 0:
		return fmt.Errorf("memcached: zipf exponent %g: want 0 (uniform) to below 1", m.Zipf)
	}
	return nil
}

func (m Memcached) spec() (*workloadSpec, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	sets, ways := uint64(m.sets()), m.Ways
	keys := 2 * uint64(m.Slots)
	z := newZipf(keys, m.Zipf)
	getPPM := ppm(m.Gets)
	sp := &workloadSpec{
		span:     ways, // a key's set: ways consecutive slots
		skewed:   m.Zipf > 0,
		readOnly: drawnReadOnly(getPPM),
		body: func(tx *Tx, seed, ticket uint64, _, _ int) bool {
			r := txRNG(seed, ticket)
			get := r.below(1e6) < getPPM
			rank := z.draw(&r)
			k0, k1 := mcKey(rank)
			base := int(rank%sets) * ways * mcWords
			if get {
				for w := 0; w < ways; w++ {
					s := base + w*mcWords
					if tx.Read(s+mcKey0) == k0 && tx.Read(s+mcKey1) == k1 {
						tx.Read(s + mcValue)
						return false
					}
				}
				return false
			}
			target, oldest := -1, ^uint64(0)
			for w := 0; w < ways; w++ {
				s := base + w*mcWords
				if tx.Read(s+mcKey0) == k0 && tx.Read(s+mcKey1) == k1 {
					target = s
					break
				}
				if lru := tx.Read(s + mcLRU); lru < oldest {
					target, oldest = s, lru
				}
			}
			tx.Write(target+mcKey0, k0)
			tx.Write(target+mcKey1, k1)
			tx.Write(target+mcLRU, ticket+1)
			tx.Write(target+mcValue, mix64(rank^ticket))
			return false
		},
		cudaName: "memcached.cuh", cuda: memcachedCUDA,
		params:   append([]uint64{sets, uint64(ways), getPPM}, z.params()...),
		maxReads: 3 * ways, maxWrites: mcWords, maxROReads: 2*ways + 1,
		check: func(final []uint64, _ Stats) error {
			for set := 0; set < int(sets); set++ {
				seen := map[[2]uint64]int{}
				for w := 0; w < ways; w++ {
					s := (set*ways + w) * mcWords
					k := [2]uint64{final[s+mcKey0], final[s+mcKey1]}
					if w0, dup := seen[k]; dup {
						return fmt.Errorf("memcached: set %d holds key %x:%x in ways %d and %d", set, k[0], k[1], w0, w)
					}
					seen[k] = w
				}
			}
			return nil
		},
	}
	return sp, nil
}
