//go:build !(linux && (amd64 || arm64))

package gpu

// keepSignalsOnStack is a no-op where warpkv does not check the signal
// handlers the CUDA driver installs (see sigstack_linux.go).
func keepSignalsOnStack() int { return 0 }

// signalsOffStack reports nothing where handlers are not checked.
func signalsOffStack() []int { return nil }
