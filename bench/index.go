package bench

import (
	"fmt"
	"math/bits"
	"runtime"
	"strings"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/hashindex"
)

// Sizes and inputs of the index suite.
const (
	indexGPUBatch   = 1 << 24 // largest batch on the GPU engine by default
	indexCPUBatch   = 1 << 22 // largest batch on the CPU engine by default
	indexMinBatch   = 1 << 10 // smallest batch
	indexBatchStep  = 4       // each batch size is this many times the previous one
	indexMinBuckets = 1 << 10 // smallest table
	indexFillBatch  = 1 << 22 // jobs per Insert call while filling the table
	indexSeed       = 0x1D_5EED
	indexRecord     = hashindex.BucketBytes // bytes of the random gather a kernel row is compared with
	indexEvictL2s   = 4                     // the L2 flush before a timed GPU run writes this many times the L2 size

	// Bytes crossing the bus per job of a host-level call: a hash (8) and,
	// for updates, a location (4) in; a location (4), an insert result (8)
	// or a found flag (4) out.
	searchBytesIn, searchBytesOut = 8, 4
	insertBytesIn, insertBytesOut = 12, 8
	deleteBytesIn, deleteBytesOut = 12, 4

	// groupedBytes is what grouping writes a job: hash, location, batch
	// order.
	groupedBytes = 16
)

// RunIndex measures the Mega-KV hash index (package hashindex): search,
// insert and delete throughput against batch size, on the CPU engine (all
// cores) and, when the device option resolves to a GPU, on the GPU engine.
// Options.Size is the largest batch (default 2^24 on the GPU, 2^22 on the
// CPU); batches grow by 4x from 2^10. Both engines use a table of
// Size rounded up to a power of two buckets (at least 2^10; 2^24 buckets,
// 1 GiB, by default) filled to half its cells before measuring; searches
// look up half present and half absent keys; inserts add new keys and are
// undone (deleted) before each repetition, deletes remove keys inserted
// before each repetition, outside the timed region.
//
// GPU rows: the kernels alone (DevSearch, DevInsert, DevDelete on
// device-resident inputs; insert and delete on jobs grouped by partition
// beforehand, the grouping, DevGroup, timed separately), timed with events
// on the index's stream, as a fraction of the device's measured random
// 64-byte gather rate (MeasureLimits: one bucket is 64 bytes); and the
// host-level calls (Search, Insert, Delete from Go slices, transfers
// included), timed by wall clock, as a fraction of the pinned transfer
// limit: the bytes each job moves over the bus (hash and location in,
// output back) at the measured pinned host<->device bandwidths; and the
// same calls with their jobs already in pinned memory (SearchStaged,
// InsertStaged, DeleteStaged on a hashindex.Staging, rows "pinned
// inputs"), against the same limit. Before
// each timed GPU run the L2 cache is flushed (a write of 4 times its size),
// so that small batches are not served from the cache the previous run
// filled. CPU rows time the host-level calls (the staged calls equal them
// on the CPU engine). Cost at the default sizes: about a minute and a 1
// GiB table per engine, plus several GiB of inputs and, on the GPU, 20
// bytes a job of the largest batch in pinned memory.
func RunIndex(o Options) (*Report, error) {
	return runIndex(o, defaultLimitsConfig())
}

