package bench

import "testing"

func TestModuleVersionReadsBothModuleFlavours(t *testing.T) {
	cases := []struct{ line, want string }{
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:02 UTC 2025", "580.65.06"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Wed Aug 13 06:36:52 UTC 2025", "580.159.04"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  535.104.05  Release Build", "535.104.05"},
		{"NVRM version: NVIDIA UNIX Kernel Module for x86_64", ""},
		{"NVRM version: something else 1.2", ""},
		{"", ""},
	}
	for _, c := range cases {
		if got := moduleVersion(c.line); got != c.want {
			t.Errorf("moduleVersion(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestIsVersion(t *testing.T) {
	for s, want := range map[string]bool{"580.159.04": true, "1.2": true, "for": false, "x86_64": false, "580": false, "1.": false, ".1": false, "1..2": false, "": false} {
		if got := isVersion(s); got != want {
			t.Errorf("isVersion(%q) = %v, want %v", s, got, want)
		}
	}
}
