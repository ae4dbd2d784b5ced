package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
)

// startServeProfiles starts the Go profiles serve's --cpuprofile,
// --blockprofile and --mutexprofile ask for (an empty file: not asked),
// each written to its file over the whole run; the returned stop ends them
// and writes the block and mutex profiles, logging a failure (it runs at
// shutdown, when an error has nowhere else to go). On an error the
// profiles already started are stopped. Cost: the CPU profile's sampling;
// a stack walk for each blocking event (block) or contended unlock
// (mutex) while those are on.
func startServeProfiles(log *slog.Logger, cpu, block, mutex string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("serve: --cpuprofile: %w", err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	for _, p := range []struct{ name, file string }{{"block", block}, {"mutex", mutex}} {
		if p.file == "" {
			continue
		}
		done, err := startProfile(p.name, p.file)
		if err != nil {
			stop()
			return nil, fmt.Errorf("serve: --%sprofile: %w", p.name, err)
		}
		stops = append(stops, func() { done(log) })
	}
	return stop, nil
}

// startProfile turns on the runtime's block or mutex profile (name "block"
// or "mutex"), recording every event, and creates file; the returned
// function writes the profile there and turns the recording off again,
// logging a failure.
func startProfile(name, file string) (func(*slog.Logger), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	rate := func(n int) { runtime.SetBlockProfileRate(n) }
	if name == "mutex" {
		rate = func(n int) { runtime.SetMutexProfileFraction(n) }
	}
	rate(1)
	return func(log *slog.Logger) {
		err := pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		rate(0)
		if err != nil {
			log.Error("serve: writing the "+name+" profile", "file", file, "err", err)
		}
	}, nil
}
