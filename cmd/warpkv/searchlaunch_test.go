package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/server"
)

// TestSearchLaunchModesOneTable: every mode of server.SearchLaunchModes
// is what serve's --search-launch accepts, lists in its usage line and
// help, and what bench serve's engine specs take, so that a mode added to
// the table reaches each of them.
func TestSearchLaunchModesOneTable(t *testing.T) {
	help := searchLaunchUsage()
	for _, m := range server.SearchLaunchModes() {
		f := serveFlags{memMB: 64, itemMax: 1 << 20, itemArg: "1m", factor: 1.25, chunk: 48, device: "cpu",
			policy: server.PolicyLoad, mode: server.GPUSearchPersistent, cpuSearch: server.CPUSearchInline, launch: m.Name}
		if err := checkServe(f); err != nil {
			t.Errorf("serve --search-launch %s: %v", m.Name, err)
		}
		if !strings.Contains(help, m.Name+" ("+m.Doc+")") {
			t.Errorf("--search-launch help %q lacks %s (%s)", help, m.Name, m.Doc)
		}
		dev, flags, ok := engineSpecFlags("gpu/" + m.Name)
		if want := []string{"--search-launch", m.Name}; dev != "gpu" || !ok || !slices.Equal(flags, want) {
			t.Errorf("engine spec gpu/%s: %q %q %v, want gpu %q true", m.Name, dev, flags, ok, want)
		}
		if err := checkBenchServe(64, 0, "gpu/"+m.Name, 0, "", "", nil); err != nil {
			t.Errorf("bench serve --engines gpu/%s: %v", m.Name, err)
		}
	}
	code, _, errOut := runBinary(t, nil, "serve", "-h")
	if want := "[--search-launch " + strings.Join(server.SearchLaunchNames(), "|") + "]"; code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("warpkv serve -h: exit %d, usage lacks %q:\n%s", code, want, errOut)
	}
	if got := server.SearchLaunchNames()[0]; got != server.SearchLaunchCallers {
		t.Errorf("default search launch %q, want %q", got, server.SearchLaunchCallers)
	}
}
