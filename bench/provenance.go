package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// Provenance says what produced a report, so that anyone can reproduce it:
// the source, the command line, the machine and the date. Every report
// embeds one (its fields are the report's top-level JSON keys).
type Provenance struct {
	// Commit is the git commit of the source the binary was built from
	// ("unknown" when neither the binary nor the working directory says).
	Commit string `json:"commit"`
	// Modified is true when the tree had uncommitted changes to tracked
	// files.
	Modified bool `json:"modified"`
	// CommitFrom says where Commit was read: "build" (the binary's
	// version control stamp), "git" (the warpkv checkout the command ran
	// in), "file" (a CommitFile beside the binary, as scripts/pack-gpu.sh
	// writes) or "env" ($WARPKV_COMMIT), for a binary built without stamps
	// and run outside its checkout, such as one carried to a GPU machine.
	CommitFrom string `json:"commit_from,omitempty"`
	// CommandLine is the full command line, program first.
	CommandLine []string `json:"command_line"`
	// Device names the GPUs ("2 x NVIDIA H200"), or says why none is
	// usable.
	Device string `json:"device"`
	// Driver is the CUDA driver API version and the NVIDIA kernel
	// driver's, when loadable.
	Driver string `json:"driver"`
	// CPUModel is the processor's model name; CPUCores the logical CPUs
	// of the machine.
	CPUModel string `json:"cpu_model"`
	CPUCores int    `json:"cpu_cores"`
	// Date is when the run started, UTC.
	Date time.Time `json:"date"`
}

// NewProvenance describes this process: its command line, the commit it was
// built from, the GPUs, the driver and the CPU. Cost: loading the CUDA
// driver library if not loaded, and at most two git commands.
func NewProvenance() Provenance {
	p := Provenance{
		CommandLine: append([]string(nil), os.Args...),
		CPUModel:    cpuModel(),
		CPUCores:    runtime.NumCPU(),
		Date:        time.Now().UTC().Round(time.Second),
	}
	p.Commit, p.Modified, p.CommitFrom = commit()
	p.Device, p.Driver = deviceAndDriver()
	return p
}

// Print writes the provenance as a few "key: value" lines.
func (p *Provenance) Print(w io.Writer) error {
	if p.Commit == "" && len(p.CommandLine) == 0 {
		_, err := fmt.Fprintln(w, "provenance: not recorded (a report from before provenance was kept)")
		return err
	}
	mod := ""
	if p.Modified {
		mod = " (tree modified)"
	}
	_, err := fmt.Fprintf(w, "commit:  %s%s\ncommand: %s\ndevice:  %s; driver %s\ncpu:     %s, %d cores\ndate:    %s\n",
		p.Commit, mod, shellJoin(p.CommandLine), p.Device, p.Driver, p.CPUModel, p.CPUCores, p.Date.Format(time.RFC3339))
	return err
}

// shellJoin quotes the words that a shell would split or expand.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"$`\\|&;<>()*?[]{}~#!") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		out[i] = w
	}
	return strings.Join(out, " ")
}

// EnvCommit names the commit a report records, with "+modified" appended
// when the tree had changes, overriding what the binary and the working
// directory say: set it where neither knows (a binary built with
// -buildvcs=false and run on another machine).
const EnvCommit = "WARPKV_COMMIT"

// commit returns the commit from $WARPKV_COMMIT, else from the binary's
// build stamp, else from git in the working directory when it is a warpkv
// checkout, else from a CommitFile beside the binary.
func commit() (rev string, modified bool, from string) {
	if v := os.Getenv(EnvCommit); v != "" {
		rev, dirty := strings.CutSuffix(v, "+modified")
		return rev, dirty, "env"
	}
	if rev, modified := BuildCommit(); rev != "" {
		return rev, modified, "build"
	}
	if rev, modified, ok := gitCommit(); ok {
		return rev, modified, "git"
	}
	// A binary packed by scripts/pack-gpu.sh has the commit beside it.
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(exe), CommitFile)); err == nil {
			if v := strings.TrimSpace(string(b)); v != "" {
				rev, dirty := strings.CutSuffix(v, "+modified")
				return rev, dirty, "file"
			}
		}
	}
	return "unknown", false, ""
}

// BuildCommit returns the commit of the binary's version control stamp and
// whether the tree had uncommitted changes, or "" when the binary has no
// stamp (built with -buildvcs=false or outside a checkout). Cost: reads
// the build information.
func BuildCommit() (rev string, modified bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return rev, modified
}

// CommitFile is the file beside a binary that names the commit it was
// built from ("+modified" appended when the tree had changes), written by
// scripts/pack-gpu.sh for binaries carried to a machine without the
// checkout's git history.
const CommitFile = "COMMIT"

// gitCommit returns HEAD and whether tracked files changed, when the
// working directory is inside a warpkv checkout.
func gitCommit() (rev string, modified, ok bool) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", false, false
	}
	root := strings.TrimSpace(string(top))
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.Contains(mod, []byte("module github.com/warpkv/warpkv")) {
		return "", false, false
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false, false
	}
	status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(head)), err == nil && len(bytes.TrimSpace(status)) > 0, true
}

// deviceAndDriver names the GPUs and the driver versions, or says why no
// GPU is usable.
func deviceAndDriver() (device, driver string) {
	driver = "none"
	if v, err := gpu.DriverVersion(); err == nil {
		driver = fmt.Sprintf("CUDA %d.%d", v/1000, v%1000/10)
		if k := kernelDriver(); k != "" {
			driver += ", NVIDIA " + k
		}
	}
	ok, why := gpu.Available()
	if !ok {
		return "no usable GPU: " + why, driver
	}
	ps, err := gpu.List()
	if err != nil || len(ps) == 0 {
		return "GPUs not listable", driver
	}
	var names []string
	count := map[string]int{}
	for _, p := range ps {
		if count[p.Name] == 0 {
			names = append(names, p.Name)
		}
		count[p.Name]++
	}
	for i, n := range names {
		if count[n] > 1 {
			names[i] = fmt.Sprintf("%d x %s", count[n], n)
		}
	}
	return strings.Join(names, ", "), driver
}

// kernelDriver returns the NVIDIA kernel module's version from
// /proc/driver/nvidia/version, or "".
func kernelDriver() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	return moduleVersion(strings.SplitN(string(b), "\n", 2)[0])
}

// moduleVersion returns the version in the first line of
// /proc/driver/nvidia/version: the first field after "Module" made of
// digits and dots, or "". The proprietary module writes "NVRM version:
// NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul ...", the open one
// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04
// Release Build ...".
func moduleVersion(line string) string {
	f := strings.Fields(line)
	for i, w := range f {
		if w != "Module" {
			continue
		}
		for _, v := range f[i+1:] {
			if isVersion(v) {
				return v
			}
		}
	}
	return ""
}

// isVersion reports whether s is digits with at least one dot between
// them, such as 580.159.04.
func isVersion(s string) bool {
	dot, digit := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c == '.' && digit && i+1 < len(s):
			dot, digit = true, false
		default:
			return false
		}
	}
	return dot && digit
}

// cpuModel returns the processor's model name from /proc/cpuinfo, or the
// architecture when it does not say.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model":
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return runtime.GOARCH
}
