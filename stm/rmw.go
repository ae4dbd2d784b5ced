package stm

import (
	_ "embed"
	"fmt"
)

//go:embed rmw.cuh
var rmwCUDA string

// RMW is a read-modify-write mix: an update transaction reads Keys items
// and writes each back plus one (or, with WriteOnly, writes each without
// reading it: blind writes of the transaction's ticket); a read-only one
// reads Keys items. Items are drawn uniformly or, with Zipf > 0, with Zipf
// popularity (item 0 hottest); a transaction may draw an item twice.
type RMW struct {
	Size      int     // store size N
	Keys      int     // items per transaction; 0 means 1
	ReadOnly  float64 // share of read-only transactions in [0, 1]
	Zipf      float64 // Zipf exponent in [0, 1); 0 uniform
	WriteOnly bool    // updates write without reading (blind writes)
	Start     uint64  // every item's initial value
}

// Name describes the workload.
func (w RMW) Name() string {
	kind := "read-modify-write"
	if w.WriteOnly {
		kind = "write-only"
	}
	dist := "uniform"
	if w.Zipf > 0 {
		dist = fmt.Sprintf("zipf %g", w.Zipf)
	}
	return fmt.Sprintf("%s %d items, %d keys, %g%% read-only, %s", kind, w.Size, w.keys(), 100*w.ReadOnly, dist)
}

// Items returns the store size.
func (w RMW) Items() int { return w.Size }

// InitialValue returns the initial value.
func (w RMW) InitialValue(int) uint64 { return w.Start }

func (w RMW) keys() int { return max(w.Keys, 1) }

// Validate reports a bad parameter, naming it.
func (w RMW) Validate() error {
	switch {
	case w.Size < 1 || w.Size > MaxItems:
		return fmt.Errorf("rmw: %d items: want 1 to %d", w.Size, MaxItems)
	case w.Keys < 0 || w.Keys > 1<<16:
		return fmt.Errorf("rmw: %d keys: want 1 to %d", w.Keys, 1<<16)
	case w.ReadOnly < 0 || w.ReadOnly > 1 || w.ReadOnly != w.ReadOnly:
		return fmt.Errorf("rmw: read-only share %g: want 0 to 1", w.ReadOnly)
	case w.Zipf < 0 || w.Zipf >= 1:
		return fmt.Errorf("rmw: zipf exponent %g: want 0 (uniform) to below 1", w.Zipf)
	}
	return nil
}

func (w RMW) spec() (*workloadSpec, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	z := newZipf(uint64(w.Size), w.Zipf)
	roPPM, k, wo := ppm(w.ReadOnly), w.keys(), w.WriteOnly
	sp := &workloadSpec{
		span:     w.Size, // keys anywhere in the store (one key: a block of one, below)
		skewed:   w.Zipf > 0,
		readOnly: drawnReadOnly(roPPM),
		body: func(tx *Tx, seed, ticket uint64, _, _ int) bool {
			r := txRNG(seed, ticket)
			ro := r.below(1e6) < roPPM
			for range k {
				i := int(z.draw(&r))
				switch {
				case ro:
					tx.Read(i)
				case wo:
					tx.Write(i, ticket)
				default:
					tx.Write(i, tx.Read(i)+1)
				}
			}
			return false
		},
		cudaName: "rmw.cuh", cuda: rmwCUDA,
		params:   append([]uint64{roPPM, uint64(k), boolWord(wo)}, z.params()...),
		maxReads: k, maxWrites: k, maxROReads: k,
		orderFree: !wo,
	}
	if !wo {
		n, start := uint64(w.Size), w.Start
		sp.check = func(final []uint64, st Stats) error {
			var sum uint64
			for _, x := range final {
				sum += x
			}
			if want := n*start + uint64(k)*st.Commits; sum != want {
				return fmt.Errorf("rmw: items total %d after %d update commits of %d increments, want %d", sum, st.Commits, k, want)
			}
			return nil
		}
	}
	if k == 1 {
		sp.span = 1
	}
	return sp, nil
}
