package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
)

// GetInto is Get into values and found (len(keys) each), answers the
// caller owns and may reuse from call to call: values[i] is the value of
// keys[i] and found[i] whether it is present (values[i] is 0 when not),
// whatever they held before. Get allocates 9 bytes of answers a key each
// call, and fresh memory faults on its first write (at 1Mi keys in a 100M
// tree, most of the difference between a call from a packed batch and
// one from [][]byte); reused answers do not. Cost: as Get.
func (t *Tree) GetInto(keys [][]byte, values []uint64, found []bool) error {
	if len(values) != len(keys) || len(found) != len(keys) {
		return fmt.Errorf("art: lookup: %d keys, %d values, %d found flags", len(keys), len(values), len(found))
	}
	if done, err := t.onSlices("lookup", false, func(g *gpuEngine) error { return g.lookupSlices(keys, values, found) }); done {
		return err
	}
	return t.Lookup(Pack(keys), values, found)
}

// UpdateInto is Update with the found flags written into found
// (len(keys)), which the caller owns and may reuse from call to call, as
// GetInto's answers. Cost: as Update.
func (t *Tree) UpdateInto(keys [][]byte, values []uint64, found []bool) error {
	if len(values) != len(keys) || len(found) != len(keys) {
		return fmt.Errorf("art: update: %d keys, %d values, %d found flags", len(keys), len(values), len(found))
	}
	if done, err := t.onSlices("update", true, func(g *gpuEngine) error { return g.updateSlices(keys, values, found) }); done {
		return err
	}
	return t.UpdateKeys(Pack(keys), values, found)
}

// onSlices runs call, a point call of keys in Go slices, on the GPU
// engine under the facade's lock (exclusive for updates, shared for
// lookups): done is false on the CPU engine, and when the keys hold more
// than 4 GiB of bytes (errLongSlices), where the caller packs them and
// takes the Keys path instead. Get, GetInto, Update and UpdateInto share
// it. Cost: the call.
func (t *Tree) onSlices(op string, exclusive bool, call func(g *gpuEngine) error) (done bool, err error) {
	g, ok := t.eng.(*gpuEngine)
	if !ok {
		return false, nil
	}
	if exclusive {
		if _, err := engine.Lock(&t.Facade, op); err != nil {
			return true, err
		}
		err = call(g)
		engine.Unlock(&t.Facade)
	} else {
		if _, err := engine.RLock(&t.Facade, op); err != nil {
			return true, err
		}
		err = call(g)
		engine.RUnlock(&t.Facade)
	}
	if errors.Is(err, errLongSlices) {
		return false, nil
	}
	return true, wrapOp(op, err)
}
