package art

import (
	"errors"

	"github.com/warpkv/warpkv/internal/par"
)

// prefixer is an engine that answers prefix scans from the prefixes
// themselves, without the []Query of prefixQueries (the GPU engine packs
// each prefix and its end straight into pinned memory). It checks the
// prefixes' lengths itself, returning a *boundErr unwrapped.
type prefixer interface {
	prefix(into *Result, ps [][]byte, limit int) (*Result, error)
}

// queryBatch is a batch of range queries as the GPU engine packs them: n
// queries, and pack packs queries [a, b) into pinned memory from host (as
// packQueries does), failing with a *boundErr (its index within [a, b))
// at the first bound longer than a key can be.
type queryBatch struct {
	n    int
	pack func(a, b, workers int, host func(n int) ([]byte, error)) (queryPack, []byte, error)
}

// rangesBatch is a batch of range queries qs.
func rangesBatch(qs []Query) queryBatch {
	return queryBatch{len(qs), func(a, b, workers int, host func(n int) ([]byte, error)) (queryPack, []byte, error) {
		return packQueries(qs[a:b], workers, host)
	}}
}

// prefixBatch is the batch of range queries of prefix scans ps, each
// [p, prefixEnd(p)) (prefixQueries).
func prefixBatch(ps [][]byte) queryBatch {
	return queryBatch{len(ps), func(a, b, workers int, host func(n int) ([]byte, error)) (queryPack, []byte, error) {
		return packPrefixes(ps[a:b], workers, host)
	}}
}

// prefix answers prefix scans as ranges answers prefixQueries(ps), from
// ps. Cost: as ranges, its packing two parallel passes over the prefixes
// with no allocation per prefix or query.
func (g *gpuEngine) prefix(into *Result, ps [][]byte, limit int) (*Result, error) {
	return g.answer(into, prefixBatch(ps), limit, false)
}

// prefixEndLen is the length of prefixEnd(p): p without its trailing 0xff
// bytes (0: no key is past every key starting with p).
func prefixEndLen(p []byte) int {
	i := len(p)
	for i > 0 && p[i-1] == 0xff {
		i--
	}
	return i
}

// packPrefixes packs the queries of prefix scans ps, [p, prefixEnd(p))
// each (a nil or empty p, or one of 0xff bytes alone, has no upper
// bound), into pinned memory from host (at least n bytes, 8-byte
// aligned) on the workers, in the layout of packQueries: the bytes
// packQueries(prefixQueries(ps)) packs. A prefix longer than a key fails
// it with a *boundErr naming the first. Cost: two parallel passes over
// the prefixes (sizing, then copying each prefix and its end).
func packPrefixes(ps [][]byte, workers int, host func(n int) ([]byte, error)) (queryPack, []byte, error) {
	Q := len(ps)
	if Q == 0 {
		return queryPack{}, nil, errors.New("no prefixes to pack")
	}
	p, long, err := planParts(Q, workers, func(a, b int) (lo, hi, long int) {
		long = -1
		for j, x := range ps[a:b] {
			lo += len(x)
			hi += prefixEndLen(x)
			if long < 0 && len(x) > MaxKeyLen {
				long = a + j
			}
		}
		return lo, hi, long
	})
	if long >= 0 {
		return p, nil, &boundErr{long, len(ps[long])}
	}
	if err != nil {
		return p, nil, err
	}
	h, err := host(p.l.end)
	if err != nil {
		return p, nil, err
	}
	l := p.l
	loOffs, hiOffs := u32View(h[:l.hiOffs], Q+1), u32View(h[l.hiOffs:l.has], Q+1)
	flags, loData, hiData := h[l.has:l.has+Q], h[l.loData:l.hiData], h[l.hiData:l.end]
	par.Shared().Ranges(Q, p.parts, func(i, a, b int) {
		fillPrefixes(ps[a:b], loOffs[a:b], hiOffs[a:b], flags[a:b], loData[p.loAt[i]:p.loAt[i+1]], hiData[p.hiAt[i]:p.hiAt[i+1]],
			uint32(p.loAt[i]), uint32(p.hiAt[i]))
	})
	loOffs[Q], hiOffs[Q] = uint32(p.loAt[p.parts]), uint32(p.hiAt[p.parts])
	return p, h, nil
}

// fillPrefixes packs one part's prefix scans: their offsets (from lo0 and
// hi0), flags (1: an upper bound) and bound bytes (loData and hiData,
// exactly their size): each prefix, and its end (the prefix without its
// trailing 0xff bytes, the last byte left incremented).
func fillPrefixes(ps [][]byte, loOffs, hiOffs []uint32, flags, loData, hiData []byte, lo0, hi0 uint32) {
	lo, hi := 0, 0
	loOffs, hiOffs, flags = loOffs[:len(ps)], hiOffs[:len(ps)], flags[:len(ps)]
	for j, x := range ps {
		loOffs[j], hiOffs[j] = lo0+uint32(lo), hi0+uint32(hi)
		lo += putBound(loData[lo:], x)
		n := prefixEndLen(x)
		if n == 0 {
			flags[j] = 0
			continue
		}
		copy(hiData[hi:hi+n], x[:n])
		hiData[hi+n-1]++
		hi += n
		flags[j] = 1
	}
}
