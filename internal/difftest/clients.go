package difftest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// clientScenario is one scenario of ClientSuite: it runs against a client
// of the server, on keys that start with prefix.
type clientScenario struct {
	name string
	run  func(t *testing.T, c *memcache.Client, prefix string)
}

// ClientSuite runs a table of scenarios through the gomemcache client
// library against the server at addr, each as a subtest: storage commands
// and their errors (ErrCacheMiss, ErrNotStored, ErrCASConflict,
// ErrMalformedKey), counters, touch, multi-gets, big values, flush_all,
// and many goroutines checking that they read their own writes and that
// incr and cas are atomic. It flushes the server: give it one of its own.
// Cost: about a second.
func ClientSuite(t *testing.T, addr string) {
	t.Helper()
	prefix := fmt.Sprintf("cs%x:", rand.Uint32())
	for _, sc := range clientScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			c := memcache.New(addr)
			c.Timeout = 5 * time.Second
			c.MaxIdleConns = 64
			defer c.Close()
			sc.run(t, c, prefix+strings.ReplaceAll(sc.name, " ", "_")+":")
		})
	}
}

// must fails the test on a non-nil error.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantErr requires err to be target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// wantValue requires key to hold value (and flags).
func wantValue(t *testing.T, c *memcache.Client, key, value string, flags uint32) *memcache.Item {
	t.Helper()
	it, err := c.Get(key)
	if err != nil {
		t.Fatalf("get %q: %v, want %q", key, err, value)
	}
	if string(it.Value) != value || it.Flags != flags {
		t.Fatalf("get %q = %q flags %d, want %q flags %d", key, shorten(it.Value), it.Flags, shorten([]byte(value)), flags)
	}
	return it
}

func shorten(b []byte) string { return quoteShort(b) }

func clientScenarios() []clientScenario {
	return []clientScenario{
		{"set get", func(t *testing.T, c *memcache.Client, p string) {
			for i, v := range []string{"", "x", "with space", "a\r\nb\r\n", "\x00\xff\x80binary", strings.Repeat("z", 4096)} {
				k := p + strconv.Itoa(i)
				must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte(v), Flags: uint32(i) * 1000003}))
				wantValue(t, c, k, v, uint32(i)*1000003)
			}
			must(t, "overwrite", c.Set(&memcache.Item{Key: p + "0", Value: []byte("new")}))
			wantValue(t, c, p+"0", "new", 0)
		}},
		{"miss", func(t *testing.T, c *memcache.Client, p string) {
			_, err := c.Get(p + "absent")
			wantErr(t, "get absent", err, memcache.ErrCacheMiss)
		}},
		{"add replace", func(t *testing.T, c *memcache.Client, p string) {
			k := p + "k"
			wantErr(t, "replace absent", c.Replace(&memcache.Item{Key: k, Value: []byte("r")}), memcache.ErrNotStored)
			must(t, "add absent", c.Add(&memcache.Item{Key: k, Value: []byte("a")}))
			wantErr(t, "add present", c.Add(&memcache.Item{Key: k, Value: []byte("b")}), memcache.ErrNotStored)
			wantValue(t, c, k, "a", 0)
			must(t, "replace present", c.Replace(&memcache.Item{Key: k, Value: []byte("r"), Flags: 7}))
			wantValue(t, c, k, "r", 7)
		}},
		{"append prepend", func(t *testing.T, c *memcache.Client, p string) {
			k := p + "k"
			wantErr(t, "append absent", c.Append(&memcache.Item{Key: k, Value: []byte("x")}), memcache.ErrNotStored)
			wantErr(t, "prepend absent", c.Prepend(&memcache.Item{Key: k, Value: []byte("x")}), memcache.ErrNotStored)
			must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("mid"), Flags: 5}))
			must(t, "append", c.Append(&memcache.Item{Key: k, Value: []byte(">>"), Flags: 9}))
			must(t, "prepend", c.Prepend(&memcache.Item{Key: k, Value: []byte("<<")}))
			wantValue(t, c, k, "<<mid>>", 5) // flags of the original item
		}},
		{"compare and swap", func(t *testing.T, c *memcache.Client, p string) {
			k := p + "k"
			must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("v1")}))
			it := wantValue(t, c, k, "v1", 0)
			it.Value = []byte("v2")
			must(t, "cas with fresh item", c.CompareAndSwap(it))
			it.Value = []byte("v3")
			wantErr(t, "cas with stale item", c.CompareAndSwap(it), memcache.ErrCASConflict)
			wantValue(t, c, k, "v2", 0)
			must(t, "delete", c.Delete(k))
			wantErr(t, "cas on deleted key", c.CompareAndSwap(it), memcache.ErrCacheMiss)
		}},
		{"delete", func(t *testing.T, c *memcache.Client, p string) {
			k := p + "k"
			must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("v")}))
			must(t, "delete", c.Delete(k))
			wantErr(t, "delete again", c.Delete(k), memcache.ErrCacheMiss)
			_, err := c.Get(k)
			wantErr(t, "get deleted", err, memcache.ErrCacheMiss)
		}},
		{"counters", countersScenario},
		{"touch and expiry", touchScenario},
		{"get multi", getMultiScenario},
		{"malformed keys", malformedKeysScenario},
		{"big values", bigValuesScenario},
		{"ping", func(t *testing.T, c *memcache.Client, p string) {
			must(t, "ping", c.Ping())
		}},
		{"flush all", func(t *testing.T, c *memcache.Client, p string) {
			for i := range 10 {
				must(t, "set", c.Set(&memcache.Item{Key: p + strconv.Itoa(i), Value: []byte("v")}))
			}
			must(t, "flush all", c.FlushAll())
			for i := range 10 {
				_, err := c.Get(p + strconv.Itoa(i))
				wantErr(t, "get after flush_all", err, memcache.ErrCacheMiss)
			}
			must(t, "set after flush_all", c.Set(&memcache.Item{Key: p + "after", Value: []byte("v")}))
			wantValue(t, c, p+"after", "v", 0)
		}},
		{"concurrent", concurrentScenario},
	}
}

