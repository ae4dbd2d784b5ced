package stm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// runClients launches the client grid on the client stream and waits for
// it and then for the servers; it returns the clients' time (events, else
// the host's clock).
func (g *gpuEngine) runClients(pl *runPlan, m *runMemory, k *kernels, ro RunOptions) (time.Duration, error) {
	if err := g.evA.Record(g.sCli); err != nil {
		return 0, err
	}
	started := time.Now()
	if err := k.client.Launch(g.sCli, gpu.D1(pl.blocks), gpu.D1(pl.sh.clientBlock), 0, m.globals); err != nil {
		atomic.StoreUint64(&g.ctl.Slice()[hctlAbort], 1)
		g.drain(started, ro)
		return 0, fmt.Errorf("launching %d client blocks: %w", pl.blocks, err)
	}
	if err := g.evB.Record(g.sCli); err != nil {
		return 0, err
	}
	if err := g.wait(started, ro); err != nil {
		return 0, err
	}
	elapsed, err := gpu.Elapsed(g.evA, g.evB)
	if err != nil || elapsed <= 0 {
		elapsed = time.Since(started)
	}
	return elapsed, nil
}

// wait polls the client stream until the clients finish, stopping them
// after the run's duration and aborting at its timeout, then waits for the
// servers.
func (g *gpuEngine) wait(started time.Time, ro RunOptions) error {
	ctl := g.ctl.Slice()
	stopAt := started.Add(ro.Duration)
	abortAt := started.Add(ro.Timeout + stopGrace/3) // after the kernels' own deadline
	stopped := false
	for {
		done, err := g.sCli.Done()
		if err != nil {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			g.drain(time.Now(), ro)
			return fmt.Errorf("client kernel: %w", err)
		}
		if done {
			break
		}
		now := time.Now()
		if ro.Transactions == 0 && !stopped && now.After(stopAt) {
			atomic.StoreUint64(&ctl[hctlStop], 1)
			stopped = true
		}
		if now.After(abortAt) {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			if err := g.drain(now, ro); err != nil {
				return err
			}
			return fmt.Errorf("timed out after %v", ro.Timeout)
		}
		time.Sleep(pollEvery)
	}
	end := time.Now().Add(stopGrace)
	for {
		done, err := g.sSrv.Done()
		if err != nil {
			return fmt.Errorf("server kernel: %w", err)
		}
		if done {
			return nil
		}
		if time.Now().After(end) {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			return g.drain(time.Now(), ro)
		}
		time.Sleep(pollEvery)
	}
}

// drain waits up to stopGrace for both streams after an abort.
func (g *gpuEngine) drain(from time.Time, _ RunOptions) error {
	end := from.Add(stopGrace)
	for time.Now().Before(end) {
		a, errA := g.sCli.Done()
		b, errB := g.sSrv.Done()
		if errA != nil || errB != nil {
			return errors.Join(errA, errB)
		}
		if a && b {
			return nil
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("the kernels did not stop within %v of being told to: %s may need a reset", stopGrace, g.dev)
}
