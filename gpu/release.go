package gpu

// releaseHandle forgets the driver handle h from table, one of d's tables of
// live handles (allocations, pinned host blocks, streams, events), and
// destroys it with the driver entry point fn (named name in errors), under
// d's lock. A handle the table no longer holds was already released by
// Device.Close, so it is left alone and nil is returned: this is what makes
// every Free and Close idempotent. Cost: one map lookup and delete, and one
// driver call when the handle was live.
func releaseHandle[V any](d *Device, table map[uintptr]V, h uintptr, name string, fn uintptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := table[h]; !ok {
		return nil
	}
	delete(table, h)
	return d.do(name, func() uint32 { return call(fn, h) })
}