// countersScenario checks incr and decr against memcached's rules: a miss, in-place rewrites padded with spaces, wrapping at 2^64, stopping at 0, and a non-numeric value.
func countersScenario(t *testing.T, c *memcache.Client, p string) {
	k := p + "n"
	_, err := c.Increment(k, 1)
	wantErr(t, "incr absent", err, memcache.ErrCacheMiss)
	must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("10")}))
	for _, step := range []struct {
		incr  bool
		delta uint64
		want  uint64
		value string // the stored value after the step
	}{
		{true, 5, 15, "15"},
		{false, 6, 9, "9 "},        // rewritten in place, padded
		{true, 1<<64 - 1, 8, "8 "}, // wraps at 2^64
		{false, 100, 0, "0 "},      // stops at 0
		// (No values of 2^63 or more: memcached 1.6.18 parses
		// them reading past the value.)
	} {
		var got uint64
		if step.incr {
			got, err = c.Increment(k, step.delta)
		} else {
			got, err = c.Decrement(k, step.delta)
		}
		must(t, "incr/decr", err)
		if got != step.want {
			t.Fatalf("incr=%v %d: %d, want %d", step.incr, step.delta, got, step.want)
		}
		wantValue(t, c, k, step.value, 0)
	}
	must(t, "set text", c.Set(&memcache.Item{Key: k, Value: []byte("abc")}))
	if _, err := c.Increment(k, 1); err == nil || !strings.Contains(err.Error(), "non-numeric") {
		t.Fatalf("incr non-numeric: %v, want a non-numeric client error", err)
	}
}

// touchScenario checks touch, gat and expiry times in the past.
func touchScenario(t *testing.T, c *memcache.Client, p string) {
	k := p + "k"
	wantErr(t, "touch absent", c.Touch(k, 3600), memcache.ErrCacheMiss)
	must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("v")}))
	must(t, "touch", c.Touch(k, 3600))
	it, err := c.GetAndTouch(k, 7200)
	must(t, "get and touch", err)
	if string(it.Value) != "v" {
		t.Fatalf("get and touch = %q", it.Value)
	}
	must(t, "touch into the past", c.Touch(k, -1))
	_, err = c.Get(k)
	wantErr(t, "get expired", err, memcache.ErrCacheMiss)
	must(t, "set expired", c.Set(&memcache.Item{Key: k, Value: []byte("v"), Expiration: -1}))
	_, err = c.Get(k)
	wantErr(t, "get expired on arrival", err, memcache.ErrCacheMiss)
}

// getMultiScenario checks a 100-key multi-get where every third key was never set.
func getMultiScenario(t *testing.T, c *memcache.Client, p string) {
	var keys []string
	for i := range 100 {
		k := p + strconv.Itoa(i)
		keys = append(keys, k)
		if i%3 != 0 {
			must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("v" + strconv.Itoa(i))}))
		}
	}
	m, err := c.GetMulti(keys)
	must(t, "get multi", err)
	for i, k := range keys {
		it, ok := m[k]
		switch {
		case i%3 == 0 && ok:
			t.Fatalf("get multi: %q present, was never set", k)
		case i%3 != 0 && (!ok || string(it.Value) != "v"+strconv.Itoa(i)):
			t.Fatalf("get multi: %q = %v, want v%d", k, it, i)
		}
	}
}

