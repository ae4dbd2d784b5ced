package prim

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/crypto/sha3"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// keccakFunc hashes the messages data[offsets[i]:offsets[i+1]] into out.
type keccakFunc func(e *Engine, data []byte, offsets []uint32, out [][32]byte) error

// keccakVariant is one way of hashing a batch on an engine.
type keccakVariant struct {
	name string
	run  keccakFunc
}

// keccakVariants returns every way to hash on e: the host API, and on a GPU
// engine also each device-level entry point on uploaded buffers.
func keccakVariants(e *Engine) []keccakVariant {
	out := []keccakVariant{{"host", Keccak256}}
	if e.Backend() != gpu.BackendGPU {
		return out
	}
	dev := func(f devKeccakFunc) keccakFunc {
		return func(e *Engine, data []byte, offsets []uint32, out [][32]byte) error {
			return runDevKeccak(e, f, data, offsets, out)
		}
	}
	return append(out,
		keccakVariant{"dev", dev(DevKeccak256)},
		keccakVariant{"thread", dev(func(e *Engine, d *gpu.Buffer[byte], o *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte], _ int) error {
			return DevKeccak256Thread(e, d, o, n, out)
		})},
		keccakVariant{"warp", dev(func(e *Engine, d *gpu.Buffer[byte], o *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte], _ int) error {
			return DevKeccak256Warp(e, d, o, n, out)
		})},
	)
}

// devKeccakFunc is DevKeccak256 or one of its forced variants.
type devKeccakFunc func(e *Engine, data *gpu.Buffer[byte], offsets *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte], maxLen int) error

// devKeccakLead is how many bytes before the data the device tests place it
// in its buffer, so that message addresses are misaligned differently than
// their offsets.
const devKeccakLead = 3

// runDevKeccak uploads data into a byte buffer of exactly the needed size
// (seen through a misaligned view), runs f over poisoned device output and
// downloads len(offsets)-1 digests into out.
func runDevKeccak(e *Engine, f devKeccakFunc, data []byte, offsets []uint32, out [][32]byte) error {
	n := max(len(offsets)-1, 0)
	if n == 0 {
		return f(e, nil, nil, 0, nil, 0)
	}
	maxLen := 0
	for i := range n {
		maxLen = max(maxLen, int(offsets[i+1]-offsets[i]))
	}
	d := e.Device()
	raw, err := gpu.Upload(d, append(make([]byte, devKeccakLead), data...))
	if err != nil {
		return err
	}
	defer raw.Free()
	offBuf, err := gpu.Upload(d, offsets)
	if err != nil {
		return err
	}
	defer offBuf.Free()
	outBuf, err := gpu.Alloc[[32]byte](d, n)
	if err != nil {
		return err
	}
	defer outBuf.Free()
	if err := outBuf.FillBytes(e.Stream(), 0xDB); err != nil {
		return err
	}
	view := gpu.View[byte](raw, devKeccakLead, len(data))
	if err := f(e, view, offBuf, n, outBuf, maxLen); err != nil {
		return err
	}
	if err := outBuf.Read(e.Stream(), 0, out[:n]); err != nil {
		return err
	}
	return e.Synchronize()
}

// keccakRef hashes each message sequentially with x/crypto.
func keccakRef(data []byte, offsets []uint32) [][32]byte {
	out := make([][32]byte, max(len(offsets)-1, 0))
	h := sha3.NewLegacyKeccak256()
	for i := range out {
		h.Reset()
		h.Write(data[offsets[i]:offsets[i+1]])
		h.Sum(out[i][:0])
	}
	return out
}

// poisonDigests fills the digests with a pattern no hash produces by
// accident.
func poisonDigests(out [][32]byte) {
	for i := range out {
		for j := range out[i] {
			out[i][j] = 0xDE ^ byte(j)
		}
	}
}

