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
	if g, ok := t.eng.(*gpuEngine); ok {
		if _, err := engine.RLock(&t.Facade, "lookup"); err != nil {
			return err
		}
		err := g.lookupSlices(keys, values, found)
		engine.RUnlock(&t.Facade)
		if !errors.Is(err, errLongSlices) {
			return wrapOp("lookup", err)
		}
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
	if g, ok := t.eng.(*gpuEngine); ok {
		if _, err := engine.Lock(&t.Facade, "update"); err != nil {
			return err
		}
		err := g.updateSlices(keys, values, found)
		engine.Unlock(&t.Facade)
		if !errors.Is(err, errLongSlices) {
			return wrapOp("update", err)
		}
	}
	return t.UpdateKeys(Pack(keys), values, found)
}
