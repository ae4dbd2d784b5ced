package bench

import (
	"fmt"
	"io"
	"time"
)

// Progress writes one line per step of a long benchmark run, prefixed with
// the seconds elapsed since the progress started, e.g.
// "[  12.3s] gpu: sort pairs u64/u32, 134.2M items". A nil *Progress or one
// with a nil writer writes nothing. It is not safe for concurrent use.
type Progress struct {
	w     io.Writer
	start time.Time
}

// NewProgress returns a progress writer on w (typically os.Stderr); nil w
// discards the lines.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w, start: time.Now()}
}

// Printf writes one progress line; a trailing newline is added. Write
// errors are ignored: progress is advisory.
func (p *Progress) Printf(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "[%7.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}