// checkKeccak runs v on poisoned output (one digest longer than needed) and
// compares against want, the sequential reference; the extra digest must
// stay untouched.
func checkKeccak(t *testing.T, e *Engine, v keccakVariant, data []byte, offsets []uint32, want [][32]byte) {
	t.Helper()
	got := make([][32]byte, len(want)+1)
	poisonDigests(got)
	guard := got[len(want)]
	if err := v.run(e, data, offsets, got); err != nil {
		t.Fatalf("%s: %v", v.name, err)
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("%s: message %d (bytes %d..%d, %d long): got %x, want %x", v.name, i,
					offsets[i], offsets[i+1], offsets[i+1]-offsets[i], got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d digests wrong", v.name, bad, len(want))
	}
	if got[len(want)] != guard {
		t.Fatalf("%s: wrote past the last message's digest", v.name)
	}
}

// concat lays the messages end to end and returns the data and offsets,
// starting lead bytes in.
func concat(lead int, msgs ...[]byte) ([]byte, []uint32) {
	data := make([]byte, lead)
	offsets := []uint32{uint32(lead)}
	for _, m := range msgs {
		data = append(data, m...)
		offsets = append(offsets, uint32(len(data)))
	}
	return data, offsets
}

func TestKeccak256KnownVectors(t *testing.T) {
	tests := []struct {
		msg, want string
	}{
		{"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
		{"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
	}
	msgs := make([][]byte, len(tests))
	for i, tt := range tests {
		msgs[i] = []byte(tt.msg)
	}
	data, offsets := concat(0, msgs...)
	for _, e := range testEngines(t) {
		for _, v := range keccakVariants(e) {
			t.Run(e.Name()+"/"+v.name, func(t *testing.T) {
				out := make([][32]byte, len(tests))
				poisonDigests(out)
				if err := v.run(e, data, offsets, out); err != nil {
					t.Fatal(err)
				}
				for i, tt := range tests {
					if got := hex.EncodeToString(out[i][:]); got != tt.want {
						t.Errorf("Keccak-256(%q) = %s, want %s", tt.msg, got, tt.want)
					}
				}
			})
		}
	}
}

func TestKeccak256EveryLengthAndOffset(t *testing.T) {
	r := newRand(t)
	// Lengths 0..300 cover the block edges 135, 136, 137, 271, 272; each
	// list is laid out at every start misalignment.
	var short [][]byte
	for n := 0; n <= 300; n++ {
		short = append(short, randomBytes(r, n))
	}
	var long [][]byte
	for _, n := range []int{407, 408, 409, 1000, 4095, 4096, 4097, 8*keccakRate - 1, 8 * keccakRate, 9000} {
		long = append(long, randomBytes(r, n))
	}
	for lead := range 8 {
		shortData, shortOffsets := concat(lead, short...)
		shortWant := keccakRef(shortData, shortOffsets)
		longData, longOffsets := concat(lead, long...)
		longWant := keccakRef(longData, longOffsets)
		for _, e := range testEngines(t) {
			for _, v := range keccakVariants(e) {
				t.Run(fmt.Sprintf("%s/%s/lead%d", e.Name(), v.name, lead), func(t *testing.T) {
					checkKeccak(t, e, v, shortData, shortOffsets, shortWant)
					checkKeccak(t, e, v, longData, longOffsets, longWant)
				})
			}
		}
	}
}

// keccakTestBytes caps the message bytes of one random-size test, so that
// the sequential reference stays quick.
func keccakTestBytes(e *Engine) int {
	if e.Name() == "gpu" {
		return 1 << 29
	}
	return 1 << 26
}

func TestKeccak256RandomSizes(t *testing.T) {
	r := newRand(t)
	for _, e := range testEngines(t) {
		for _, n := range testSizes(e) {
			// Mean length 64 (a key or node), smaller where the data would
			// pass the cap; one message in 64 is multi-block.
			mean := min(64, keccakTestBytes(e)/max(n, 1))
			lengths := make([]int, n)
			for i := range lengths {
				lengths[i] = r.IntN(2*mean + 1)
				if r.IntN(64) == 0 {
					lengths[i] += r.IntN(4 * keccakRate)
				}
			}
			data, offsets := randomMessages(r, lengths)
			want := keccakRef(data, offsets)
			for _, v := range keccakVariants(e) {
				t.Run(fmt.Sprintf("%s/%s/n=%d", e.Name(), v.name, n), func(t *testing.T) {
					checkKeccak(t, e, v, data, offsets, want)
				})
			}
		}
	}
}

func TestKeccak256SkewedLengths(t *testing.T) {
	// A few long messages among many empty ones: the warp kernel's case,
	// and divergence for the thread kernel.
	r := newRand(t)
	lengths := make([]int, 5000)
	for i := range lengths {
		if i%97 == 0 {
			lengths[i] = 20000 + r.IntN(keccakRate)
		}
	}
	data, offsets := randomMessages(r, lengths)
	want := keccakRef(data, offsets)
	for _, e := range testEngines(t) {
		for _, v := range keccakVariants(e) {
			t.Run(e.Name()+"/"+v.name, func(t *testing.T) {
				checkKeccak(t, e, v, data, offsets, want)
			})
		}
	}
}

func TestKeccak256BadInput(t *testing.T) {
	data := []byte("hello world")
	tests := []struct {
		name    string
		offsets []uint32
		out     int
		errText string
	}{
		{"decreasing offsets", []uint32{0, 5, 4, 11}, 3, "decrease"},
		{"offsets past data", []uint32{0, 5, 12}, 2, "past"},
		{"too few digests", []uint32{0, 5, 11}, 1, "room"},
	}
	for _, e := range testEngines(t) {
		for _, tt := range tests {
			t.Run(e.Name()+"/"+tt.name, func(t *testing.T) {
				out := make([][32]byte, tt.out)
				poisonDigests(out)
				want := append([][32]byte(nil), out...)
				err := Keccak256(e, data, tt.offsets, out)
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("got error %v, want one saying %q", err, tt.errText)
				}
				for i := range out {
					if out[i] != want[i] {
						t.Fatalf("digest %d written despite the error", i)
					}
				}
			})
		}
	}
	t.Run("no messages", func(t *testing.T) {
		for _, offsets := range [][]uint32{nil, {7}} {
			if err := Keccak256(NewCPU(0), data, offsets, nil); err != nil {
				t.Fatalf("offsets %v: %v", offsets, err)
			}
		}
	})
	t.Run("device call on cpu engine", func(t *testing.T) {
		if err := DevKeccak256(NewCPU(0), nil, nil, 1, nil, 0); err == nil {
			t.Fatal("DevKeccak256 on the CPU engine succeeded")
		}
	})
}

// randomBytes returns n random bytes.
func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n]
}

