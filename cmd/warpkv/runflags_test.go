package main

import (
	"strings"
	"testing"
)

// TestRunFlagsAfterFile: "warpkv art run" and "btree run" take their
// flags after FILE as well as before it ("warpkv btree run FILE --batch
// 7"), with the same exit status and messages either way; a second
// argument is still refused. Each case runs the built binary.
func TestRunFlagsAfterFile(t *testing.T) {
	for _, tool := range []struct{ name, in, out string }{
		{"art", "put 0x61 1\nput 0x62 2\nget 0x61\nlen\n", "0x61 1\n2\n"},
		{"btree", "put 1 1\nput 2 2\nget 1\nlen\n", "1 1\n2\n"},
	} {
		file := writeTemp(t, tool.name+"-ops", tool.in)
		for _, tc := range []struct {
			name   string
			args   []string // after "TOOL run"; FILE stands for the file
			code   int
			stdout string
			stderr string
		}{
			{"flags before FILE", []string{"--device", "cpu", "--batch", "1", "FILE"}, 0, tool.out, ""},
			{"flags after FILE", []string{"FILE", "--device", "cpu", "--batch", "1"}, 0, tool.out, ""},
			{"flags on both sides", []string{"--device", "cpu", "FILE", "--batch=7"}, 0, tool.out, ""},
			{"standard input then flags", []string{"-", "--device", "cpu"}, 0, tool.out, ""},
			{"a bad --batch after FILE", []string{"FILE", "--batch", "-1"}, 2, "", "--batch"},
			{"a bad --device after FILE", []string{"FILE", "--device", "tpu"}, 2, "", `--device: device option "tpu"`},
			{"an unknown flag after FILE", []string{"FILE", "--nosuch"}, 2, "", "flag provided but not defined: -nosuch"},
			{"a flag without its value after FILE", []string{"FILE", "--batch"}, 2, "", "flag needs an argument: -batch"},
			{"a second argument", []string{"FILE", "--device", "cpu", "extra"}, 2, "", "one FILE argument, got 2"},
		} {
			t.Run(tool.name+"/"+tc.name, func(t *testing.T) {
				args := []string{tool.name, "run"}
				for _, a := range tc.args {
					if a == "FILE" {
						a = file
					}
					args = append(args, a)
				}
				code, out, errOut := runBinary(t, []byte(tool.in), args...)
				if code != tc.code || out != tc.stdout || !strings.Contains(errOut, tc.stderr) {
					t.Errorf("warpkv %v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
						args, code, out, errOut, tc.code, tc.stdout, tc.stderr)
				}
			})
		}
	}
}