// runIndex is RunIndex with the sizes of the GPU limits measurement given.
func runIndex(o Options, limCfg limitsConfig) (*Report, error) {
	rep := NewReport("index", o.reps())
	p := NewProgress(o.Progress)
	c, err := gpu.Choose(o.Device)
	if err != nil {
		return nil, fmt.Errorf("bench index: %w", err)
	}
	if c.Device != nil {
		defer c.Device.Close()
	}
	buckets := indexBuckets(o.Size)
	runs := []*indexRun{{
		engine: "cpu", opts: hashindex.Options{Buckets: buckets, Device: "cpu"},
		maxBatch: pick(o.Size, indexCPUBatch), warmup: DefaultWarmup, reps: o.reps(),
	}}
	rep.Engines = append(rep.Engines, fmt.Sprintf("cpu engine: %d workers", runtime.GOMAXPROCS(0)))
	if c.Backend == gpu.BackendGPU {
		rep.Engines = append(rep.Engines, c.Reason)
		limCfg.reps = o.reps()
		lim, err := measureLimits(c.Device, p, limCfg)
		if err != nil {
			return nil, fmt.Errorf("bench index: limits of %s: %w", c.Device, err)
		}
		rep.add(lim.Results...)
		rep.Notes = append(rep.Notes, lim.Notes...)
		runs = append(runs, &indexRun{
			engine: "gpu", opts: hashindex.Options{Buckets: buckets, GPU: c.Device},
			maxBatch: pick(o.Size, indexGPUBatch), warmup: DefaultWarmup, reps: o.reps(), lim: &lim,
		})
	} else {
		rep.Notes = append(rep.Notes, "no GPU rows: "+c.Reason)
	}
	var failed []string
	for _, x := range runs {
		res, notes, err := x.run(p)
		rep.add(res...)
		rep.Notes = append(rep.Notes, notes...)
		runtime.GC() // give the inputs back before the next engine
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v", x.engine, err))
			failed = append(failed, x.engine)
		}
	}
	rep.Finish()
	if len(failed) > 0 {
		return rep, fmt.Errorf("bench index: the %s engine failed; see the notes", strings.Join(failed, " and "))
	}
	return rep, nil
}

// indexBuckets returns the table size for a largest batch of size jobs
// (0: the default): size rounded up to a power of two, at least
// indexMinBuckets.
func indexBuckets(size int) int {
	n := pick(size, indexGPUBatch)
	return min(hashindex.MaxBuckets, max(indexMinBuckets, 1<<bits.Len(uint(n-1))))
}

// indexBatches returns the batch sizes up to max: indexMinBatch times
// powers of indexBatchStep, then max itself if it is not one of them.
func indexBatches(max int) []int {
	var out []int
	for n := indexMinBatch; n <= max; n *= indexBatchStep {
		out = append(out, n)
	}
	if len(out) == 0 || out[len(out)-1] != max {
		out = append(out, max)
	}
	return out
}

// batchName names a batch size: 2^k for powers of two, else the number.
func batchName(n int) string {
	if n&(n-1) == 0 {
		return fmt.Sprintf("2^%d", bits.TrailingZeros(uint(n)))
	}
	return fmt.Sprint(n)
}

// indexKeys returns n pseudo-random key hashes: element i is
// prim.SplitMix64(seed, i).
func indexKeys(n int, seed uint64) []uint64 {
	return randomWords[uint64](n, seed)
}

// indexLocs returns the locations first, first+1, ..., n of them.
func indexLocs(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}

// indexRun is one engine's side of the index suite.
type indexRun struct {
	engine       string // "cpu" or "gpu"
	opts         hashindex.Options
	maxBatch     int
	warmup, reps int
	lim          *Limits // GPU only

	ix    *hashindex.Index
	timer *GPUTimer         // GPU only
	evict *gpu.Buffer[byte] // GPU only: written before each timed run to empty L2
	fill  []uint64          // the keys of the fill, locations 1..len(fill)
	rows  [indexRowKinds][]Result
	hits  [2]int // search hits and jobs over all host-level searches
	notes []string
}

// Row kinds, in table order.
const (
	rowSearchKernel = iota
	rowSearchHost
	rowSearchPinned // GPU only, as the other kernel and pinned rows
	rowGroup
	rowInsertKernel
	rowInsertHost
	rowInsertPinned
	rowDeleteKernel
	rowDeleteHost
	rowDeletePinned
	indexRowKinds
)

