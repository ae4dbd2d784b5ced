package itemstore

import (
	"sync/atomic"
	"unsafe"

	"github.com/warpkv/warpkv/kv"
)

// headerSize is the size of the item header at the start of every chunk.
// It equals memcached 1.6's item header (with CAS), so the default class
// table is memcached's.
const headerSize = 48

// header is the item header, laid over the first headerSize bytes of a
// chunk in a mapped page (chunks are 8-byte aligned, so are its 64-bit
// words). The key follows it, then the value.
//
// ctl, hash, exptime and atime are accessed atomically: they are read or
// changed by goroutines that hold no reference (Acquire, Unlink, the CLOCK
// sweep) or after the item is linked (touch). The other fields are written
// only while the item is Writing, by the one goroutine that allocated it,
// and read by reference holders, who are ordered after the write by the
// atomic operations on ctl.
type header struct {
	ctl     atomic.Uint64 // control word: see the ctl* constants
	hash    atomic.Uint64 // the key's hash
	cas     uint64        // CAS unique; while Free, the next free location
	exptime atomic.Int64  // absolute unix seconds, 0 = never
	atime   atomic.Uint32 // last access, unix seconds
	flags   uint32        // client flags
	vlen    uint32        // value length
	klen    uint8         // key length, 1 to MaxKeyLen
	_       [3]byte
}

// The header must be exactly headerSize bytes.
var (
	_ [headerSize - unsafe.Sizeof(header{})]byte
	_ [unsafe.Sizeof(header{}) - headerSize]byte
)

// The control word: reference count in the low 32 bits, then the state,
// the CLOCK reference bit, the fetched bit, the meta marks (binary key,
// stale, win token handed out), and a generation that counts
// the chunk's reuses so a stale compare-and-swap cannot succeed on a
// reused chunk (the ABA problem) unless 2^24 reuses happen in between.
const (
	ctlRefMask    = 1<<32 - 1
	ctlStateShift = 32
	ctlStateMask  = 3 << ctlStateShift
	ctlClock      = 1 << 34 // CLOCK reference bit: set by Acquire, cleared by the sweep
	ctlFetched    = 1 << 35 // set by Touch
	ctlMetaShift  = 36      // bits 36-38: the item's meta protocol marks (kv.ItemMeta)
	ctlMetaMask   = 7 << ctlMetaShift
	ctlGenShift   = 40
	ctlGenMask    = 1<<24 - 1
)

// ctlMeta returns the meta protocol marks in control word c.
func ctlMeta(c uint64) kv.ItemMeta { return kv.ItemMeta((c & ctlMetaMask) >> ctlMetaShift) }

// Item states. Zeroed memory (a new page) is Free.
const (
	stateFree    = 0 // on a free list or never used
	stateWriting = 1 // allocated; visible only to the allocating caller
	stateLinked  = 2 // readable: Acquire succeeds
	stateDead    = 3 // unlinked; freed when the last reference is released
)

// ctlState returns the state in control word c.
func ctlState(c uint64) uint64 { return (c & ctlStateMask) >> ctlStateShift }

// ctlRefs returns the reference count in control word c.
func ctlRefs(c uint64) uint64 { return c & ctlRefMask }

// ctlGen returns the generation in control word c.
func ctlGen(c uint64) uint32 { return uint32(c>>ctlGenShift) & ctlGenMask }

// withState returns c with its state replaced by st.
func withState(c, st uint64) uint64 { return c&^ctlStateMask | st<<ctlStateShift }

// ctlFor returns a control word with the given generation, state and
// reference count, and both bits clear.
func ctlFor(gen uint32, st, refs uint64) uint64 {
	return uint64(gen&ctlGenMask)<<ctlGenShift | st<<ctlStateShift | refs
}

// key returns the item's key bytes.
func (h *header) key() []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(h), headerSize)), h.klen)
}

// value returns the item's value bytes.
func (h *header) value() []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(h), headerSize+int(h.klen))), h.vlen)
}

// size returns the chunk bytes the item uses (header, key and value).
func (h *header) size() int64 { return int64(itemSize(int(h.klen), int(h.vlen))) }

// expired reports whether the item's expiry time has passed at now.
func (h *header) expired(now int64) bool {
	e := h.exptime.Load()
	return e != 0 && e <= now
}

// clampTime converts unix seconds to the header's 32-bit access time.
func clampTime(t int64) uint32 { return uint32(min(max(t, 0), 1<<32-1)) }
