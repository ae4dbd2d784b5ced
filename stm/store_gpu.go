package stm

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// initStore uploads the initial values and fills the version rings
// (stm_init).
func (g *gpuEngine) initStore(w Workload, pl *runPlan, m *runMemory, k *kernels) error {
	iv := make([]uint64, pl.n)
	for i := range iv {
		iv[i] = w.InitialValue(i)
	}
	if err := m.initv.Write(g.sSrv, 0, iv); err != nil {
		return err
	}
	if err := k.init.Launch(g.sSrv, gpu.D1(gpu.Grid(pl.n, initBlock)), gpu.D1(initBlock), 0, m.globals, m.initv); err != nil {
		return err
	}
	if err := g.sSrv.Synchronize(); err != nil {
		return fmt.Errorf("initializing the store: %w", err)
	}
	return nil
}

// readFinal reads every item's newest version after the kernels finished
// (stm_final).
func (g *gpuEngine) readFinal(pl *runPlan, m *runMemory, k *kernels) ([]uint64, error) {
	if err := k.final.Launch(g.sSrv, gpu.D1(gpu.Grid(pl.n, initBlock)), gpu.D1(initBlock), 0, m.globals, m.final); err != nil {
		return nil, err
	}
	out := make([]uint64, pl.n)
	if err := m.final.Read(g.sSrv, 0, out); err != nil {
		return nil, err
	}
	if err := g.sSrv.Synchronize(); err != nil {
		return nil, fmt.Errorf("reading the final store: %w", err)
	}
	return out, nil
}
