package main

// The checks every command runs on its flags before it allocates or
// starts anything (README, "Command-line manners"): a number out of its
// range, a size that cannot fit in memory and a bad flag value are usage
// errors (exit 2) naming the flag and what it accepts; an output file
// that cannot be written is an error (exit 1) said before the run.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
)

// inRange returns a usage error naming flag when v is outside [lo, hi]:
// "--conns 0: want 1 to 10000".
func inRange[T int | int64 | uint64](flag string, v, lo, hi T) error {
	if v < lo || v > hi {
		return usagef("%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// atLeast returns a usage error naming flag when v is below lo.
func atLeast[T int | int64 | uint64](flag string, v, lo T) error {
	if v < lo {
		return usagef("%s %d: want at least %d", flag, v, lo)
	}
	return nil
}

// checkDevice returns a usage error naming flag when device is not a
// device option (auto, cpu, gpu, gpu:N; "" for $WARPKV_DEVICE), or naming
// WARPKV_DEVICE when the flag was not given and the environment's value
// is the bad one.
func checkDevice(flag, device string) error {
	if _, err := gpu.ParseSpec(device); err != nil {
		if strings.TrimSpace(device) == "" {
			return usagef("%s (%s not given): %v", gpu.EnvDevice, flag, err)
		}
		return usagef("%s: %v", flag, err)
	}
	return nil
}

// onCPU reports whether the device option resolves to the CPU engine:
// "cpu", or auto without a usable GPU (gpu.Available, which loads the
// driver but opens no device). The option must parse (checkDevice).
func onCPU(device string) bool {
	spec, err := gpu.ParseSpec(device)
	if err != nil {
		return false
	}
	if spec.Auto {
		ok, _ := gpu.Available()
		return !ok
	}
	return spec.Backend == gpu.BackendCPU
}

// checkOutput checks, before a run, that path (the value of an output
// flag such as --json) can be written: it opens it for writing without
// truncating it, and removes it again when the check created it. "" (no
// output) passes. The error names the flag and says that nothing ran.
func checkOutput(cmd, flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s: %s %s: a directory, not a file (nothing was run)", cmd, flag, path)
	}
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %s: %w (nothing was run)", cmd, flag, err)
	}
	f.Close()
	if errors.Is(statErr, os.ErrNotExist) {
		os.Remove(path)
	}
	return nil
}

// memory is how much memory a run may use: the smallest of the kernel's
// MemAvailable and the room left under the process's cgroup limit, with
// where that figure comes from.
type memory struct {
	bytes  uint64
	source string
}

// availableMemory reads /proc/meminfo and the cgroup (v2, then v1) limit.
// ok is false when neither can be read (then no size is refused).
func availableMemory() (m memory, ok bool) {
	if v, err := meminfo("MemAvailable"); err == nil {
		m, ok = memory{v, "MemAvailable in /proc/meminfo"}, true
	}
	for _, c := range []struct{ limit, usage string }{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		limit, err1 := readUint(c.limit)
		usage, err2 := readUint(c.usage)
		if err1 != nil || err2 != nil || limit >= 1<<60 {
			continue
		}
		room := uint64(0)
		if limit > usage {
			room = limit - usage
		}
		if !ok || room < m.bytes {
			m, ok = memory{room, "the cgroup limit " + bench.IEC(int64(limit)) + " less its use"}, true
		}
		break
	}
	return m, ok
}

// meminfo returns a /proc/meminfo field in bytes.
func meminfo(field string) (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		num := strings.Fields(rest)
		if len(num) == 0 {
			break
		}
		kb, err := strconv.ParseUint(num[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/meminfo: no %s", field)
}

// readUint reads a file holding one decimal number ("max" is an error).
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// fits returns a usage error naming flag and value when need bytes (a
// lower bound of what the run would allocate, what says of what) exceed
// the available memory: "--size 4000000000000: needs at least 256 TiB
// (...), but 21.3 GiB is available (MemAvailable in /proc/meminfo)". A
// need of overflow (mul, add) is refused even where the available memory
// cannot be read.
func fits(flag string, value any, need uint64, what string) error {
	if need == overflow {
		return usagef("%s %v: needs more bytes of memory than a 64-bit count holds (%s)", flag, value, what)
	}
	m, ok := availableMemory()
	if !ok || need <= m.bytes {
		return nil
	}
	return usagef("%s %v: needs at least %s of memory (%s), but %s is available (%s)", flag, value, iecFloor(need), what, iecFloor(m.bytes), m.source)
}

// iecFloor formats a byte count, capped at 4 EiB (bench.IEC takes an
// int64, and "at least 4 EiB" stays true of any larger need).
func iecFloor(n uint64) string { return bench.IEC(int64(min(n, 1<<62))) }

// overflow is the need mul returns when the product overflows.
const overflow = ^uint64(0)

// mul returns the product of sizes, or overflow when it does not fit in
// a uint64 (a need nothing can meet).
func mul(a ...uint64) uint64 {
	p := uint64(1)
	for _, x := range a {
		if x != 0 && p > overflow/x {
			return overflow
		}
		p *= x
	}
	return p
}

// add returns the sum of sizes, or overflow.
func add(a ...uint64) uint64 {
	s := uint64(0)
	for _, x := range a {
		if s > overflow-x {
			return overflow
		}
		s += x
	}
	return s
}

// fitsGPU returns a usage error naming flag and value when need bytes of
// device memory (a lower bound, what says of what) exceed the total memory
// of the GPU the device option names (the first for auto and gpu). Where
// the GPU cannot be queried the engine reports the failure itself.
func fitsGPU(flag string, value any, need uint64, what, device string) error {
	spec, err := gpu.ParseSpec(device)
	if err != nil || (!spec.Auto && spec.Backend == gpu.BackendCPU) {
		return nil
	}
	p, err := gpu.Query(max(spec.Ordinal, 0))
	if err != nil || need <= p.TotalMem && need != overflow {
		return nil
	}
	return usagef("%s %v: needs at least %s of GPU memory (%s), but GPU %d (%s) has %s", flag, value,
		iecFloor(need), what, p.Ordinal, p.Name, iecFloor(p.TotalMem))
}
