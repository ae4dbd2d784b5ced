// Package gpu is warpkv's CUDA runtime: the parts of the CUDA driver API
// and NVRTC that warpkv uses, loaded at run time through purego (the
// module builds with CGO_ENABLED=0, and a binary runs without CUDA), and
// the device plumbing every engine shares.
//
//   - Devices (device.go, select.go): Count, List, Available (can warpkv's
//     kernels run, and if not, why), Open, Choose (the device options
//     auto, cpu, gpu, gpu:N; WARPKV_DEVICE by default), Device.Do for a
//     sequence of calls on the device's context.
//   - Memory (memory.go): Buffer (typed device memory), HostBuffer (pinned
//     host memory); running out of device memory is ErrOutOfMemory.
//   - Memory that grows in place (vmm.go): Growable, a reserved range of
//     device addresses backed by more memory as it grows (CUDA's virtual
//     memory management), its address and contents kept; ErrNoVMM where
//     the device or driver lacks it. Spare memory (spare.go): a freed
//     Growable's physical memory kept for the next growth, since memory
//     returned to the driver is cleared by the copy engines, which halves
//     the copies beside it for 10-20 ms.
//   - Streams and events (stream.go): ordering, overlap and device timing.
//   - Kernels (program.go, module.go, launch.go): a Program is a .cu source
//     with named headers (the shared ones under cuda/, e.g.
//     "warpkv/types.cuh", "warpkv/lookback.cuh", "warpkv/keccak.cuh",
//     "warpkv/order.cuh") and
//     the constants Go owns passed as defines (Def); Device.Load compiles it
//     through an on-disk cache keyed by all of them and loads it once per
//     device; Function.Launch runs a kernel with typed arguments.
//   - The transfer pipeline (pipeline.go, pipeline_run.go): a ring of pinned
//     chunks with events that moves data between Go memory and the device
//     with parallel pack and unpack on the host (UploadStaged,
//     DownloadStaged, UploadFunc, Drain), and Run, which schedules a
//     batch's chunks over three streams (transfers in, kernels, transfers
//     out).
//   - The scratch pool (pool.go): an engine's named device and pinned
//     buffers, grown with headroom and reserved before a batch uses them,
//     so that running out of memory fails before the batch changed anything.
//
// A CUDA context is current per OS thread: every driver call runs on a
// locked OS thread inside one method call, so any goroutine may use any
// Device, and a Device is safe for concurrent use. Streams, pipelines and
// pools are not: an engine serializes its batches.
package gpu
