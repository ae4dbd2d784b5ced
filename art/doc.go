// Package art is CuART: an ordered index from byte-string keys to uint64
// values (an adaptive radix tree, Leis et al.) in CuART's linear layout,
// built and changed in batches, on the GPU engine (the whole tree in
// device memory, every batch as kernels) or on the CPU engine (the same
// layout and phases on goroutines). Both engines give the same answers
// and, after the same batches, the same layout word for word.
//
// Keys are any byte strings of 0 to MaxKeyLen bytes: the empty key, keys
// with 0x00 and 0xff bytes, keys that are prefixes of other keys.
//
//	t, err := art.Open(art.Options{Device: "auto"}) // auto, cpu, gpu, gpu:N
//	defer t.Close()
//	err = t.Insert([][]byte{[]byte("a"), []byte("ab")}, []uint64{1, 2})
//	vals, found, err := t.Get([][]byte{[]byte("ab")})
//	err = t.GetInto(keys, vals, found) // answers the caller reuses: no allocation a call
//	keys, vals, err := t.Range([]byte("a"), nil, 10) // [lo, hi), nil hi: no bound; limit <= 0: none
//	for k, v := range t.ScanPrefix([]byte("a")) { ... }
//	err = t.InsertContext(ctx, keys, vals) // stops between chunks, undone
//
// After Close every call returns an error matching engine.ErrClosed.
//
// # Layout (layout.go, store.go)
//
// One record buffer per kind: inner nodes N4, N16, N48, N256 and leaves L8,
// L16, L32 (keys of up to 8, 16, 32 bytes, stored in the leaf) and LV
// (longer keys: the leaf holds the value and the key's place in an arena
// of key bytes, on the GPU too). Records are multiples of 16 bytes (N4 64
// B, N16 176 B, N48 672 B, N256 2080 B; leaves 16, 32, 48, 16 B), held in
// pointer-free []uint64 slices (device buffers on the GPU). A link is a
// 64-bit word: kind in bits 60-63 (so the size of the next read is known
// before the read), a leaf's key length in bits 40-59, the record index in
// bits 0-39.
//
// An inner node's header is its first four words: prefix length and
// children count (and an N4's four key bytes), the first 8 bytes of its
// compressed path (path compression; longer prefixes are checked against
// any leaf below the node, which holds the whole key), the terminator and
// the parent word. Children: N4 and N16 sorted key bytes and links; N48 a
// 256-byte index (byte -> slot+1) and 48 links whose slots are kept in
// byte order; N256 256 links by byte. A node holds the smallest kind its
// children fit (1-4, 5-16, 17-48, 49-256): it grows and shrinks exactly at
// the boundaries, so the structure is a function of the key set.
//
// Keys that are prefixes of other keys: a node at depth d (the key bytes
// consumed above it and by its prefix) has a terminator slot, the leaf of
// the key that ends exactly there ("a" in a node over "ab" and "ac"). It
// sorts before the node's children. A node has at least two entries
// (children and terminator); one that would keep one collapses into it.
//
// The parent word of an inner node links it to its parent (the parent's
// link with the child's byte in the aux field, or the root slot): range
// scans and iterators need no stack (a cursor is a node and a position;
// an exhausted node climbs to its parent), and a batch finds the parent of
// a node it changes in one read.
//
// The root array replaces the top W levels (W = 0 to 3 bytes) by one read:
// 256^W table entries for the keys of at least W bytes, indexed by their
// first W bytes, then one short slot for every key shorter than W bytes
// (its leaf; (256^W-1)/255 slots). In key order the short key of the first
// l bytes of entry e comes right before entry e when e's last W-l bytes are
// zero, so iteration interleaves them. W is chosen at every build from the
// key count and the spread of the keys' first bytes (chooseWidth: 1 from
// 256 keys, 2 from 4Ki, 3 from 1Mi, each only when the distinct prefixes
// fill at least 1/32 of the table; text keys get narrower tables than
// random ones; measured in BenchmarkLookupWidth), and revisited by a
// rebuild when the tree doubles or halves.
//
// Records are allocated per kind from a free stack (the records the
// batches before freed, pushed in the order freed) and past the high-water
// mark: allocation i of a step gets free[top-1-i] while the stack lasts.
// Every step allocates in a fixed order (by segment, by node), so both
// engines place every record at the same index.
//
// # Batches
//
// Build and Insert sort the batch (stably; the last occurrence of a key
// wins). Build makes the whole tree with the build rounds. Insert:
//
//  1. classify, one walk per key with full prefix checks: present (its
//     value is replaced at the end), an empty root slot, an empty slot of a
//     node (an add), or a slot holding another leaf or a node whose prefix
//     the key leaves (a split);
//  2. the new keys are ordered by edge (a stable sort: the keys that split
//     one edge straddle the old node's subtree in key order) and grouped;
//     a split group gets the old leaf or node as one more item, at its rank
//     (for a node, its path is its smallest leaf's key cut at the node);
//  3. the build rounds make each group's subtree in fresh records: round r
//     makes the r-th level of every subtree at once (one segment per future
//     node: its depth is the common prefix of its first and last keys,
//     pieces by the byte there, kinds by the pieces, allocation per kind by
//     scans, the nodes written, the pieces placed); an old node placed in a
//     new node gets a trim (its prefix shortened);
//  4. one node round (round.go) applies the groups to the old tree: adds to
//     nodes (which may grow into a new record: the old one is freed, its
//     parent's slot rewritten), new subtrees into split slots, trims, the
//     root slots; then the values of present keys.
//
// Delete finds each key's leaf, frees the leaves, and runs one node round
// per depth, deepest first: a node that loses children shrinks to a
// smaller kind, collapses into its last entry (joining the paths), or
// disappears (its parent loses the slot in the next round). Update is
// CuART's: one walk per key, a conflict table (2 to 4 slots per key,
// linear probing) keeps the highest batch position per leaf, and only that
// key writes the leaf. Get is one walk per key (on the GPU one thread per
// key, or with Options.LookupLanes 8 a group of 8 lanes per key that
// splits the comparisons of long keys; LookupStaged takes the keys from
// and leaves the answers in pinned host memory). On the GPU, lookups and
// updates run in chunks pipelined over three streams (point_gpu.go).
// Ranges and prefix queries with a limit walk once per query, keeping the
// leaves in per-query slots, and write the pairs from the slots; without a
// limit they run two passes (count, prefix sums, write) of one cursor per
// query. On the GPU (walk.cu) the limited walk is a tile of 8 lanes per
// query that reads the next 8 positions of a node (or of the root array)
// in one coalesced load, keeps the leaves before the first inner node
// among them (ballots), compares them with the far bound lane by lane and
// stops there, and counts the pairs and their key bytes; after scans of
// the per-query counts a warp per query writes the pairs (ranges.cu). The
// earlier walk, one thread per query stepping the cursor with a warp per
// query cutting its leaves at the bound afterwards, stays for comparison.
// A batch's bounds are packed on all cores straight into pinned memory and
// reach the device in one DMA; RangesInto, RangesDescInto and PrefixInto
// answer into a reused Result, and into one from NewResult (pinned on the
// GPU engine) the answers' DMAs write with no host copy:
//
//	r := t.NewResult()
//	defer r.Free()
//	r, err = t.RangesInto(r, qs, 16) // query i: r.Query(i)
//
// Every phase has one writer per output word: a node's words are written
// by its own writer; a child's parent word by the child's writer when it
// changes, else by the parent's when the parent moves. No locks.
//
// # Engines
//
// The CPU engine (cpu.go; store.go, build.go, insert.go, round.go,
// delete.go, get.go, iter.go) runs each phase over its items on
// Options.Workers goroutines. The GPU engine (the *_gpu.go files; kernels
// in art.cu, which includes art.cuh and one .cu per operation) runs the
// same phases as kernels of one thread per item and prim's
// device sort, scan and select; it sorts byte-string keys in rounds of 7
// bytes (a stable radix sort by the chunk, then by the tie's run) and
// reads back only a few totals per step (several at once where they
// come together: a sort round's counts, a node round's frees). A build's
// or insert's values go up beside its sort: packed into pinned chunks on
// the host and copied on a transfer stream while the sort's first round
// runs, the kernels that read them queued behind an event. An engine.StepTrace
// (trace_gpu.go; BenchmarkGPUInsertSteps) times every step of a batch with
// CUDA events and counts its host synchronizations. Out of device memory, a batch
// returns an error matching gpu.ErrOutOfMemory and the tree is as it was:
// an insert writes only fresh records until its node round, whose
// allocations come first; a delete reserves its bounded allocations and
// scratch before its first change; a build writes a new tree beside the
// old one.
//
// Check verifies every invariant of the layout (store.check); the tests
// run it after every batch on both engines and compare the engines'
// layouts word for word.
package art
