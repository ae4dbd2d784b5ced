package stm

import (
	_ "embed"
	"fmt"
)

//go:embed bank.cuh
var bankCUDA string

// Bank is the bank benchmark: Accounts accounts start at Initial each; an
// update transaction is a transfer of Rounds rounds, each moving 1 from one
// account to another (uint64, wrapping); a read-only transaction sums the
// accounts of one block. Accounts are split into blocks of ReadSize
// consecutive accounts (the last block takes the remainder; ReadSize 0 is
// one block of all accounts) and a transfer stays inside one block, so
// every read-only total must equal the block's size times Initial.
type Bank struct {
	Accounts int
	Initial  uint64
	// ReadOnly is the share of read-only transactions in [0, 1].
	ReadOnly float64
	// ReadSize is the accounts a read-only transaction sums; 0 is all.
	ReadSize int
	// Rounds is k, the moves of one transfer; 0 means 1.
	Rounds int
	// Zipf, in [0, 1), draws the block a transaction uses with Zipf's law
	// of this exponent over the blocks (block 0 the hottest: hot
	// accounts); 0 is uniform. Sharded transactions ignore it.
	Zipf float64
	// Sharded makes the workload conflict-free: a client (goroutine or
	// GPU thread) only uses the block of its own number (modulo the
	// blocks), so there are no conflicts when there are at least as many
	// blocks as clients.
	Sharded bool
}

// Name describes the workload, e.g. "bank 1000 accounts, 90% read-only of 100, 1 round".
func (b Bank) Name() string {
	rs := "all"
	if b.ReadSize > 0 && b.ReadSize < b.Accounts {
		rs = fmt.Sprint(b.ReadSize)
	}
	sh := ""
	if b.Sharded {
		sh = ", sharded"
	}
	if b.Zipf > 0 && !b.Sharded {
		sh = fmt.Sprintf(", zipf %g", b.Zipf)
	}
	return fmt.Sprintf("bank %d accounts, %g%% read-only of %s, %d rounds%s", b.Accounts, 100*b.ReadOnly, rs, b.rounds(), sh)
}

// Items returns the number of accounts.
func (b Bank) Items() int { return b.Accounts }

// InitialValue returns the initial balance.
func (b Bank) InitialValue(int) uint64 { return b.Initial }

func (b Bank) rounds() int { return max(b.Rounds, 1) }

// blocks returns the block size and the number of blocks.
func (b Bank) blocks() (size, n int) {
	size = b.ReadSize
	if size <= 0 || size > b.Accounts {
		size = b.Accounts
	}
	return size, b.Accounts / size
}

// ppm converts a share in [0, 1] to parts per million.
func ppm(share float64) uint64 { return uint64(share*1e6 + 0.5) }

// Validate reports a bad parameter, naming it.
func (b Bank) Validate() error {
	switch {
	case b.Accounts < 1 || b.Accounts > MaxItems:
		return fmt.Errorf("bank: %d accounts: want 1 to %d", b.Accounts, MaxItems)
	case b.ReadOnly < 0 || b.ReadOnly > 1 || b.ReadOnly != b.ReadOnly:
		return fmt.Errorf("bank: read-only share %g: want 0 to 1", b.ReadOnly)
	case b.ReadSize < 0 || b.ReadSize > b.Accounts:
		return fmt.Errorf("bank: read size %d: want 0 (all) to the %d accounts", b.ReadSize, b.Accounts)
	case b.Zipf < 0 || b.Zipf >= 1 || b.Zipf != b.Zipf:
		return fmt.Errorf("bank: zipf exponent %g: want 0 (uniform) to below 1", b.Zipf)
	case b.Rounds < 0 || b.Rounds > 1<<16:
		return fmt.Errorf("bank: %d rounds: want 1 to %d", b.Rounds, 1<<16)
	}
	if size, _ := b.blocks(); size < 2 && ppm(b.ReadOnly) < 1e6 {
		return fmt.Errorf("bank: transfers need blocks of at least 2 accounts (accounts %d, read size %d)", b.Accounts, b.ReadSize)
	}
	return nil
}

