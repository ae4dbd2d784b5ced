package gpu_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// envSigtermChild makes the test binary a child that opens the device,
// says so and waits for a signal (TestSigtermEndsAProcessWithADevice).
const envSigtermChild = "WARPKV_TEST_SIGTERM_CHILD"

// sigtermChild is that child: it opens device 0, pins a buffer, prints
// "ready" and sleeps until a signal ends it.
func sigtermChild() {
	d, err := gpu.Open(0)
	if err != nil {
		os.Stdout.WriteString("no device: " + err.Error() + "\n")
		os.Exit(3)
	}
	if _, err := gpu.AllocHost[byte](d, 1<<20); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
	os.Exit(5)
}

// TestSigtermEndsAProcessWithADevice sends SIGTERM to a process that has
// a device open and no signal handling of its own, three times: it must
// end by the signal, as any Go program does, not abort with the runtime's
// "non-Go code set up signal handler without SA_ONSTACK flag" (what the
// driver's handlers did before keepSignalsOnStack).
func TestSigtermEndsAProcessWithADevice(t *testing.T) {
	gputest.Device(t)
	for i := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), envSigtermChild+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %d: %q, stderr %s", i, line, stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("child %d: %v after SIGTERM", i, err)
		}
		ws := ee.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM || strings.Contains(stderr.String(), "fatal error") {
			t.Fatalf("child %d ended with %v (signaled %v), stderr:\n%.2000s", i, err, ws.Signaled(), stderr.String())
		}
	}
}
