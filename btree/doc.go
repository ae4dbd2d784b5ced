// Package btree is CUBPT: a B+ tree of uint64 keys to uint64 values that is
// built and updated in batches, on a GPU or the CPU:
//
//	t, err := btree.Open(btree.Options{Device: "auto"}) // auto, cpu, gpu, gpu:N
//	defer t.Close()
//	err = t.Insert([]uint64{3, 1, 2}, []uint64{30, 10, 20})
//	vals, found, err := t.Get([]uint64{2, 9})
//	keys, vals, err := t.Range(1, 3, 0) // half-open [1, 3); limit <= 0: none
//	for k, v := range t.Scan(1, 3) { ... }
//	err = t.InsertContext(ctx, keys, vals) // stops between chunks, undone
//
// Batches of range queries answer into a Result reused call after call;
// one from NewResult is pinned on the GPU engine, so the device writes the
// answers into it with no host copy. Lookups from a pinned Staging move
// the keys and answers by DMA:
//
//	r := t.NewResult()
//	defer r.Free()
//	r, err = t.RangesInto(r, los, his, 0) // query i: r.Keys[r.Offsets[i]:r.Offsets[i+1]]
//	r, err = t.RangesDescInto(r, los, his, 10) // the same ranges, largest key first: the 10 largest
//	st, err := t.NewStaging(n)
//	defer st.Free()
//	copy(st.Keys, keys)
//	err = t.LookupStaged(st, len(keys)) // st.Values, st.Found (1 where found)
//
// After Close every call returns an error matching engine.ErrClosed.
//
// The batches run in data-parallel phases without locks inside a batch.
// Two engines share the node layout: the CPU engine (goroutines)
// and the GPU engine (the *_gpu.go files; kernels in btree.cu and the
// files it includes, one per operation, around btree.cuh), chosen by
// Options.Device or Options.GPU as engine.Place does (no option:
// WARPKV_DEVICE, else a GPU when one is usable). Both sit behind the
// treeEngine interface (engine.go): cpu.go and tree_gpu.go.
//
// # GPU engine
//
// The node arrays live in device memory, flat (node id owns key and slot
// words [id*order, (id+1)*order)), and equal the CPU engine's word for
// word after the same sequence of batches: the GPU engine mirrors the CPU
// engine's algorithm, piece layout, node id allocation, leaf chain and
// rebuild rule. Build uploads the batch (through pinned staging buffers
// when large), sorts it on the device (prim radix sort, stable), keeps the
// last of each run of equal keys (a flag kernel and prim select), then
// writes the leaves one thread per key and each upper level one thread per
// child with the closed form below. A large batch with values (Build,
// Insert) uploads its keys, then sorts (key, batch position) pairs while
// a goroutine copies the values through the pinned ring on a second
// stream, and gathers the kept positions' values as late as it can (Build:
// after the dedupe; Insert: after locating the keys' leaves), so the
// values' host copy and transfer overlap the sort, the dedupe and the
// locate. Get
// runs one thread per key from the root down; a large Get is pipelined in
// chunks over two streams (upload, kernel and download of one chunk
// overlapping the other's), both transfers through pinned staging
// buffers. Ranges and Range run in two passes with one descent per query:
// bt_range_start (a thread per query) descends to the first pair, keeps
// where it is and counts the pairs; after prim's exclusive scan of the
// counts, bt_range_copy (a warp per query) copies them along the leaf
// chain with coalesced loads and stores (ranges.cu). The offsets and pairs
// come back through the pinned staging buffers, or by DMA straight into a
// pinned Result (NewResult).
//
// Insert (insert_gpu.go, with sort_gpu.go, locate_gpu.go and
// propagate_gpu.go; kernels in locate.cu, insert.cu and propagate.cu) runs the phases below on the
// device. The host reads back a few totals, never the tree, twice in a
// call (besides the call's final synchronization): once before the
// leaves change (the keys kept by the dedupe, the touched leaves, their
// entries, pieces and new nodes, which size the reservation and the
// leaves' launches) and once after the last parent level (the root's
// pieces, the nodes in use). Counts that only size launches stay on the
// device: those kernels run over a bound known to the host (the batch's
// keys; the live leaves or internal nodes) and read the count from device
// memory, the elements past it made neutral (a last run of NIL in the
// reductions, zeros in the scans):
//
//  1. upload, sort and dedupe the batch as Build does (the values'
//     upload still running);
//  2. bt_locate, one thread per key: its leaf, its position there, and
//     whether it is new;
//  3. group by leaf: prim reduce-by-key of the (leaf, packed count) pairs,
//     giving each touched leaf's batch keys and new keys;
//  4. pass 1, bt_leaf_sizes, one thread per touched leaf: merged size,
//     pieces and new nodes; exclusive scans place the merged entries, the
//     pieces and the new contiguous nodes; bt_max_hi finds the most batch
//     keys of one leaf (one atomic per warp);
//  5. all the memory the rest may need is reserved here (node capacity for
//     an upper bound of the new nodes, every scratch buffer), so running
//     out of device memory fails before the tree changes;
//  6. pass 2, after the values' upload is joined and gathered: when the
//     order is at most 256 and no leaf gets more than 2048 batch keys,
//     bt_merge_leaves_E (a warp per touched leaf, E = 1, 2, 4 or 8 old
//     entries a lane by the order) reads the leaf's old entries and its
//     batch keys into registers, ranks each old entry by comparing it
//     with the batch keys broadcast by shuffles, and writes every kept
//     old entry and every batch key of the leaf straight to its piece and
//     slot, with the pieces' heads, links and changes; otherwise (a skewed batch, a
//     larger order) bt_merge_new (one thread per batch key) and
//     bt_stage_old (one thread per old entry) stage every entry at its
//     merged rank (a binary search in the other list), then
//     bt_write_leaves (one thread per merged entry) writes the pieces; the
//     kernels over flattened entries (here and in step 7) find an entry's
//     touched node with one search per block and a short search per
//     thread (merge-path style) instead of a search over all of them;
//  7. propagation, one level at a time with no readback: each level's
//     counts (touched nodes, replacements, staged and old entries, first
//     new node) are in a level header in device memory that the kernels
//     read (btree.cuh's HDR_*), and the new nodes are taken from a device
//     counter of nodes in use in level order, so their ids are the CPU
//     engine's: bt_parent_of (over a bound of the touched children),
//     reduce-by-key by parent, bt_parent_sizes and scans over a bound of
//     the parents (count and place), bt_level_totals (one thread: the
//     header, the node counter, a flag when a level would pass the
//     reserved nodes or buffers), bt_zero_nodes (the new nodes),
//     bt_stage_repl and bt_stage_keep (one thread per replacement and per
//     kept entry), bt_write_internal (one thread per entry); then one copy
//     of the results into pinned memory and one synchronization, with the
//     values' scatter (from Go slices) queued before it. The root's pieces
//     get new levels (bt_level_list, bt_level). After a delete a root with
//     one child is collapsed (an insert never leaves one).
//
// Unlike the CPU engine the propagation does not drop unchanged nodes
// from a level's changes: an unchanged node rewrites its parent's entry
// with the same words and adds no node, so the arrays stay equal.
//
// Delete runs the same phases: bt_stage_old compacts each touched leaf's
// kept entries, bt_write_kept writes them back in place, bt_delete_leaves
// frees the emptied leaves, and the bt_unlink_* kernels (a scan numbers the
// runs of emptied leaves adjacent in the chain) unlink them with the CPU
// engine's links. When the tree is underfull it is rebuilt on the device:
// the leaves are listed in key order level by level (bt_node_counts, a
// scan, bt_gather), their pairs gathered, and written as Build does.
// Tree.LastBatch gives each batch's upload, sort, work and download times,
// measured with CUDA events; an engine.StepTrace (for benchmarks:
// BenchmarkGPUInsertSteps) times every step of a batch the same way and
// counts its host synchronizations.
//
// # Layout
//
// The tree is one array of fixed-size nodes, grown by segments of 1024 nodes
// (store.go). A node of order m has m key slots, m child/record slots, a
// kind (leaf, internal, free), a parent, a count, and for leaves the next and
// previous leaf in key order. Every array is a pointer-free slice (uint64,
// uint32, uint8), so the garbage collector never scans the tree. Each key of
// an internal node is the maximum key of the child subtree in the same slot
// (so an internal node of m keys has m children, not m+1). Node ids are
// uint32 indices into the array.
//
// # Phases
//
// Build sorts the batch (stable: the last occurrence of a key wins), fills
// leaves to the fill factor with a closed formula (key position -> leaf,
// slot) and builds each upper level bottom-up from the max keys of the level
// below with the same formula. Insert is the paper's batch insertion: sort
// the batch, find each key's leaf, group the keys by leaf (run-length
// encoding), merge each touched leaf's old and new keys (new values win),
// split a leaf that overflows into pieces of at most the fill factor, the
// first piece in place and the others in new contiguous nodes (counted in a
// first pass, placed by an exclusive scan, written in a second pass), then
// propagate the changed max keys and new children to the parents level by
// level, making a new root when the root splits. Every output slot has one
// writer, so the leaves (and the nodes of a level) are processed in parallel
// without locks.
//
// # Keys past the right spine
//
// A key greater than every key in the tree descends along the right spine
// (at each internal node it takes the last child) and is appended to the
// rightmost leaf; the level-by-level propagation then raises the max keys of
// the right spine to the new maximum. Keys 0 and 2^64-1 are ordinary keys;
// no key value is reserved.
//
// # Deletes and underfull nodes
//
// Delete uses the same phases: a touched leaf drops the batch's keys; a leaf
// that becomes empty is freed and unlinked from the leaf chain; an internal
// node whose children are all freed is freed; changed max keys propagate
// upward; a root with one child is replaced by the child. Non-empty nodes
// are never merged: they may be underfull (down to one key). When the keys
// fill fewer than a quarter of the live leaves' fill capacity, or more than
// half of the allocated nodes are free, Delete rebuilds the tree with Build
// from the leaf chain (cost O(n), amortized over the deletes that caused
// it). Inserts never free nodes.
//
// # Order
//
// Options.Order defaults to 64 on the CPU engine (a node's keys are eight
// cache lines). The paper uses 512 on the GPU; the GPU engine's default is
// to be chosen by measurement. Leaves and internal nodes are filled to
// Order - Order/8 entries by Build and by splits, leaving room for inserts.
//
// A Tree is safe for concurrent use: batches that change it are serialized
// with each other and with readers; readers (Get, Range, Ranges, Len,
// Check) run concurrently.
package btree
