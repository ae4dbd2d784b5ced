package itemstore

import "errors"

// Sentinel errors; the store's errors wrap them, so test with errors.Is.
var (
	// ErrTooLarge: the value is longer than ItemSizeMax, or header, key and
	// value together need more than a page.
	ErrTooLarge = errors.New("itemstore: item too large")

	// ErrKeyLength: the key is empty or longer than MaxKeyLen bytes.
	ErrKeyLength = errors.New("itemstore: key length not 1 to 250 bytes")

	// ErrOutOfMemory: the item's size class has no free chunk, no page can
	// be added under the memory limit, and the bounded CLOCK sweep found no
	// evictable item (every chunk is being written or referenced, or the
	// class never got a page).
	ErrOutOfMemory = errors.New("itemstore: out of memory")

	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("itemstore: store closed")
)

// errNegativeValue: Alloc was given a negative value length.
var errNegativeValue = errors.New("itemstore: negative value length")