func (b Bank) spec() (*workloadSpec, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	size, nb := b.blocks()
	roPPM, k, v := ppm(b.ReadOnly), b.rounds(), b.Initial
	n := b.Accounts
	z := newZipf(uint64(nb), b.Zipf)
	// block returns the first account and the size of the block of a
	// transaction.
	block := func(r *rng, thread int) (int, int) {
		var blk int
		if b.Sharded {
			blk = thread % nb
		} else {
			blk = int(z.draw(r))
		}
		lo := blk * size
		if blk == nb-1 {
			return lo, n - lo
		}
		return lo, size
	}
	sp := &workloadSpec{
		readOnly: drawnReadOnly(roPPM),
		body: func(tx *Tx, seed, ticket uint64, thread, _ int) bool {
			r := txRNG(seed, ticket)
			ro := r.below(1e6) < roPPM
			lo, sz := block(&r, thread)
			if ro {
				var sum uint64
				for i := lo; i < lo+sz; i++ {
					sum += tx.Read(i)
				}
				return sum != uint64(sz)*v
			}
			for range k {
				from := lo + int(r.below(uint64(sz)))
				to := lo + int(r.below(uint64(sz-1)))
				if to >= from {
					to++
				}
				tx.Write(from, tx.Read(from)-1)
				tx.Write(to, tx.Read(to)+1)
			}
			return false
		},
		cudaName: "bank.cuh", cuda: bankCUDA, span: size, skewed: b.Zipf > 0 && !b.Sharded,
		params:   append([]uint64{uint64(n), v, roPPM, uint64(size), uint64(nb), uint64(k), boolWord(b.Sharded)}, z.params()...),
		maxReads: 2 * k, maxWrites: 2 * k, maxROReads: size + n%size,
		check: func(final []uint64, _ Stats) error {
			for blk := 0; blk < nb; blk++ {
				lo, sz := blk*size, size
				if blk == nb-1 {
					sz = n - lo
				}
				var sum uint64
				for _, x := range final[lo : lo+sz] {
					sum += x
				}
				if sum != uint64(sz)*v {
					return fmt.Errorf("bank: block %d (accounts %d to %d) totals %d, want %d", blk, lo, lo+sz-1, sum, uint64(sz)*v)
				}
			}
			return nil
		},
		orderFree: true, sharded: b.Sharded,
	}
	return sp, nil
}

func boolWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// BankTx is one Bank transaction as plain data, for implementations
// outside the engines (the lock-based and library peers of the
// benchmarks): a read-only sum of accounts [First, First+Count), or a
// transfer of Moves (from, to), each moving 1.
type BankTx struct {
	ReadOnly     bool
	First, Count int
	Moves        [][2]int
	z            *zipf // the block distribution of the last Draw's Bank
}

// Draw fills t with transaction ticket of a run seeded seed, run by client
// thread (which matters only when sharded): the transaction both engines
// run for that ticket. Cost: O(Rounds); with Zipf, the first draw into t
// (or the first after a Bank of other blocks) also O(blocks).
func (b Bank) Draw(seed, ticket uint64, thread int, t *BankTx) {
	size, nb := b.blocks()
	r := txRNG(seed, ticket)
	t.ReadOnly = r.below(1e6) < ppm(b.ReadOnly)
	var blk int
	if b.Sharded {
		blk = thread % nb
	} else {
		if t.z == nil || t.z.n != uint64(nb) || t.z.theta != b.Zipf {
			z := newZipf(uint64(nb), b.Zipf)
			t.z = &z
		}
		blk = int(t.z.draw(&r))
	}
	t.First, t.Count = blk*size, size
	if blk == nb-1 {
		t.Count = b.Accounts - t.First
	}
	t.Moves = t.Moves[:0]
	if t.ReadOnly {
		return
	}
	for range b.rounds() {
		from := t.First + int(r.below(uint64(t.Count)))
		to := t.First + int(r.below(uint64(t.Count-1)))
		if to >= from {
			to++
		}
		t.Moves = append(t.Moves, [2]int{from, to})
	}
}
