package main

// bench serve's connection limit with memcached (Linux: memcachedPath
// lives beside the other tests that start memcached).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBenchServe4096ConnsOnMemcached (issue 19): issue 19's largest
// unpipelined case through bench serve's own loadgen flags ("-- --pipeline
// 1 --conns 4096") measures memcached: the servers' -c leaves room for the
// 4096 clients, the preload's and the descriptors memcached reserves (at
// -c 4096 memcached refused part of them and the row failed with a broken
// pipe).
func TestBenchServe4096ConnsOnMemcached(t *testing.T) {
	if testing.Short() {
		t.Skip("runs memcached with 4096 clients")
	}
	memcachedPath(t)
	path := filepath.Join(t.TempDir(), "serve.json")
	code, out, errOut := runBinary(t, nil, "bench", "serve", "--engines", "", "-m", "64", "--p99-at", "0", "--crosscheck", "none",
		"--json", path, "--", "--pipeline", "1", "--conns", "4096", "--duration", "500ms", "--warmup", "500ms",
		"--workloads", "a", "--mix", "100:0", "--dist", "uniform", "--keys", "1000", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep serveReport
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Servers) != 1 || len(rep.Servers[0].Rows) != 1 {
		t.Fatalf("report: %d servers, want memcached with one row:\n%s", len(rep.Servers), out)
	}
	if r := rep.Servers[0].Rows[0]; r.Err != "" || r.Result.Ops == 0 || r.Result.Errors != 0 {
		t.Errorf("memcached at 4096 connections: error %q, %d ops, %d errors; want the row measured:\n%s", r.Err, r.Result.Ops, r.Result.Errors, out)
	}
}