// run builds and fills the engine's table and measures every batch size,
// returning the rows in table order and notes.
func (x *indexRun) run(p *Progress) ([]Result, []string, error) {
	ix, err := hashindex.Open(x.opts)
	if err != nil {
		return nil, nil, err
	}
	defer ix.Close()
	x.ix = ix
	if x.gpu() {
		if x.timer, err = NewGPUTimer(ix.Device(), ix.Stream()); err != nil {
			return nil, nil, err
		}
		defer x.timer.Close()
		if x.evict, err = gpu.Alloc[byte](ix.Device(), indexEvictL2s*ix.Device().Properties().L2Bytes); err != nil {
			return nil, nil, err
		}
		defer x.evict.Free()
	}
	fillN := ix.Capacity() / 2
	p.Printf("%s: filling a table of %d buckets (%s) with %s entries", x.engine, ix.Buckets(), IEC(int64(ix.Buckets())*hashindex.BucketBytes), SI(float64(fillN)))
	x.fill = indexKeys(fillN, indexSeed)
	locs := indexLocs(1, fillN)
	for i := 0; i < fillN; i += indexFillBatch {
		j := min(fillN, i+indexFillBatch)
		if _, err := ix.Insert(x.fill[i:j], locs[i:j], nil); err != nil {
			return nil, nil, fmt.Errorf("filling the table: %w", err)
		}
	}
	st := ix.Stats()
	x.notes = append(x.notes, fmt.Sprintf("%s: table of %d buckets (%s, %s cells, %d partitions of %d buckets) filled to load %.3f before measuring",
		x.engine, ix.Buckets(), IEC(int64(ix.Buckets())*hashindex.BucketBytes), SI(float64(ix.Capacity())), ix.Partitions(),
		1<<ix.PartitionBits(), float64(st.Entries)/float64(ix.Capacity())))
	for _, n := range indexBatches(x.maxBatch) {
		p.Printf("%s: batch %s", x.engine, batchName(n))
		if err := x.batch(n); err != nil {
			return x.results(), x.notes, fmt.Errorf("batch %d: %w", n, err)
		}
		runtime.GC()
	}
	if x.hits[1] > 0 {
		x.notes = append(x.notes, fmt.Sprintf("%s: searches probe 50%% present keys; measured hit ratio %.4f", x.engine, float64(x.hits[0])/float64(x.hits[1])))
	}
	return x.results(), x.notes, nil
}

func (x *indexRun) gpu() bool { return x.lim != nil }

// results returns the rows in table order.
func (x *indexRun) results() []Result {
	var out []Result
	for _, r := range x.rows {
		out = append(out, r...)
	}
	return out
}

func (x *indexRun) add(kind int, r Result) { x.rows[kind] = append(x.rows[kind], r) }

// flushL2 queues a write of the eviction buffer on the index's stream, so
// that a timed GPU run reads the table from device memory as a batch of
// other keys would, not from the L2 cache the previous run filled.
func (x *indexRun) flushL2() error {
	return x.evict.FillBytes(x.ix.Stream(), 0)
}

// hostPrepare returns the preparation of a host-level timed run: then (may
// be nil), and on the GPU an L2 flush waited for.
func (x *indexRun) hostPrepare(then func() error) func() error {
	if !x.gpu() {
		return then
	}
	return func() error {
		if then != nil {
			if err := then(); err != nil {
				return err
			}
		}
		if err := x.flushL2(); err != nil {
			return err
		}
		return x.ix.Stream().Synchronize()
	}
}

// kernelPrepare returns the preparation of a kernel timed run: then (may
// be nil), then an L2 flush, both queued on the index's stream.
func (x *indexRun) kernelPrepare(then func() error) func() error {
	return func() error {
		if then != nil {
			if err := then(); err != nil {
				return err
			}
		}
		return x.flushL2()
	}
}

// kernelRow returns a GPU kernel row: one 64-byte bucket counted a job,
// against the random 64-byte gather rate.
func (x *indexRun) kernelRow(op string, n int, sec float64) Result {
	return NewResult(op, x.engine, int64(n), int64(n)*indexRecord, sec).
		VsBandwidth("gpu random gather 64 B", x.lim.Gather64*indexRecord/1e9)
}

