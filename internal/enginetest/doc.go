// Package enginetest is the differential harness every engine's tests run
// on: the same random batch sequences go to a reference model and to each
// implementation of an engine (its CPU and GPU engines), and every batch's
// outputs are compared with the model's, with the engines' invariants
// checked after every batch.
//
// A test names its batch type B, its output type O and its model M, lists
// its targets (one per implementation) and its cases (generators of batch
// sequences), and calls Run:
//
//	enginetest.Run(t, enginetest.Suite[Batch, Out, *model]{
//		NewModel: newModel,
//		Targets:  []enginetest.Target[Batch, Out]{cpuTarget, gpuTarget},
//	}, cases...)
//
// GPU targets get the tests' shared device (internal/gputest); where none is
// usable they are left out with a log line, or fail the test under
// WARPKV_REQUIRE_GPU=1. Each case draws from a fresh seed that it logs;
// WARPKV_TEST_SEED=N replays one.
package enginetest
