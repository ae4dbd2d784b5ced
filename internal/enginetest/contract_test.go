package enginetest_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/btree"
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/mpt"
	"github.com/warpkv/warpkv/stm"
)

// The compile-time half of the engine contract: every engine's facade is an
// engine.Reporter.
var (
	_ engine.Reporter = (*hashindex.Index)(nil)
	_ engine.Reporter = (*btree.Tree)(nil)
	_ engine.Reporter = (*mpt.Trie)(nil)
	_ engine.Reporter = (*art.Tree)(nil)
	_ engine.Reporter = (*stm.Engine)(nil)
)

// facade is one engine under the contract: the name its reasons and errors
// begin with, its Options type, how it opens from a device option and an
// already open device (the Options' Device and GPU fields), and one small
// batch of items operations.
type facade struct {
	name    string
	options reflect.Type
	open    func(device string, dev *gpu.Device) (engine.Reporter, error)
	batch   func(engine.Reporter) error
	items   int
	// closed runs the facade's calls on a closed engine, each of which
	// must fail with engine.ErrClosed.
	closed func(engine.Reporter) map[string]error
}

var facades = []facade{
	{
		name: "hashindex", options: reflect.TypeFor[hashindex.Options](),
		open: func(device string, dev *gpu.Device) (engine.Reporter, error) {
			return hashindex.Open(hashindex.Options{Buckets: 1 << 10, Device: device, GPU: dev})
		},
		batch: func(r engine.Reporter) error {
			_, err := r.(*hashindex.Index).Insert([]uint64{1 << 40, 2 << 40, 3 << 40}, []uint32{1, 2, 3}, nil)
			return err
		},
		items: 3,
		closed: func(r engine.Reporter) map[string]error {
			ix := r.(*hashindex.Index)
			_, ins := ix.Insert([]uint64{1}, []uint32{1}, nil)
			_, snap := ix.Snapshot()
			_, stg := ix.NewStaging(1)
			return map[string]error{"insert": ins, "search": ix.Search([]uint64{1}, make([]uint32, 1)),
				"delete": ix.Delete([]uint64{1}, []uint32{1}, make([]bool, 1)), "snapshot": snap, "reset": ix.Reset(), "new staging": stg}
		},
	},
	{
		name: "btree", options: reflect.TypeFor[btree.Options](),
		open: func(device string, dev *gpu.Device) (engine.Reporter, error) {
			return btree.Open(btree.Options{Device: device, GPU: dev})
		},
		batch: func(r engine.Reporter) error {
			return r.(*btree.Tree).Insert([]uint64{3, 1, 2}, []uint64{30, 10, 20})
		},
		items: 3,
		closed: func(r engine.Reporter) map[string]error {
			t := r.(*btree.Tree)
			_, _, get := t.Get([]uint64{1})
			_, del := t.Delete([]uint64{1})
			_, _, rng := t.Range(0, 9, 0)
			return map[string]error{"insert": t.Insert([]uint64{1}, []uint64{1}), "build": t.Build(nil, nil),
				"get": get, "delete": del, "range": rng, "check": t.Check()}
		},
	},
	{
		name: "mpt", options: reflect.TypeFor[mpt.Options](),
		open: func(device string, dev *gpu.Device) (engine.Reporter, error) {
			return mpt.Open(mpt.Options{Device: device, GPU: dev})
		},
		batch: func(r engine.Reporter) error {
			return r.(*mpt.Trie).Update([][]byte{{1}, {2}, {3}}, [][]byte{{10}, {20}, {30}})
		},
		items: 3,
		closed: func(r engine.Reporter) map[string]error {
			t := r.(*mpt.Trie)
			_, _, get := t.Get([]byte{1})
			_, hash := t.Hash()
			_, prove := t.Prove([]byte{1})
			return map[string]error{"update": t.Update([][]byte{{1}}, [][]byte{{1}}), "get": get, "hash": hash, "prove": prove}
		},
	},
	{
		name: "art", options: reflect.TypeFor[art.Options](),
		open: func(device string, dev *gpu.Device) (engine.Reporter, error) {
			return art.Open(art.Options{Device: device, GPU: dev})
		},
		batch: func(r engine.Reporter) error {
			return r.(*art.Tree).Insert([][]byte{[]byte("c"), []byte("a"), []byte("b")}, []uint64{3, 1, 2})
		},
		items: 3,
		closed: func(r engine.Reporter) map[string]error {
			t := r.(*art.Tree)
			k := [][]byte{[]byte("a")}
			_, _, get := t.Get(k)
			_, del := t.Delete(k)
			_, _, rng := t.Range(nil, nil, 0)
			return map[string]error{"insert": t.Insert(k, []uint64{1}), "get": get, "delete": del, "range": rng, "check": t.Check()}
		},
	},
	{
		name: "stm", options: reflect.TypeFor[stm.Options](),
		open: func(device string, dev *gpu.Device) (engine.Reporter, error) {
			return stm.Open(stm.Options{Device: device, GPU: dev})
		},
		batch: func(r engine.Reporter) error {
			_, err := r.(*stm.Engine).Run(stm.Bank{Accounts: 64, Initial: 10}, stm.RunOptions{Transactions: 100, Seed: 1})
			return err
		},
		items: 100,
		closed: func(r engine.Reporter) map[string]error {
			_, err := r.(*stm.Engine).Run(stm.Bank{Accounts: 64, Initial: 10}, stm.RunOptions{Transactions: 100, Seed: 1})
			return map[string]error{"run": err}
		},
	},
}