// hostRow returns a host-level row, of the staged calls if pinned. On the
// GPU its bytes are those crossing the bus, against the pinned transfer
// limit for them.
func (x *indexRun) hostRow(op string, pinned bool, n, in, out int, sec float64) Result {
	if !x.gpu() {
		return NewResult(op, x.engine, int64(n), 0, sec)
	}
	op += ", host incl. transfers"
	if pinned {
		op += ", pinned inputs"
	}
	r := NewResult(op, x.engine, int64(n), int64(n)*int64(in+out), sec)
	limit := float64(in+out) / (float64(in)/x.lim.H2DGBps + float64(out)/x.lim.D2HGBps)
	return r.VsBandwidth("pinned transfer limit", limit)
}

// batch measures search, insert and delete at batch size n.
func (x *indexRun) batch(n int) error {
	probes := indexKeys(n, indexSeed+1) // absent keys; every other one is replaced by a present one
	for i := 0; i < n; i += 2 {
		probes[i] = x.fill[(uint64(i)*0x9E3779B1)%uint64(len(x.fill))]
	}
	keys := indexKeys(n, indexSeed+2+uint64(n)) // new keys, inserted and deleted
	locs := indexLocs(uint32(len(x.fill)+1), n)
	if x.gpu() {
		if err := x.kernels(n, probes, keys, locs); err != nil {
			return err
		}
	}
	return x.host(n, probes, keys, locs)
}

// host times the host-level calls at batch size n.
func (x *indexRun) host(n int, probes, keys []uint64, locs []uint32) error {
	ix := x.ix
	name := fmt.Sprintf("batch %s", batchName(n))
	out := make([]uint32, n)
	sec, err := TimeCPU(x.warmup, x.reps, x.hostPrepare(nil), func() error { return ix.Search(probes, out) })
	if err != nil {
		return err
	}
	for _, l := range out {
		if l != hashindex.NotFound {
			x.hits[0]++
		}
	}
	x.hits[1] += n
	x.add(rowSearchHost, x.hostRow("search 50% hits, "+name, false, n, searchBytesIn, searchBytesOut, sec))

	found := make([]bool, n)
	var dropped []hashindex.Dropped
	insert := func() error {
		var err error
		dropped, err = ix.Insert(keys, locs, dropped[:0])
		return err
	}
	remove := func() error { return ix.Delete(keys, locs, found) }
	if sec, err = TimeCPU(x.warmup, x.reps, x.hostPrepare(remove), insert); err != nil {
		return err
	}
	x.add(rowInsertHost, x.hostRow("insert, "+name, false, n, insertBytesIn, insertBytesOut, sec))
	if sec, err = TimeCPU(x.warmup, x.reps, x.hostPrepare(insert), remove); err != nil {
		return err
	}
	x.add(rowDeleteHost, x.hostRow("delete, "+name, false, n, deleteBytesIn, deleteBytesOut, sec))
	missed := 0
	for _, f := range found {
		if !f {
			missed++
		}
	}
	x.missed(n, "", missed)
	if x.gpu() {
		return x.pinned(n, probes, keys, locs)
	}
	return nil
}

// missed notes the deletes of just-inserted keys of batch n that missed
// (their entries displaced), if any.
func (x *indexRun) missed(n int, calls string, missed int) {
	if missed > 0 {
		x.notes = append(x.notes, fmt.Sprintf("%s: batch %s%s: %d deletes of just-inserted keys missed (displaced)", x.engine, batchName(n), calls, missed))
	}
}

