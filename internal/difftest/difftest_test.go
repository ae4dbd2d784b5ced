package difftest

import (
	"strings"
	"testing"
)

func TestRunMemcachedAgainstMemcached(t *testing.T) {
	if !OwnMemcached() {
		t.Skip("needs two memcached processes; only a shared one ($" + EnvMemcached + ") is available")
	}
	cfg := Config{}
	if testing.Short() {
		cfg.Sequences = 20
	}
	Run(t, Memcached(t), Memcached(t), cfg)
}

// TestRunFindsDifferences runs against a memcached that differs from the
// reference in one setting and requires Run to report it.
func TestRunFindsDifferences(t *testing.T) {
	if !OwnMemcached() {
		t.Skip("needs memcached processes of our own")
	}
	want := Memcached(t)
	for _, tc := range []struct {
		name  string
		extra []string
		cfg   Config
		in    string // substring of the first report
	}{
		{name: "CAS disabled", extra: []string{"-C"}, cfg: Config{Seed: 1}, in: "replies differ"},
		{name: "2 MiB item limit", extra: []string{"-I", "2m"}, cfg: Config{Seed: 2, Protocols: Text, NoBadInput: true, Sequences: 400},
			in: "1049600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			res := run(want, Memcached(t, tc.extra...), cfg)
			if res.fatal != "" {
				t.Fatal(res.fatal)
			}
			if len(res.diffs) == 0 {
				t.Fatalf("no difference found in %d steps", res.steps)
			}
			if !strings.Contains(res.diffs[0], tc.in) || !strings.Contains(res.diffs[0], "WARPKV_DIFF_SEED=") {
				t.Errorf("report lacks %q or the seed:\n%s", tc.in, res.diffs[0])
			}
		})
	}
}
