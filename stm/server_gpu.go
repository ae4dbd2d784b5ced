package stm

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// startServers launches one server block per partition on the server
// stream and waits until every one runs (each says so in mapped memory),
// so that no client waits for a server that is not resident.
func (g *gpuEngine) startServers(pl *runPlan, m *runMemory, k *kernels, ro RunOptions) error {
	ctl := g.ctl.Slice()
	for i := range ctl {
		atomic.StoreUint64(&ctl[i], 0)
	}
	if err := k.server.Launch(g.sSrv, gpu.D1(pl.cfg.Servers), gpu.D1(pl.sh.serverWarps*32), pl.props.SharedPerBlockOptin, m.globals); err != nil {
		return fmt.Errorf("launching %d server blocks: %w", pl.cfg.Servers, err)
	}
	if err := g.awaitServers(pl.cfg.Servers); err != nil {
		dc := make([]uint64, dctlWords)
		if rerr := m.dctl.Read(nil, 0, dc); rerr == nil && dc[dctlError] != 0 {
			return g.describe(dc[dctlError], dc[dctlDetail0], dc[dctlDetail1], pl.n, ro)
		}
		return err
	}
	return nil
}

// awaitServers waits until every server block has said it runs.
func (g *gpuEngine) awaitServers(p int) error {
	ctl := g.ctl.Slice()
	end := time.Now().Add(serverStartTimeout)
	for {
		up := 0
		for i := 0; i < p; i++ {
			if atomic.LoadUint64(&ctl[hctlServersUp+i]) != 0 {
				up++
			}
		}
		if up == p {
			return nil
		}
		if done, err := g.sSrv.Done(); err != nil || done {
			return fmt.Errorf("the server kernel ended before the clients started (%d of %d blocks ran): %v", up, p, err)
		}
		if time.Now().After(end) {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			g.drain(time.Now(), RunOptions{Timeout: time.Second})
			return fmt.Errorf("only %d of %d server blocks became resident within %v", up, p, serverStartTimeout)
		}
		time.Sleep(pollEvery)
	}
}
