package main

import (
	"fmt"
	"runtime"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
)

// version is the program version, raised by the lead on each release.
const version = "0.1.0-dev"

// runVersion prints the program version, the Go version, and the CUDA
// driver and NVRTC versions, or why each cannot be loaded.
func runVersion(e *env, args []string) error {
	fs := newFlagSet(e, "version", "warpkv version")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintf(e.stdout, "warpkv      %s%s\n", version, vcsRevision())
	fmt.Fprintf(e.stdout, "go          %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(e.stdout, "cuda driver %s\n", driverVersion())
	fmt.Fprintf(e.stdout, "nvrtc       %s\n", nvrtcVersion(true))
	return nil
}

// vcsRevision returns " (rev abcdef123456)" when the binary was built with
// version control information, else "".
func vcsRevision() string {
	rev, dirty := bench.BuildCommit()
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return " (rev " + rev + ")"
}

// driverVersion formats the CUDA driver API version, e.g. "13.0", or says
// why the driver cannot be loaded.
func driverVersion() string {
	v, err := gpu.DriverVersion()
	if err != nil {
		return "not loadable: " + err.Error()
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// nvrtcVersion formats the NVRTC version, with the library's path when
// withPath is set, or says why NVRTC cannot be loaded.
func nvrtcVersion(withPath bool) string {
	ma, mi, err := gpu.NVRTCVersion()
	if err != nil {
		return "not loadable: " + err.Error()
	}
	if withPath {
		return fmt.Sprintf("%d.%d (%s)", ma, mi, gpu.NVRTCPath())
	}
	return fmt.Sprintf("%d.%d", ma, mi)
}
