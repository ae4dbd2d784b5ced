package gpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EnvDevice sets the default device option ("auto", "cpu", "gpu", "gpu:N").
const EnvDevice = "WARPKV_DEVICE"

// Backend says which engine a device option resolved to.
type Backend int

// Backends.
const (
	BackendCPU Backend = iota
	BackendGPU
)

func (b Backend) String() string {
	if b == BackendGPU {
		return "gpu"
	}
	return "cpu"
}

// Spec is a parsed device option.
type Spec struct {
	Auto    bool // "auto": GPU if usable, else CPU
	Backend Backend
	Ordinal int // for BackendGPU: device index; -1 means the first usable
}

func (s Spec) String() string {
	switch {
	case s.Auto:
		return "auto"
	case s.Backend == BackendCPU:
		return "cpu"
	case s.Ordinal < 0:
		return "gpu"
	default:
		return fmt.Sprintf("gpu:%d", s.Ordinal)
	}
}

// ParseSpec parses a device option. The empty string means the value of
// WARPKV_DEVICE, or "auto" when that is unset.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = strings.TrimSpace(os.Getenv(EnvDevice))
	}
	switch strings.ToLower(s) {
	case "", "auto":
		return Spec{Auto: true, Ordinal: -1}, nil
	case "cpu":
		return Spec{Backend: BackendCPU, Ordinal: -1}, nil
	case "gpu":
		return Spec{Backend: BackendGPU, Ordinal: -1}, nil
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "gpu:"); ok {
		n, err := strconv.Atoi(rest)
		if err == nil && n >= 0 {
			return Spec{Backend: BackendGPU, Ordinal: n}, nil
		}
	}
	return Spec{}, fmt.Errorf("device option %q: want auto, cpu, gpu or gpu:N", s)
}

// Choice is a resolved device option: the backend, the opened device for
// the GPU backend, and a sentence saying what was chosen and why.
type Choice struct {
	Backend Backend
	Device  *Device // nil for the CPU backend; the caller closes it
	Reason  string
}

// Choose resolves a device option (see ParseSpec) and opens the device.
// "auto" falls back to the CPU and says why; "gpu" or "gpu:N" where no GPU
// is usable is an error naming the reason.
func Choose(option string) (Choice, error) {
	spec, err := ParseSpec(option)
	if err != nil {
		return Choice{}, err
	}
	if !spec.Auto && spec.Backend == BackendCPU {
		return Choice{Backend: BackendCPU, Reason: "cpu engine: requested"}, nil
	}
	ok, why := Available()
	if !ok {
		if spec.Auto {
			return Choice{Backend: BackendCPU, Reason: "cpu engine: no usable GPU (" + why + ")"}, nil
		}
		return Choice{}, fmt.Errorf("device %s requested but no GPU is usable: %s", spec, why)
	}
	ord := spec.Ordinal
	if ord < 0 {
		ord = 0
	}
	d, err := Open(ord)
	if err != nil {
		if spec.Auto {
			return Choice{Backend: BackendCPU, Reason: "cpu engine: GPU 0 unusable (" + err.Error() + ")"}, nil
		}
		return Choice{}, fmt.Errorf("device %s: %w", spec, err)
	}
	how := "requested"
	if spec.Auto {
		how = "auto"
	}
	return Choice{Backend: BackendGPU, Device: d, Reason: fmt.Sprintf("gpu engine on %s: %s", d, how)}, nil
}
