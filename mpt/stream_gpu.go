package mpt

import (
	"errors"
	"sort"
	"sync"

	"warpkv/gpu"
)

// Transfers of the GPU engine go through two pinned host chunks: while one
// chunk's copy runs on the stream, all cores pack (or unpack) the other,
// so the host copy and the DMA overlap and no large pinned buffer is ever
// allocated inside a batch.

// streamChunk is the size of each pinned chunk; packPiece is the share of
// a chunk one goroutine packs or unpacks.
const (
	streamChunk = 32 << 20
	packPiece   = 1 << 20
)

// streamer owns the two pinned chunks and the events that say when each
// chunk's last copy is done.
type streamer struct {
	buf  [2]*gpu.HostBuffer[byte]
	ev   [2]*gpu.Event
	busy [2]bool
	next int
}

// newStreamer allocates the pinned chunks (milliseconds: once per trie).
func newStreamer(d *gpu.Device) (*streamer, error) {
	st := &streamer{}
	for i := range st.buf {
		b, err := gpu.AllocHost[byte](d, streamChunk)
		if err != nil {
			return nil, errors.Join(err, st.close())
		}
		st.buf[i] = b
		e, err := d.NewEvent()
		if err != nil {
			return nil, errors.Join(err, st.close())
		}
		st.ev[i] = e
	}
	return st, nil
}

// close frees the chunks and events.
func (st *streamer) close() error {
	var err error
	for i := range st.buf {
		if st.ev[i] != nil {
			err = errors.Join(err, st.ev[i].Synchronize(), st.ev[i].Close())
		}
		if st.buf[i] != nil {
			err = errors.Join(err, st.buf[i].Free())
		}
	}
	return err
}

// take returns the next chunk once its previous copy is done.
func (st *streamer) take() (int, []byte, error) {
	i := st.next
	st.next ^= 1
	if st.busy[i] {
		if err := st.ev[i].Synchronize(); err != nil {
			return 0, nil, err
		}
		st.busy[i] = false
	}
	return i, st.buf[i].Slice(), nil
}

// queued marks chunk i as in use by the copy just queued on s.
func (st *streamer) queued(i int, s *gpu.Stream) error {
	st.busy[i] = true
	return st.ev[i].Record(s)
}

// upload copies the logical byte stream [0, total), produced by fill, to
// dst[off, off+total) on s. fill(p, pos) writes stream bytes [pos,
// pos+len(p)) into p; it runs on several goroutines for disjoint ranges.
// The copies are queued on s; the chunks are reused only after their copy
// finished, and the caller need not synchronize before reading the
// source data again (upload returns after the last chunk is packed).
func (st *streamer) upload(s *gpu.Stream, dst *gpu.Buffer[byte], off, total int, fill func(p []byte, pos int)) error {
	for pos := 0; pos < total; {
		i, buf, err := st.take()
		if err != nil {
			return err
		}
		n := min(streamChunk, total-pos)
		p := buf[:n]
		pieces(n, func(lo, hi int) { fill(p[lo:hi], pos+lo) })
		if err := dst.Write(s, off+pos, p); err != nil {
			return err
		}
		if err := st.queued(i, s); err != nil {
			return err
		}
		pos += n
	}
	return nil
}

// download copies src[0, len(dst)) into dst through the chunks: the read
// of chunk k+1 is queued before chunk k is unpacked on all cores.
func (st *streamer) download(s *gpu.Stream, src *gpu.Buffer[byte], dst []byte) error {
	total := len(dst)
	type pending struct {
		i, pos, n int
	}
	var prev *pending
	drain := func() error {
		if prev == nil {
			return nil
		}
		if err := st.ev[prev.i].Synchronize(); err != nil {
			return err
		}
		st.busy[prev.i] = false
		b := st.buf[prev.i].Slice()[:prev.n]
		out := dst[prev.pos : prev.pos+prev.n]
		pieces(prev.n, func(lo, hi int) { copy(out[lo:hi], b[lo:hi]) })
		prev = nil
		return nil
	}
	for pos := 0; pos < total; {
		i, buf, err := st.take()
		if err != nil {
			return err
		}
		n := min(streamChunk, total-pos)
		if err := src.Read(s, pos, buf[:n]); err != nil {
			return err
		}
		if err := st.queued(i, s); err != nil {
			return err
		}
		if err := drain(); err != nil {
			return err
		}
		prev = &pending{i, pos, n}
		pos += n
	}
	return drain()
}

// pieces runs fn over [0, n) in packPiece ranges on goroutines.
func pieces(n int, fn func(lo, hi int)) { piecesOf(n, packPiece, fn) }

// piecesOf runs fn over [0, n) in ranges of grain on goroutines (on the
// caller's alone when n <= grain).
func piecesOf(n, grain int, fn func(lo, hi int)) {
	if n <= grain {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += grain {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+grain, n))
	}
	wg.Wait()
}

// fillConcat returns a fill function for the concatenation of parts,
// whose prefix sums are offs (offs[i] = bytes before part i, offs[len] =
// total).
func fillConcat(parts [][]byte, offs []int64) func(p []byte, pos int) {
	return func(p []byte, pos int) {
		i := sort.Search(len(parts), func(i int) bool { return offs[i+1] > int64(pos) })
		for w := 0; w < len(p) && i < len(parts); i++ {
			src := parts[i][int64(pos+w)-offs[i]:]
			w += copy(p[w:], src)
		}
	}
}

// fillStrided returns a fill function for keys laid out at a fixed stride,
// each zero-padded.
func fillStrided(keys [][]byte, stride int) func(p []byte, pos int) {
	return func(p []byte, pos int) {
		for w := 0; w < len(p); {
			i, in := (pos+w)/stride, (pos+w)%stride
			n := min(stride-in, len(p)-w)
			dst := p[w : w+n]
			k := keys[i]
			c := 0
			if in < len(k) {
				c = copy(dst, k[in:])
			}
			clear(dst[c:])
			w += n
		}
	}
}
