//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"runtime"
)

// errNoAffinity says that this system has no CPU affinity calls warpkv
// uses (sched_getaffinity and sched_setaffinity are Linux's).
var errNoAffinity = errors.New("CPU affinity (pinning servers and load to CPUs) needs Linux")

// allowedCPUs returns the CPUs this process may run on: every CPU, where
// the system has no affinity to read.
func allowedCPUs() ([]int, error) {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus, nil
}

// startPinned cannot pin cmd here: it returns errNoAffinity, so that no
// measurement runs unpinned when pinned was asked for.
func startPinned(cmd *exec.Cmd, cpus []int) error { return errNoAffinity }

// processAffinity cannot read another process's CPUs here.
func processAffinity(pid int) ([]int, error) { return nil, errNoAffinity }