// randomMessages lays out random messages of the given lengths end to end,
// with a random gap of 0..3 bytes before the first.
func randomMessages(r *rand.Rand, lengths []int) ([]byte, []uint32) {
	total := 0
	for _, l := range lengths {
		total += l
	}
	lead := r.IntN(4)
	data := randomBytes(r, lead+total)
	offsets := make([]uint32, len(lengths)+1)
	offsets[0] = uint32(lead)
	for i, l := range lengths {
		offsets[i+1] = offsets[i] + uint32(l)
	}
	return data, offsets
}

// keccakBenchMessages is the batch size of the Keccak-256 benchmarks.
const keccakBenchMessages = 1 << 16

// fixedLengthBatch returns n random messages of length l, end to end.
func fixedLengthBatch(n, l int) ([]byte, []uint32) {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := make([]int, n)
	for i := range lengths {
		lengths[i] = l
	}
	return randomMessages(r, lengths)
}

func BenchmarkKeccak256x64(b *testing.B) {
	e := NewCPU(0)
	data, offsets := fixedLengthBatch(keccakBenchMessages, 64)
	out := make([][32]byte, keccakBenchMessages)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Keccak256(e, data, offsets, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(keccakBenchMessages)*float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
}

// BenchmarkDevKeccak256 times the kernels alone (data on the device) for
// each variant, message length and batch size.
func BenchmarkDevKeccak256(b *testing.B) {
	d := gputest.Device(b)
	e, err := NewGPU(d)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	variants := []struct {
		name string
		f    devKeccakFunc
	}{
		{"auto", DevKeccak256},
		{"thread", func(e *Engine, d *gpu.Buffer[byte], o *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte], _ int) error {
			return DevKeccak256Thread(e, d, o, n, out)
		}},
		{"warp", func(e *Engine, d *gpu.Buffer[byte], o *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte], _ int) error {
			return DevKeccak256Warp(e, d, o, n, out)
		}},
	}
	for _, c := range []struct{ n, l int }{
		{1 << 22, 32}, {1 << 22, 64}, {1 << 20, 200}, {1 << 10, 200}, {1 << 18, 1000}, {1 << 14, 1000},
		{1 << 16, 4096}, {1 << 13, 4096}, {1 << 12, 4096}, {1 << 9, 4096}, {1, 1 << 20},
	} {
		data, offsets := fixedLengthBatch(c.n, c.l)
		dataBuf, err := gpu.Upload(d, data)
		if err != nil {
			b.Fatal(err)
		}
		offBuf, err := gpu.Upload(d, offsets)
		if err != nil {
			b.Fatal(err)
		}
		outBuf, err := gpu.Alloc[[32]byte](d, c.n)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/len=%d/n=%d", v.name, c.l, c.n), func(b *testing.B) {
				run := func() {
					if err := v.f(e, dataBuf, offBuf, c.n, outBuf, c.l); err != nil {
						b.Fatal(err)
					}
				}
				run() // compiles the kernel
				if err := e.Synchronize(); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for range b.N {
					run()
				}
				if err := e.Synchronize(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(c.n)*float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
			})
		}
		dataBuf.Free()
		offBuf.Free()
		outBuf.Free()
	}
}
