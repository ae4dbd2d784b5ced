//go:build !linux

package protocol

// Without epoll every connection is served on its own goroutine.

// loopConn is empty where there are no event loops.
type loopConn struct{}

// loop is absent where there are no event loops.
type loop struct{}

// loopsAvailable reports whether this platform has event loops.
const loopsAvailable = false

// adopt reports false: connections are served on goroutines.
func (s *Server) adopt(c *conn) bool { return false }

// startLoops starts nothing.
func (s *Server) startLoops() {}

// wakeLoops does nothing.
func (s *Server) wakeLoops() {}

// shutdownSocket does nothing: every connection has a net.Conn.
func shutdownSocket(c *conn) {}

// trimLoops does nothing: there are no loops to trim.
func (s *Server) trimLoops() {}