// TestEveryOptionsHasDeviceAndGPU checks that every engine's Options has
// the two placement fields, Device (a device option) and GPU (an open
// device the caller keeps), with those types.
func TestEveryOptionsHasDeviceAndGPU(t *testing.T) {
	want := map[string]reflect.Type{"Device": reflect.TypeFor[string](), "GPU": reflect.TypeFor[*gpu.Device]()}
	for _, f := range facades {
		for field, typ := range want {
			sf, ok := f.options.FieldByName(field)
			if !ok {
				t.Errorf("%s: %s has no field %s", f.name, f.options, field)
				continue
			}
			if sf.Type != typ {
				t.Errorf("%s: %s.%s is %s, want %s", f.name, f.options, field, sf.Type, typ)
			}
		}
	}
}

// checkFacade checks what an open engine reports: the backend, a reason
// that begins with the engine's name, the last batch's timings after one
// batch, and a clean Close.
func checkFacade(t *testing.T, f facade, r engine.Reporter, backend gpu.Backend, reason string) {
	t.Helper()
	if r.Backend() != backend {
		t.Errorf("backend %v, want %v (reason %q)", r.Backend(), backend, r.Reason())
	}
	if !strings.HasPrefix(r.Reason(), f.name+": ") || !strings.Contains(r.Reason(), reason) {
		t.Errorf("reason %q: want it to begin with %q and say %q", r.Reason(), f.name+": ", reason)
	}
	if lb := r.LastBatch(); lb != (engine.Timings{}) {
		t.Errorf("last batch before any batch: %+v, want zero", lb)
	}
	if err := f.batch(r); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if lb := r.LastBatch(); lb.Op == "" || lb.Items != f.items || lb.Total <= 0 {
		t.Errorf("last batch %+v: want its operation, %d items and a total time", lb, f.items)
	}
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestEveryEngineOpensOnTheCPU opens every engine with Device "cpu": each
// runs on the CPU backend and says so in a reason that names it.
func TestEveryEngineOpensOnTheCPU(t *testing.T) {
	for _, f := range facades {
		t.Run(f.name, func(t *testing.T) {
			r, err := f.open("cpu", nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFacade(t, f, r, gpu.BackendCPU, "cpu engine: requested")
		})
	}
}

// TestEveryEngineFailsAfterClose opens every engine on the CPU with its
// package's Open, closes it, and checks that its calls fail with an error
// matching engine.ErrClosed that names the engine, that LastBatch is zero
// and that a second Close is a no-op.
func TestEveryEngineFailsAfterClose(t *testing.T) {
	for _, f := range facades {
		t.Run(f.name, func(t *testing.T) {
			r, err := f.open("cpu", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.batch(r); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			for call, err := range f.closed(r) {
				if !errors.Is(err, engine.ErrClosed) || !strings.HasPrefix(err.Error(), f.name+": ") {
					t.Errorf("%s after Close: %v, want an error that begins with %q and matches engine.ErrClosed", call, err, f.name+": ")
				}
			}
			if lb := r.LastBatch(); lb != (engine.Timings{}) {
				t.Errorf("LastBatch after Close: %+v, want zero", lb)
			}
			if err := r.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

// TestEmptyDeviceFollowsWARPKV_DEVICE opens every engine with Device ""
// under WARPKV_DEVICE=cpu (the CPU backend, requested), and under a bad
// WARPKV_DEVICE, which must fail with an error naming the engine and the
// bad option, as a bad Device does.
func TestEmptyDeviceFollowsWARPKV_DEVICE(t *testing.T) {
	for _, f := range facades {
		t.Run(f.name, func(t *testing.T) {
			t.Setenv(gpu.EnvDevice, "cpu")
			r, err := f.open("", nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFacade(t, f, r, gpu.BackendCPU, "cpu engine: requested")

			t.Setenv(gpu.EnvDevice, "tpu")
			for _, device := range []string{"", "tpu"} {
				r, err := f.open(device, nil)
				if err == nil {
					r.Close()
					t.Fatalf("device %q under WARPKV_DEVICE=tpu: opened on %v (%s)", device, r.Backend(), r.Reason())
				}
				if !strings.Contains(err.Error(), f.name+": ") || !strings.Contains(err.Error(), `"tpu"`) {
					t.Errorf("device %q under WARPKV_DEVICE=tpu: error %q: want the engine and the bad option named", device, err)
				}
			}
		})
	}
}

// TestEveryEngineOpensOnAGivenGPU opens every engine on an open device (the
// Options' GPU field, which wins over Device): each runs on the GPU
// backend, says the device was given, and leaves it open at Close.
func TestEveryEngineOpensOnAGivenGPU(t *testing.T) {
	dev := gputest.Device(t)
	for _, f := range facades {
		t.Run(f.name, func(t *testing.T) {
			r, err := f.open("cpu", dev)
			if err != nil {
				t.Fatal(err)
			}
			checkFacade(t, f, r, gpu.BackendGPU, "device given by the caller")
			if _, _, err := dev.MemInfo(); err != nil {
				t.Fatalf("the given device after Close: %v", err)
			}
		})
	}
}
