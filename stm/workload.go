package stm

import "fmt"

// Workload is a transaction mix the Engine runs on either backend: Bank,
// Memcached, RMW, or CUDA (a body written in CUDA C, GPU only).
type Workload interface {
	// Name says what the workload is, e.g. "bank 1000 accounts".
	Name() string
	// Items is the store size N.
	Items() int
	// InitialValue is item i's value before the first transaction.
	InitialValue(i int) uint64
	// spec describes the workload to the engines.
	spec() (*workloadSpec, error)
}

// workloadSpec is a workload as the engines see it. A run numbers its
// transactions with tickets 0, 1, 2, ...; a transaction draws everything
// from txRNG(seed, ticket) (and, for sharded workloads, from the number of
// the client running it), so every retry repeats the same transaction.
type workloadSpec struct {
	// readOnly tells whether ticket's transaction is read-only (CPU).
	readOnly func(seed, ticket uint64, thread, threads int) bool
	// body runs ticket's transaction on the CPU engine and reports a
	// failed workload check ("bad": a Bank total that is wrong). Nil: the
	// workload has no CPU form.
	body func(tx *Tx, seed, ticket uint64, thread, threads int) bool
	// cudaName names the body's source in diagnostics; cuda is CUDA C
	// defining stm_body (see stm.cuh); params are its parameters.
	cudaName string
	cuda     string
	params   []uint64
	// Bounds of one transaction's accesses: reads and writes of update
	// transactions, reads of read-only ones.
	maxReads, maxWrites, maxROReads int
	// check verifies the final store after a run with the given counts
	// (nil: nothing to check).
	check func(final []uint64, st Stats) error
	// orderFree: with every ticket committed exactly once, the final store
	// does not depend on the commit order (so both engines and a serial
	// run end equal).
	orderFree bool
	// sharded: transactions depend on the client that runs them.
	sharded bool
	// span: an update transaction's items lie within a block of this many
	// consecutive items, the blocks starting at multiples of span (0:
	// unknown, as for a CUDA body); the GPU engine's default number of
	// servers keeps partitions much wider (defaultServers) and splits no
	// block between two (alignedPartitions).
	span int
	// skewed: some items are much more popular than others (a Zipf law):
	// more concurrency mostly makes more conflicts, so defaultThreads
	// gives no more threads for update transactions that wait for a
	// read-only warp-mate.
	skewed bool
}

// serial runs tickets [0, n) one after another on a plain array, the
// reference a run with every ticket committed once must equal when the
// workload is order-free. Not for sharded workloads.
func serial(w Workload, seed uint64, n int64) ([]uint64, error) {
	sp, err := w.spec()
	if err != nil {
		return nil, err
	}
	if sp.body == nil || sp.sharded {
		return nil, fmt.Errorf("stm: %s has no serial form", w.Name())
	}
	s, err := NewStore(StoreOptions{Items: w.Items(), Init: w.InitialValue, Config: Config{Versions: 1}})
	if err != nil {
		return nil, err
	}
	for t := int64(0); t < n; t++ {
		ro := sp.readOnly(seed, uint64(t), 0, 1)
		fn := func(tx *Tx) error { sp.body(tx, seed, uint64(t), 0, 1); return nil }
		if ro {
			err = s.ReadOnly(fn)
		} else {
			err = s.Atomically(fn)
		}
		if err != nil {
			return nil, err
		}
	}
	return s.Final(), nil
}

// drawnReadOnly is the readOnly of a workload whose body draws, first
// from its ticket's generator, whether the transaction is read-only, with
// a share of ppm parts per million. Cost: one draw.
func drawnReadOnly(ppm uint64) func(seed, ticket uint64, thread, threads int) bool {
	return func(seed, ticket uint64, _, _ int) bool {
		r := txRNG(seed, ticket)
		return r.below(1e6) < ppm
	}
}
