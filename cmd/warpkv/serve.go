package main

import (
	"fmt"

	"warpkv/gpu"
)

// runServe stands in for the Mega-KV server, which a later version adds:
// it says so, shows which engine the device option would choose and lists
// the devices, and succeeds, so that the README's first command works.
func runServe(e *env, args []string) error {
	fs := newFlagSet(e, "serve", "warpkv serve [--device auto|cpu|gpu|gpu:N]")
	device := fs.String("device", "", "engine: auto, cpu, gpu or gpu:N (default: $"+gpu.EnvDevice+", else auto)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	fmt.Fprintln(e.stdout, "The Mega-KV memcached-compatible server is not built yet; a later version of warpkv adds it.")
	c, err := gpu.Choose(*device)
	if err != nil {
		fmt.Fprintf(e.stdout, "Device option: %v\n", err)
	} else {
		fmt.Fprintf(e.stdout, "Engine it would use: %s\n", c.Reason)
		if c.Device != nil {
			if err := c.Device.Close(); err != nil {
				return fmt.Errorf("closing %s: %w", c.Device, err)
			}
		}
	}
	fmt.Fprintln(e.stdout, "\nDevices:")
	return printDevices(e.stdout)
}
