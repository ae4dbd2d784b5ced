package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfile turns on the runtime's block or mutex profile (name "block"
// or "mutex") for serve's --blockprofile or --mutexprofile, recording every
// event, and creates file; the returned function writes the profile there
// and turns the recording off again, logging a failure (it runs at
// shutdown, when an error has nowhere else to go). Cost: while on, a stack
// walk for each blocking event (block) or each contended unlock (mutex).
func startProfile(name, file string) (func(*slog.Logger), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	switch name {
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	default:
		f.Close()
		return nil, fmt.Errorf("no %s profile", name)
	}
	return func(log *slog.Logger) {
		err := pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		switch name {
		case "block":
			runtime.SetBlockProfileRate(0)
		case "mutex":
			runtime.SetMutexProfileFraction(0)
		}
		if err != nil {
			log.Error("serve: writing the "+name+" profile", "file", file, "err", err)
		}
	}, nil
}
