package kv

// Kind is the operation an Op performs.
type Kind uint8

// Operation kinds.
const (
	// Get retrieves Key. With Touch it also sets the expiry (gat); with Peek
	// it leaves the access time and fetched mark alone (meta debug).
	Get Kind = iota + 1
	// Touch sets the expiry of Key to Exptime.
	Touch
	// Set stores Value under Key unconditionally (or only if the item's CAS
	// equals CompareCAS when HasCAS: the cas command).
	Set
	// Add stores only if Key is absent.
	Add
	// Replace stores only if Key is present.
	Replace
	// Append adds Value after the present item's value, keeping its flags
	// and expiry.
	Append
	// Prepend adds Value before the present item's value.
	Prepend
	// Delete removes Key (only if its CAS equals CompareCAS when HasCAS).
	Delete
	// Incr adds Delta to the decimal value of Key, wrapping at 2^64.
	Incr
	// Decr subtracts Delta from the decimal value of Key, stopping at 0.
	Decr
	// Flush invalidates every item, now or, with Exptime > 0, that many
	// seconds from now (flush_all [delay]). Key is empty.
	Flush
)

var kindNames = [...]string{"", "get", "touch", "set", "add", "replace", "append", "prepend", "delete", "incr", "decr", "flush"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "unknown"
}

// IsStore reports whether k writes a value from the request (set, add,
// replace, append, prepend).
func (k Kind) IsStore() bool { return k >= Set && k <= Prepend }

// Status is the outcome of an Op; the protocol layer maps it to its reply.
type Status uint8

// Statuses.
const (
	// StatusNone: the Op was not executed (a zero Result).
	StatusNone Status = iota
	// Hit: Get found the item (Result holds it).
	Hit
	// Miss: Get found nothing.
	Miss
	// Stored: a store op wrote the item.
	Stored
	// NotStored: add on a present key, replace/append/prepend on an absent
	// one.
	NotStored
	// Exists: the CAS to compare differs from the item's.
	Exists
	// NotFound: the key is absent (cas, delete, touch, incr, decr).
	NotFound
	// Deleted: Delete removed the item.
	Deleted
	// Touched: Touch set the expiry.
	Touched
	// Counted: Incr/Decr wrote Result.Number.
	Counted
	// NonNumeric: Incr/Decr on a value that is not a 64-bit unsigned
	// decimal.
	NonNumeric
	// TooLarge: the item does not fit the item size limit (a Set also
	// removes the key's old item, as memcached does).
	TooLarge
	// NoMemory: no memory for the item even after eviction.
	NoMemory
	// Flushed: Flush took effect (or was scheduled).
	Flushed
	// Failed: an internal error; Result.Err says which.
	Failed
)

