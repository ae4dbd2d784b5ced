package stm

import (
	"errors"
	"fmt"
)

// CUDA is a workload whose transaction body is CUDA C written against the
// device API of stm.cuh; it runs on the GPU engine only. Body must define
//
//	__device__ void stm_body(stm_tx* tx)
//
// which calls stm_begin first, then stm_read (stm_read_many for several
// items at once), stm_write and, to give the transaction up, stm_abort;
// everything it draws must come from stm_rand, stm_below or stm_unit (they
// repeat on a retry), its parameters from stm_param(tx, i). It must return
// once stm_failed(tx) is true. Bodies see tx->ticket (the transaction's
// number) and tx->thread (the client thread); stm_check(tx, false) counts a
// committed transaction as wrong.
type CUDA struct {
	Label string             // names the workload
	Body  string             // CUDA C defining stm_body
	Size  int                // items N
	Init  func(i int) uint64 // initial values (nil: 0)
	Param []uint64           // stm_param(tx, i), at most 16
	// Bounds of one transaction's accesses (the engine sizes its read
	// and write sets by them; a transaction that exceeds one fails the
	// run): reads and writes of an update transaction, reads of a
	// read-only one.
	MaxReads, MaxWrites, MaxReadOnlyReads int
}

// Name returns the label.
func (c CUDA) Name() string {
	if c.Label == "" {
		return "cuda body"
	}
	return c.Label
}

// Items returns N.
func (c CUDA) Items() int { return c.Size }

// InitialValue returns Init(i), or 0.
func (c CUDA) InitialValue(i int) uint64 {
	if c.Init == nil {
		return 0
	}
	return c.Init(i)
}

func (c CUDA) spec() (*workloadSpec, error) {
	switch {
	case c.Body == "":
		return nil, errors.New("cuda workload: no body")
	case c.Size < 1 || c.Size > MaxItems:
		return nil, fmt.Errorf("cuda workload: %d items: want 1 to %d", c.Size, MaxItems)
	case len(c.Param) > maxParams:
		return nil, fmt.Errorf("cuda workload: %d parameters, at most %d", len(c.Param), maxParams)
	case c.MaxReads < 0 || c.MaxWrites < 0 || c.MaxReadOnlyReads < 0:
		return nil, errors.New("cuda workload: negative access bounds")
	}
	return &workloadSpec{
		cudaName: c.Name(), cuda: c.Body, params: c.Param,
		maxReads: c.MaxReads, maxWrites: c.MaxWrites, maxROReads: c.MaxReadOnlyReads,
	}, nil
}

// CompileArch is the architecture Compile checks a body for.
const CompileArch = "sm_90"

// Compile compiles the body into the GPU engine's kernels with NVRTC for
// CompileArch, so that a body's mistakes are reported (with NVRTC's log)
// before a run, on a machine without a GPU too. Cost: one NVRTC compile of
// the engine's program, about a second.
func (c CUDA) Compile() error {
	sp, err := c.spec()
	if err != nil {
		return err
	}
	p := gpuShape(sp, Config{}.withDefaults(), Options{}, 0).program(sp)
	if _, err := p.CompileCUBIN(CompileArch); err != nil {
		return fmt.Errorf("cuda workload %s: %w", c.Name(), err)
	}
	return nil
}