// pinned times the staged calls at batch size n, their jobs written into a
// Staging (pinned memory) before timing, as a server would assemble its
// batches there.
func (x *indexRun) pinned(n int, probes, keys []uint64, locs []uint32) (err error) {
	ix := x.ix
	name := fmt.Sprintf("batch %s", batchName(n))
	st, err := ix.NewStaging(n)
	if err != nil {
		return err
	}
	defer func() {
		if ferr := st.Free(); err == nil {
			err = ferr
		}
	}()
	copy(st.Hashes(), probes)
	sec, err := TimeCPU(x.warmup, x.reps, x.hostPrepare(nil), func() error { return ix.SearchStaged(st, n) })
	if err != nil {
		return err
	}
	x.add(rowSearchPinned, x.hostRow("search 50% hits, "+name, true, n, searchBytesIn, searchBytesOut, sec))

	copy(st.Hashes(), keys)
	copy(st.Locs(), locs)
	var dropped []hashindex.Dropped
	insert := func() error {
		var err error
		dropped, err = ix.InsertStaged(st, n, dropped[:0])
		return err
	}
	remove := func() error { return ix.DeleteStaged(st, n, nil) }
	if sec, err = TimeCPU(x.warmup, x.reps, x.hostPrepare(remove), insert); err != nil {
		return err
	}
	x.add(rowInsertPinned, x.hostRow("insert, "+name, true, n, insertBytesIn, insertBytesOut, sec))
	if sec, err = TimeCPU(x.warmup, x.reps, x.hostPrepare(insert), remove); err != nil {
		return err
	}
	x.add(rowDeletePinned, x.hostRow("delete, "+name, true, n, deleteBytesIn, deleteBytesOut, sec))
	missed := 0
	for _, f := range st.Out()[:n] {
		if f == 0 {
			missed++
		}
	}
	x.missed(n, " (staged)", missed)
	return nil
}

// kernels times the GPU kernels on device-resident inputs at batch size n.
// It leaves the table as it found it (the batch inserted, then deleted).
func (x *indexRun) kernels(n int, probes, keys []uint64, locs []uint32) error {
	ix, d, t := x.ix, x.ix.Device(), x.timer
	name := fmt.Sprintf("batch %s", batchName(n))
	bufs := gpu.NewBuffers(d)
	defer bufs.Free()
	dp := gpu.UploadIn(bufs, probes)
	dk := gpu.UploadIn(bufs, keys)
	dl := gpu.UploadIn(bufs, locs)
	out := gpu.AllocIn[uint32](bufs, n)
	found := gpu.AllocIn[uint32](bufs, n)
	results := gpu.AllocIn[uint64](bufs, n)
	if err := bufs.Err(); err != nil {
		return err
	}
	jobs, err := ix.AllocJobs(n)
	if err != nil {
		return err
	}
	bufs.Own(jobs)

	sec, err := t.Time(x.warmup, x.reps, x.kernelPrepare(nil), func() error { return ix.DevSearch(dp, n, out) })
	if err != nil {
		return err
	}
	x.add(rowSearchKernel, x.kernelRow("search 50% hits, kernel, "+name, n, sec))

	var j hashindex.DevJobs
	sec, err = t.Time(x.warmup, x.reps, x.kernelPrepare(nil), func() error {
		var err error
		j, err = ix.DevGroup(dk, dl, n, jobs)
		return err
	})
	if err != nil {
		return err
	}
	groupBytes := int64(n) * (insertBytesIn + groupedBytes)
	x.add(rowGroup, NewResult("group by partition (DevGroup), "+name, x.engine, int64(n), groupBytes, sec).
		VsBandwidth("gpu copy", x.lim.CopyGBps))

	insert := func() error { return ix.DevInsert(j, results) }
	remove := func() error { return ix.DevDelete(j, found) }
	if sec, err = t.Time(x.warmup, x.reps, x.kernelPrepare(remove), insert); err != nil {
		return err
	}
	x.add(rowInsertKernel, x.kernelRow("insert, kernel on grouped jobs, "+name, n, sec))
	if sec, err = t.Time(x.warmup, x.reps, x.kernelPrepare(insert), remove); err != nil {
		return err
	}
	x.add(rowDeleteKernel, x.kernelRow("delete, kernel on grouped jobs, "+name, n, sec))
	return nil
}
