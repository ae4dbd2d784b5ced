// Package hashindex is the Mega-KV cuckoo hash index: a table of 8-cell
// buckets mapping 32-bit key signatures to 32-bit item locations, updated
// and searched in batches, on a GPU or on the CPU with bit-identical tables.
//
//	ix, err := hashindex.Open(hashindex.Options{Buckets: 1 << 20, Device: "auto"})
//	defer ix.Close()
//	dropped, err := ix.Insert(hashes, locations, nil)
//	err = ix.Search(hashes, out) // out[i]: a location, or NotFound
//	err = ix.Delete(hashes, locations, found)
//
// After Close every call returns an error matching engine.ErrClosed. A
// call is bounded by MaxBatch jobs and runs whole (it takes no context: a
// displacement chain's drops cannot be undone); callers that want to stop
// a bulk load stop between their calls.
//
// A key is represented by a 64-bit hash (Hash) from which the index takes
// the signature (high 32 bits) and two buckets in one partition of the
// table. Search checks both buckets; Insert overwrites the key's cell, or
// takes the free cell nearest the key's preferred cell, or displaces
// entries cuckoo-style up to a bound; Delete clears the cell holding both
// the signature and the location. Every location the index stops holding
// through an insert is reported back (Dropped) so the item store can free
// it. Signatures are not keys: two keys with the same signature and bucket
// pair share a cell, so callers compare the key stored at a location.
//
// Inserts and deletes are applied per partition in batch order (one GPU
// processing unit or one goroutine per partition at a time), partitions in
// parallel, so the result is deterministic and both engines produce the
// same table word for word.
//
// Two engines sit behind Index (the indexEngine interface, engine.go): the
// CPU engine (cuckoo.go, goroutines) and the GPU engine (cuckoo_gpu.go,
// kernels in hashindex.cu and group.cu, loaded by hashindex_gpu.go; host
// calls pipelined through gpu.Pipeline in stage_gpu.go), chosen by
// Options.Device or Options.GPU as engine.Place does. Index implements
// engine.Reporter (Backend, Reason, LastBatch, Close); Stats counts the
// jobs of the host-level calls. The device-level calls (Dev*, dev_gpu.go)
// work on jobs already in device memory.
package hashindex
