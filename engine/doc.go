// Package engine is the contract every warpkv index engine follows: how a
// device option is resolved, what an engine reports about itself, and how
// the time of a batch is broken down.
//
// An engine package (hashindex, btree, mpt, art, stm) exposes one facade
// type, opened from an Options struct whose Device field is a device
// option and whose GPU field, when set, is an already open device:
//
//	t, err := btree.Open(btree.Options{Device: "auto"})
//	defer t.Close()
//	fmt.Println(t.Backend(), t.Reason())
//	... batches ...
//	fmt.Println(t.LastBatch())
//
// The facade satisfies Reporter. Behind it sits an internal interface with
// two implementations, a CPU one (x.go) and a GPU one (x_gpu.go launching
// the kernels of x.cu), that give the same answers for the same batches;
// internal/enginetest runs the same random batch sequences through a
// reference model and both implementations and compares every batch.
//
// Device options have one meaning everywhere (see Place): "" is the value of
// WARPKV_DEVICE, else "auto"; "auto" is the first usable GPU, else the CPU
// engine with the reason; "cpu" is the CPU engine; "gpu" and "gpu:N" are a
// GPU or an error that names why none is usable.
package engine
