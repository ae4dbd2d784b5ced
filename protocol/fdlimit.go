package protocol

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// warnEvery is the least time between two log lines about the same
// recurring condition (running out of file descriptors).
const warnEvery = time.Minute

// rateLimit lets a recurring warning through at most once per warnEvery.
// The zero value allows the first one.
type rateLimit struct{ last atomic.Int64 }

// allow reports whether a line may be logged at now, and if so records it.
func (r *rateLimit) allow(now time.Time) bool {
	last := r.last.Load()
	if last != 0 && now.UnixNano()-last < int64(warnEvery) {
		return false
	}
	return r.last.CompareAndSwap(last, now.UnixNano())
}

// spareFD is a file descriptor held in reserve so that, when the process
// runs out of descriptors, one can be freed to accept a waiting
// connection and refuse it with a reply instead of leaving it hanging.
type spareFD struct{ f *os.File }

// openSpareFD opens the reserve descriptor (/dev/null); a failure leaves
// none, and running out of descriptors then only retries.
func openSpareFD() *spareFD {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return &spareFD{}
	}
	return &spareFD{f: f}
}

func (s *spareFD) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// isFDExhausted reports whether an accept error is the process (EMFILE)
// or system (ENFILE) running out of file descriptors.
func isFDExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// acceptProbe is how long acceptOverLimit waits for a pending connection
// once it has freed the spare descriptor, and then before the next accept
// (which fails at once while descriptors are exhausted, whether a
// connection waits or not).
const acceptProbe = 20 * time.Millisecond

// acceptOverLimit handles an accept that failed for lack of file
// descriptors as memcached handles a connection over its limit: it frees
// the spare descriptor, accepts the waiting connection (if one comes within
// acceptProbe), answers "ERROR Too many open connections", closes it and
// takes the spare back. The warning is logged at most once a minute, not
// once per refused client. It reports false when it cannot free a
// descriptor (no spare, or a listener without deadlines): the caller
// retries later.
func (s *Server) acceptOverLimit(ln net.Listener, spare *spareFD) bool {
	dl, ok := ln.(interface{ SetDeadline(time.Time) error })
	if spare.f == nil {
		*spare = *openSpareFD() // a connection may have closed since it was lost
	}
	if spare.f == nil || !ok {
		return false
	}
	if s.fdWarn.allow(time.Now()) {
		s.log.Warn("protocol: out of file descriptors; refusing new connections with \"ERROR Too many open connections\" (raise the open-file limit, ulimit -n, or lower -c)",
			"curr_connections", s.stats.currConns.Load())
	}
	spare.close()
	dl.SetDeadline(time.Now().Add(acceptProbe))
	nc, err := ln.Accept()
	dl.SetDeadline(time.Time{})
	if err != nil {
		// Nothing was waiting (or the listener closed: the caller's next
		// accept says so): do not spin on failing accepts.
		*spare = *openSpareFD()
		time.Sleep(acceptProbe)
		return true
	}
	s.reject(nc)            // closes nc, freeing the descriptor
	*spare = *openSpareFD() // takes it back
	return true
}