// bigValuesScenario stores values up to the item size limit and checks that one over it is refused and removes the old item.
func bigValuesScenario(t *testing.T, c *memcache.Client, p string) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{100 << 10, 512 << 10, 1<<20 - 4096} {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		k := p + strconv.Itoa(n)
		must(t, fmt.Sprintf("set %d bytes", n), c.Set(&memcache.Item{Key: k, Value: v}))
		it, err := c.Get(k)
		must(t, "get", err)
		if !bytes.Equal(it.Value, v) {
			t.Fatalf("get %d bytes: got %d bytes, different", n, len(it.Value))
		}
	}
	k := p + "over"
	must(t, "set", c.Set(&memcache.Item{Key: k, Value: []byte("old")}))
	err := c.Set(&memcache.Item{Key: k, Value: make([]byte, 1<<20+1<<10)})
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("set 1 MiB + 1 KiB: %v, want object too large", err)
	}
	_, err = c.Get(k)
	wantErr(t, "get after a failed set (the old item goes too)", err, memcache.ErrCacheMiss)
	must(t, "ping after a refused value", c.Ping())
}

// malformedKeysScenario checks that keys with spaces or control bytes and keys over 250 bytes are refused, and a 250-byte key is stored.
func malformedKeysScenario(t *testing.T, c *memcache.Client, p string) {
	for _, k := range []string{p + "with space", p + "ctl\x01", strings.Repeat("k", 251)} {
		wantErr(t, fmt.Sprintf("set %q", k), c.Set(&memcache.Item{Key: k, Value: []byte("v")}), memcache.ErrMalformedKey)
	}
	k := p + strings.Repeat("k", 250-len(p)) // exactly the limit
	must(t, "set 250-byte key", c.Set(&memcache.Item{Key: k, Value: []byte("v")}))
	wantValue(t, c, k, "v", 0)
}

// concurrentScenario runs goroutines that each write and read back keys
// of their own, and together increment one counter with incr and another
// with a CAS retry loop; every increment must count.
func concurrentScenario(t *testing.T, c *memcache.Client, p string) {
	const workers, rounds = 16, 50
	must(t, "set counter", c.Set(&memcache.Item{Key: p + "incr", Value: []byte("0")}))
	must(t, "set cas counter", c.Set(&memcache.Item{Key: p + "cas", Value: []byte("0")}))
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- concurrentWorker(c, p, w, rounds)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantValue(t, c, p+"incr", strconv.Itoa(workers*rounds), 0)
	wantValue(t, c, p+"cas", strconv.Itoa(workers*rounds), 0)
}

// concurrentWorker is one goroutine of concurrentScenario.
func concurrentWorker(c *memcache.Client, p string, w, rounds int) error {
	own := fmt.Sprintf("%sw%d:", p, w)
	for i := range rounds {
		k, v := own+strconv.Itoa(i%7), fmt.Sprintf("w%d-r%d", w, i)
		if err := c.Set(&memcache.Item{Key: k, Value: []byte(v), Flags: uint32(i)}); err != nil {
			return fmt.Errorf("worker %d: set: %w", w, err)
		}
		it, err := c.Get(k)
		if err != nil || string(it.Value) != v || it.Flags != uint32(i) {
			return fmt.Errorf("worker %d: read of own write %q = %v, %v; want %q", w, k, it, err, v)
		}
		if err := c.Append(&memcache.Item{Key: k, Value: []byte("+")}); err != nil {
			return fmt.Errorf("worker %d: append: %w", w, err)
		}
		if it, err := c.Get(k); err != nil || string(it.Value) != v+"+" {
			return fmt.Errorf("worker %d: read after append %q = %v, %v; want %q", w, k, it, err, v+"+")
		}
		if _, err := c.Increment(p+"incr", 1); err != nil {
			return fmt.Errorf("worker %d: incr: %w", w, err)
		}
		if err := casIncrement(c, p+"cas"); err != nil {
			return fmt.Errorf("worker %d: %w", w, err)
		}
	}
	return nil
}

// casIncrement adds one to the decimal value of key with gets and cas,
// retrying on conflicts.
func casIncrement(c *memcache.Client, key string) error {
	for {
		it, err := c.Get(key)
		if err != nil {
			return fmt.Errorf("cas loop: get: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(it.Value)))
		if err != nil {
			return fmt.Errorf("cas loop: value %q: %w", it.Value, err)
		}
		it.Value = []byte(strconv.Itoa(n + 1))
		switch err := c.CompareAndSwap(it); {
		case err == nil:
			return nil
		case !errors.Is(err, memcache.ErrCASConflict):
			return fmt.Errorf("cas loop: cas: %w", err)
		}
	}
}