var statusNames = [...]string{"none", "hit", "miss", "stored", "not_stored", "exists", "not_found", "deleted", "touched", "counted", "non_numeric", "too_large", "no_memory", "flushed", "failed"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// Op is one key-value operation and, after Cache.Do, its result.
type Op struct {
	Kind Kind
	Key  []byte // 1..MaxKeyLen bytes (the protocol layer checks)

	// Request fields; each Kind reads those its doc names.
	Value      []byte // store ops
	Flags      uint32 // store ops
	Exptime    int64  // memcached expiry as sent (see ExpiryAt); store ops, Touch, Get with Touch, Flush delay, Incr/Decr with Vivify or SetTTL
	Touch      bool   // Get: also set the expiry to Exptime (gat)
	Peek       bool   // Get: do not update access time or fetched mark
	HasCAS     bool   // compare CompareCAS with the item's CAS first
	CompareCAS uint64 // see HasCAS
	Delta      uint64 // Incr/Decr
	Vivify     bool   // Incr/Decr on an absent key: store Initial with Exptime instead of NotFound
	Initial    uint64 // see Vivify
	SetTTL     bool   // Incr/Decr: also set the expiry to Exptime (meta ma T)
	TooLarge   bool   // store ops: the protocol layer dropped the value (over the size limit); answer TooLarge
	NoMemory   bool   // with TooLarge: the value was dropped for lack of memory to receive it; answer NoMemory instead

	// Meta protocol item marks (see ItemMeta).
	KeyBinary  bool  // store ops: the key was sent base64-encoded (ms b): the new item is marked MetaKeyBinary
	Won        bool  // store ops: the new item starts with its win token handed out (mg N creating an item)
	Invalidate bool  // Set with HasCAS: a CAS older than the item's stores a stale value (ms I); Delete: mark the item stale instead of removing it (md I)
	Token      bool  // Get: a meta get (mg), which may take the item's win token: of a stale item, or with Recache
	Recache    int64 // Get with Token: absolute unix time; a hit expiring before it wins the token (mg R), 0 = none
	TouchFirst bool  // Get with Touch and Recache: the touch comes first (mg T before R), so R compares the new expiry

	// Result, written by Cache.Do.
	Result Result
}

// Result is what a Cache reports for an Op.
type Result struct {
	Status Status
	// Value is the item's value on a Hit. It points into the Batch's
	// memory and stays valid until the Batch is reset or run again.
	Value      []byte
	Flags      uint32   // Hit
	CAS        uint64   // Hit; after Stored/Counted/Touched: the item's CAS
	Exptime    int64    // Hit, Touched, Counted: absolute unix seconds, 0 = never
	LastAccess int64    // Hit: unix seconds of the access before this one
	Fetched    bool     // Hit: the item had been fetched before this Get
	Class      int      // Hit, and writes that found the key's item: that item's slab class (0 where the engine has none)
	Number     uint64   // Counted: the new value
	Meta       ItemMeta // Hit: the item's marks before this op
	Won        bool     // Hit: this op took the item's win token (mg R, or a stale item's first reader)
	Err        error    // Failed
}

// ItemMeta is the set of marks an item carries for the meta protocol, as
// memcached's item flags.
type ItemMeta uint8

// Item marks.
const (
	// MetaKeyBinary: the item was stored with a base64-encoded key (ms b);
	// mg k and me print its key encoded.
	MetaKeyBinary ItemMeta = 1 << iota
	// MetaStale: the item was invalidated (md I, or ms I with an old CAS);
	// mg reports X, and its first reader wins the token.
	MetaStale
	// MetaWon: a client holds the item's win token (mg reported W); later
	// readers see Z and cannot win.
	MetaWon
)

// Batch is a connection's pipelined Ops, executed in order by Cache.Do.
// Reuse a Batch across requests to reuse its memory.
type Batch struct {
	Ops []Op
	// Buf holds the values of Hits; engines append to it with AddValue.
	Buf []byte
}

// Reset empties b, keeping its memory.
func (b *Batch) Reset() {
	clear(b.Ops)
	b.Ops = b.Ops[:0]
	b.Buf = b.Buf[:0]
}

// Add appends op to b and returns its index.
func (b *Batch) Add(op Op) int {
	b.Ops = append(b.Ops, op)
	return len(b.Ops) - 1
}

// AddValue copies the value parts of a hit into b.Buf and returns the copy.
// Earlier copies stay valid: Buf grows in a new array when full, the old one
// left to earlier slices. Cost: one copy of the value.
func (b *Batch) AddValue(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if cap(b.Buf)-len(b.Buf) < n {
		b.Buf = make([]byte, 0, max(2*cap(b.Buf), n, 4096))
	}
	start := len(b.Buf)
	for _, p := range parts {
		b.Buf = append(b.Buf, p...)
	}
	return b.Buf[start:len(b.Buf):len(b.Buf)]
}

// Stat is one statistic, as memcached's stats command prints it.
type Stat struct {
	Name, Value string
}

// Cache executes key-value operations.
type Cache interface {
	// Do executes b's Ops in order, as if one after the other, and writes
	// each Op's Result. It returns an error only when the cache cannot run
	// at all (closed); per-op failures are Results.
	Do(b *Batch) error
	// Stats returns the statistics of a stats group: "" (general),
	// "settings", "items" or "slabs"; false for a group it does not know.
	// The protocol layer adds its own connection statistics.
	Stats(group string) ([]Stat, bool)
	// Now returns the cache's clock in unix seconds, the time expiries are
	// measured against.
	Now() int64
}

// Limits of keys and values, as memcached 1.6's defaults.
const (
	MaxKeyLen          = 250     // longest key
	DefaultItemSizeMax = 1 << 20 // default item size limit (-I)
	// MaxRelativeExpiry is the largest expiry taken as relative seconds
	// (30 days); larger ones are absolute unix times.
	MaxRelativeExpiry = 60 * 60 * 24 * 30
)
