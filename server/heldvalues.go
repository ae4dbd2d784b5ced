package server

import (
	"sync"

	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/protocol"
)

// heldValues is the protocol.PendingBudget of warpkv serve: it counts the
// bytes connections hold for half-received requests (large values, long
// multi-get lines) inside the item memory limit, as memcached, which
// receives a value into the item it allocated for it, counts it inside -m.
// The first free bytes (one largest request: the item size limit or the
// longest get line, plus 64 KiB) are outside the limit, so that one
// request of any size can always be received and a lone large upload costs
// the cache nothing; bytes past them are held from the item store
// (itemstore.Store.Hold), which gives back pages of items for them. A
// request is refused only when the store cannot give more: when held
// values would leave it less than an eighth of the limit.
type heldValues struct {
	store *itemstore.Store
	free  int64

	mu    sync.Mutex
	total int64 // bytes reserved by connections
}

var _ protocol.PendingBudget = (*heldValues)(nil)

// newHeldValues returns the budget of store with free bytes outside it.
func newHeldValues(store *itemstore.Store, free int64) *heldValues {
	return &heldValues{store: store, free: free}
}

// over returns the part of total bytes that lies past the free bytes.
func (h *heldValues) over(total int64) int64 { return max(total-h.free, 0) }

// Reserve takes n bytes, holding from the store what lies past the free
// bytes; it reports false, taking nothing, when the store refuses. Cost: a
// mutex, and the store's page mutex when past the free bytes.
func (h *heldValues) Reserve(n int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := h.over(h.total+n) - h.over(h.total); d > 0 && !h.store.Hold(d) {
		return false
	}
	h.total += n
	return true
}

// Release returns n bytes taken by Reserve, and to the store its share.
func (h *heldValues) Release(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := h.over(h.total) - h.over(h.total-n); d > 0 {
		h.store.Unhold(d)
	}
	h.total -= n
}
