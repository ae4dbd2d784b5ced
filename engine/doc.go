// Package engine is the contract every warpkv index engine follows: how a
// device option is resolved, what an engine reports about itself, and how
// the time of a batch is broken down.
//
// An engine package (hashindex, btree, mpt, art, stm) exposes one facade
// type, opened by the package's Open from an Options struct whose Device
// field is a device option and whose GPU field, when set, is an already
// open device:
//
//	t, err := btree.Open(btree.Options{Device: "auto"})
//	defer t.Close()
//	fmt.Println(t.Backend(), t.Reason())
//	... batches ...
//	fmt.Println(t.LastBatch())
//
// Every facade embeds Facade, which holds what they share: the placement,
// the lock (batches that change the engine one at a time, reads
// concurrently where the engine allows), the closed state, the timings of
// the latest batch, and Close; after Close every call returns an error
// matching ErrClosed. The facade satisfies Reporter. Every operation that
// can fail returns an error; long calls have a ...Context form that stops
// between chunks of ContextChunk keys and leaves the structure as before
// the call. Behind the facade sits an internal interface with two
// implementations, a CPU one (x.go) and a GPU one (x_gpu.go launching the
// kernels of x.cu), that give the same answers for the same batches;
// internal/enginetest runs the same random batch sequences through a
// reference model and both implementations and compares every batch.
//
// Device options have one meaning everywhere (see Place): "" is the value of
// WARPKV_DEVICE, else "auto"; "auto" is the first usable GPU, else the CPU
// engine with the reason; "cpu" is the CPU engine; "gpu" and "gpu:N" are a
// GPU or an error that names why none is usable. PlaceAll resolves the
// same options for an engine sharded over every usable GPU (the server's
// index).
package engine
