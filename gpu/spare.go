package gpu

import (
	"cmp"
	"errors"
	"slices"
	"sync/atomic"
)

// Spare memory: the physical memory of a freed Growable kept for the next
// growth instead of released to the driver.
//
// Releasing device memory is not free for the calls that follow it: the
// driver clears what it gets back with the copy engines, and for the next
// 10-20 ms a pinned upload beside that clearing runs at half speed (on an
// H200, 160 MB right after 4 GiB were freed: 28-29 GB/s against 55 GB/s,
// BenchmarkTransferAfterFree; BENCHMARKS.md "Spare device memory"). A
// CuART rebuild frees the old tree's pools, about 11 GB at 100M keys, so an
// insert right after it paid that. So a Growable's chunks go, when freed,
// to its Device's spare list (up to a limit), and a Growable that grows
// maps spare chunks before it creates any: the memory is never cleared,
// and the growth costs a map instead of a cuMemCreate.
//
// Spare memory stays the process's: it is released when an allocation or
// a growth runs out of device memory (which then tries again), by
// ReleaseSpare, past the limit (SetSpareLimit; a quarter of the device's
// memory by default), and when the Device closes. MemInfo counts it as
// free. As with any reused device memory, a spare chunk holds what its
// last owner wrote: a Growable's new bytes are undefined, never zero.

// spareChunk is one physical allocation (CUmemGenericAllocationHandle)
// that no Growable maps.
type spareChunk struct {
	h    uint64
	size int64
}

// defaultSpareLimit is the spare bytes a Device keeps unless told
// otherwise: a quarter of its memory (35 GB on an H200, 20 GB on an H100
// 80GB; a 100M-key CuART tree's pools, records, free stacks and pending
// frees, are about 11 GB).
func (d *Device) defaultSpareLimit() int64 { return int64(d.props.TotalMem / 4) }

// SetSpareLimit sets the most bytes of freed Growable memory the device
// keeps for reuse (0 keeps none: every Free releases to the driver; a
// negative limit restores the default, a quarter of the device's memory),
// and releases spare memory past it. Cost: the releases.
func (d *Device) SetSpareLimit(bytes int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.spareLimit, d.spareLimitSet = bytes, bytes >= 0
	return d.trimSpare(d.limitOfSpare())
}

// limitOfSpare is the spare limit in force; the caller holds d.mu.
func (d *Device) limitOfSpare() int64 {
	if d.spareLimitSet {
		return d.spareLimit
	}
	return d.defaultSpareLimit()
}

// SpareBytes returns the bytes of freed Growable memory the device keeps
// for reuse. Cost: O(1).
func (d *Device) SpareBytes() int64 { return d.spareBytes.Load() }

// ReleaseSpare returns every spare chunk to the driver (which clears it,
// slowing copies for a while after: call it when the device is idle).
// Cost: one cuMemRelease a chunk.
func (d *Device) ReleaseSpare() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trimSpare(0)
}

// keepSpare adds chunk c (unmapped) to the spare list, in its place by
// size, if the device is open and the limit allows, and reports whether
// it did; the caller holds d.mu and releases c itself when it did not.
// Cost: O(spare chunks).
func (d *Device) keepSpare(c spareChunk) bool {
	if d.closed || d.spareBytes.Load()+c.size > d.limitOfSpare() {
		return false
	}
	at, _ := slices.BinarySearchFunc(d.spare, c.size, func(e spareChunk, size int64) int { return cmp.Compare(e.size, size) })
	d.spare = slices.Insert(d.spare, at, c)
	d.spareBytes.Add(c.size)
	return true
}

// trimSpare releases spare chunks, largest first, until at most keep
// bytes are left; the caller holds d.mu. Cost: one cuMemRelease a chunk
// released.
func (d *Device) trimSpare(keep int64) error {
	var err error
	for len(d.spare) > 0 && d.spareBytes.Load() > keep {
		c := d.spare[len(d.spare)-1]
		d.spare = d.spare[:len(d.spare)-1]
		d.spareBytes.Add(-c.size)
		err = errors.Join(err, d.releaseChunk(c.h))
	}
	return err
}

// releaseChunk returns one physical allocation to the driver.
func (d *Device) releaseChunk(h uint64) error {
	return d.do("cuMemRelease", func() uint32 { return call(d.drv.vmm.release, uintptr(h)) })
}

// takeSpare removes from the spare list chunks to map for a growth of
// need bytes with room bytes of reservation left (need <= room), and
// returns them: the smallest chunk that holds need if it fits the room
// and is at most twice need; else, largest first, chunks no larger than
// what is still needed, which may cover only part of need (the caller
// creates the rest). Cost: O(spare chunks).
func (d *Device) takeSpare(need, room int64) []spareChunk {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, c := range d.spare {
		if c.size >= need && c.size <= room && c.size <= 2*need {
			d.spare = slices.Delete(d.spare, i, i+1)
			d.spareBytes.Add(-c.size)
			return []spareChunk{c}
		}
	}
	var took []spareChunk
	left := need
	for i := len(d.spare) - 1; i >= 0 && left > 0; i-- {
		if c := d.spare[i]; c.size <= left {
			took = append(took, c)
			left -= c.size
			d.spare = slices.Delete(d.spare, i, i+1)
			d.spareBytes.Add(-c.size)
		}
	}
	return took
}

// giveSpare puts chunks a failed growth took back on the spare list (or
// releases them past the limit). Cost: O(chunks).
func (d *Device) giveSpare(cs []spareChunk) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	for _, c := range cs {
		if !d.keepSpare(c) {
			err = errors.Join(err, d.releaseChunk(c.h))
		}
	}
	return err
}

// releaseSpareFor releases every spare chunk after an allocation ran out
// of memory, and reports whether there were any (so that the allocation
// is worth trying again). Cost: the releases.
func (d *Device) releaseSpareFor(err error) bool {
	if !errors.Is(err, ErrOutOfMemory) || d.spareBytes.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.releaseSpareLocked(err)
}

// releaseSpareLocked is releaseSpareFor for a caller that holds d.mu.
func (d *Device) releaseSpareLocked(err error) bool {
	if !errors.Is(err, ErrOutOfMemory) || len(d.spare) == 0 {
		return false
	}
	return d.trimSpare(0) == nil
}

// spareState is the Device's share of this file: kept apart so that the
// struct's doc stays readable.
type spareState struct {
	spare         []spareChunk // chunks no Growable maps, kept for reuse, by size ascending
	spareBytes    atomic.Int64 // their total size
	spareLimit    int64        // the most spareBytes may be, once set
	spareLimitSet bool         // SetSpareLimit was called (else defaultSpareLimit)
}
