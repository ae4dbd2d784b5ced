package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
)

// limitGoMemory sets the Go runtime's soft memory limit to the live heap
// of a started server, plus gcSlack, plus heldMax: the most the server's
// read buffers may hold for half-received values: -m, inside which they
// count past one largest request (the item store gives back pages for
// them, see server.heldValues), plus that request (-I, or the 1 MiB
// longest get line, plus 64 KiB). boundGCSlack's GOGC alone lets the heap grow by as
// much as its live data again, so 56 MB of held values at -m 64 could
// leave as much garbage on top, past the README's formula; the limit makes
// the collector run instead. A GOMEMLIMIT set in the environment is left
// alone. Call it after boundGCSlack, once the server is ready.
func limitGoMemory(log *slog.Logger, heldMax int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := int64(ms.HeapAlloc) + gcSlack + heldMax
	debug.SetMemoryLimit(limit)
	log.Debug("go memory limit", "live_heap", ms.HeapAlloc, "limit", limit)
}
