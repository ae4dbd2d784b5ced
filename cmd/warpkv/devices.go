package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
)

// runDevices lists the GPUs, or says in one sentence why none is usable.
// Having no GPU is not an error: warpkv then runs on the CPU engine.
func runDevices(e *env, args []string) error {
	fs := newFlagSet(e, "devices", "warpkv devices")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("devices takes no arguments")
	}
	return printDevices(e.stdout)
}

// printDevices writes a table of the GPUs (ordinal, name, compute
// capability, SMs, memory, driver and NVRTC versions), or a sentence saying
// why no GPU is usable. It fails only when writing fails.
func printDevices(w io.Writer) error {
	n, err := gpu.Count()
	if err != nil {
		_, err = fmt.Fprintf(w, "No GPU is usable: %v.\nwarpkv runs its engines on the CPU.\n", err)
		return err
	}
	if n == 0 {
		_, err = fmt.Fprintln(w, "No GPU is usable: the CUDA driver loads but reports no devices.\nwarpkv runs its engines on the CPU.")
		return err
	}
	drv, nv := driverVersion(), nvrtcVersion(false)
	_, _, nvErr := gpu.NVRTCVersion()
	if nvErr != nil {
		nv = "-"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ordinal\tname\tcompute\tSMs\tmemory\tdriver\tnvrtc")
	var queryErrs []error
	for i := range n {
		p, err := gpu.Query(i)
		if err != nil {
			queryErrs = append(queryErrs, err)
			fmt.Fprintf(tw, "%d\t(unreadable)\t-\t-\t-\t%s\t%s\n", i, drv, nv)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%d.%d\t%d\t%s\t%s\t%s\n", p.Ordinal, p.Name, p.Major, p.Minor, p.SMs,
			bench.IEC(int64(p.TotalMem)), drv, nv)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, err := range queryErrs {
		fmt.Fprintf(w, "A device could not be queried: %v.\n", err)
	}
	if nvErr != nil {
		_, err := fmt.Fprintf(w, "No GPU is usable: NVRTC cannot be loaded, so no kernel can be compiled: %v.\nwarpkv runs its engines on the CPU.\n", nvErr)
		return err
	}
	return nil
}
