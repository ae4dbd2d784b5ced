//go:build !linux

package par

import "sync/atomic"

// osParkSupported reports whether this system can park a Pool's workers in
// the kernel (futexes) rather than in Go's scheduler: not here.
const osParkSupported = false

func futexWait(*atomic.Uint32, uint32) { panic("par: futexWait without futexes") }

func futexWake(*atomic.Uint32) { panic("par: futexWake without futexes") }
