package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// PreloadResult reports a preload.
type PreloadResult struct {
	Keys    int           // keys set
	Elapsed time.Duration // time to set them
	// Checked is the number of keys read back afterwards (every key up to
	// 100000, else an even sample) and HitRatio the fraction found: below
	// 1 when the server holds fewer items than the workload has keys.
	Checked  int
	HitRatio float64
	Errors   int // sets not answered STORED
}

// preloadBatch is the number of sets or gets pipelined at a time.
const (
	preloadBatch = 128
	checkKeys    = 100000
	checkPerGet  = 100
)

// Preload empties the server (flush_all), sets every key of cfg's
// workload to its value over cfg.Conns connections, then reads keys back
// and reports the hit ratio. It uses the text protocol. Cost: one pass
// over the keys plus the check.
func Preload(ctx context.Context, cfg Config) (PreloadResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return PreloadResult{}, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return PreloadResult{}, fmt.Errorf("loadgen: preload: %w", err)
	}
	nc.SetDeadline(time.Now().Add(replyTimeout))
	_, err = nc.Write([]byte("flush_all\r\n"))
	line := ""
	if err == nil {
		line, err = bufio.NewReader(nc).ReadString('\n')
	}
	nc.Close()
	if err == nil && line != "OK\r\n" {
		err = fmt.Errorf("flush_all answered %q", line)
	}
	if err != nil {
		return PreloadResult{}, fmt.Errorf("loadgen: preload: %s: %w", cfg.Addr, err)
	}

	value := makeValue(cfg.Workload.ValueSize)
	n := cfg.Workload.Keys
	conns := min(cfg.Conns, n)
	res := PreloadResult{Keys: n}
	stride := max(1, (n+checkKeys-1)/checkKeys)
	start := time.Now()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range conns {
		lo, hi := n*i/conns, n*(i+1)/conns
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := preloadRange(ctx, &cfg, value, lo, hi, stride)
			mu.Lock()
			defer mu.Unlock()
			res.Errors += r.Errors
			res.Checked += r.Checked
			res.HitRatio += r.HitRatio // hits, divided below
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if res.Checked > 0 {
		res.HitRatio /= float64(res.Checked)
	}
	return res, errors.Join(errs...)
}

// preloadRange sets keys [lo, hi) over a connection of its own, then gets
// every stride-th one; HitRatio of the result holds the hit count.
func preloadRange(ctx context.Context, cfg *Config, value []byte, lo, hi, stride int) (PreloadResult, error) {
	var res PreloadResult
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return res, fmt.Errorf("loadgen: preload: %w", err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	c := newCodec(Text, nc, cfg.Workload.KeySize, value)
	for i := lo; i < hi; i += preloadBatch {
		end := min(i+preloadBatch, hi)
		for k := i; k < end; k++ {
			c.writeSet(uint64(k), 0)
		}
		nc.SetDeadline(time.Now().Add(replyTimeout))
		if err := c.bw.Flush(); err != nil {
			return res, fmt.Errorf("loadgen: preload: %s: %w", cfg.Addr, err)
		}
		for k := i; k < end; k++ {
			ok, err := c.readSet()
			if err != nil {
				return res, fmt.Errorf("loadgen: preload: %s: %w", cfg.Addr, err)
			}
			if !ok {
				res.Errors++
			}
		}
	}
	first := (lo + stride - 1) / stride * stride
	for i := first; i < hi; i += checkPerGet * stride {
		count := 0
		next := func() uint64 {
			k := i + count*stride
			count++
			return uint64(k)
		}
		m := min(checkPerGet, (hi-1-i)/stride+1)
		c.writeGet(m, next, 0)
		nc.SetDeadline(time.Now().Add(replyTimeout))
		if err := c.bw.Flush(); err != nil {
			return res, fmt.Errorf("loadgen: preload check: %s: %w", cfg.Addr, err)
		}
		hits, _, err := c.readGet(m)
		if err != nil {
			return res, fmt.Errorf("loadgen: preload check: %s: %w", cfg.Addr, err)
		}
		res.Checked += m
		res.HitRatio += float64(hits)
	}
	return res, nil
}

// makeValue returns the value every set writes: n printable bytes.
func makeValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}
