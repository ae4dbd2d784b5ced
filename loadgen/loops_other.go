//go:build !linux

package loadgen

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// loopsSupported reports whether this platform has the event-loop driver
// (Linux only: it waits in epoll_wait).
const loopsSupported = false

// startLoops is never called here (Config.useLoops is false, and a Config
// asking for Loops fails its check); it reports the same.
func startLoops(context.Context, context.CancelFunc, *Config, *Zipf, []byte, time.Time, *atomic.Int32) ([]*worker, func() error, error) {
	return nil, nil, errors.New("loadgen: driver loops: event loops need Linux")
}
