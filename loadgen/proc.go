package loadgen

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux reports them
// in USER_HZ ticks, 100 per second on every architecture it runs on.
const userHZ = 100

// ProcessCPU returns the CPU time (user plus system, of all its threads)
// that process pid has used so far, as the kernel accounts it for the
// process's rusage, read from /proc/pid/stat. Resolution: 10 ms. Linux
// only.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("loadgen: process cpu time: %w", err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("loadgen: process cpu time: unexpected /proc/%d/stat %q", pid, b)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("loadgen: process cpu time: unexpected /proc/%d/stat %q", pid, b)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// SelfCPU returns the CPU time this process has used, user and system, of
// all its threads (getrusage); 0 if the call fails. Cost: one system call.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// FetchStats sends "stats GROUP" ("stats" for "" or "-") to the server at
// addr and returns its numeric statistics by name.
func FetchStats(addr, group string) (map[string]float64, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("loadgen: stats: %w", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	cmd := "stats\r\n"
	if group != "" && group != "-" {
		cmd = "stats " + group + "\r\n"
	}
	if _, err := nc.Write([]byte(cmd)); err != nil {
		return nil, fmt.Errorf("loadgen: stats: %w", err)
	}
	out := map[string]float64{}
	br := bufio.NewReader(nc)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("loadgen: stats %s: %w", group, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "END" {
			return out, nil
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "STAT" {
			return nil, fmt.Errorf("loadgen: stats %s: unexpected line %q", group, line)
		}
		if v, err := strconv.ParseFloat(f[2], 64); err == nil {
			out[f[1]] = v
		}
	}
}

// statsDelta returns after-before for every name in after.
func statsDelta(before, after map[string]float64) map[string]float64 {
	d := make(map[string]float64, len(after))
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}
