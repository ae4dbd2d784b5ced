package art

// Iter walks the keys of a Tree in order, fetching them a page at a time
// with range queries (on the GPU engine each page is one query on the
// device). It sees the tree as it is at each fetch: a change between pages
// shows in later pages; keys come out strictly ordered either way.
//
//	it := t.Ascend([]byte("m"))
//	for it.Next() {
//		fmt.Println(string(it.Key()), it.Value())
//	}
//	if err := it.Err(); err != nil { ... }
type Iter struct {
	t     *Tree
	desc  bool
	bound []byte // ascending: the next page's lower bound; descending: its upper bound (nil: none)
	asked int    // the size the current page was asked for
	page  *Result
	i     int
	size  int
	done  bool
	key   []byte
	val   uint64
	err   error
}

// Page sizes of an iterator: the first page is small (a seek followed by a
// few keys is cheap), later ones grow up to iterMaxPage.
const (
	iterFirstPage = 64
	iterMaxPage   = 1 << 14
)

// Ascend returns an iterator over the keys >= from in ascending order
// (from nil or empty: all keys).
func (t *Tree) Ascend(from []byte) *Iter {
	it := &Iter{t: t}
	it.Seek(from)
	return it
}

// Descend returns an iterator over the keys <= from in descending order
// (from nil: all keys).
func (t *Tree) Descend(from []byte) *Iter {
	it := &Iter{t: t, desc: true}
	it.Seek(from)
	return it
}

// Seek repositions the iterator: ascending, before the smallest key >= key;
// descending, before the largest key <= key (nil: the largest key).
func (it *Iter) Seek(key []byte) {
	it.page, it.i, it.size, it.done, it.err = nil, 0, iterFirstPage, false, nil
	switch {
	case !it.desc:
		it.bound = append([]byte{}, key...)
	case key == nil:
		it.bound = nil
	default:
		it.bound = append(append([]byte{}, key...), 0) // keys < key+0x00 are the keys <= key
	}
}

// Next moves to the next key and reports whether there is one.
func (it *Iter) Next() bool {
	if it.done {
		return false
	}
	if it.page == nil || it.i >= len(it.page.Values) {
		if it.page != nil && len(it.page.Values) < it.asked {
			it.done = true // the last page was short: nothing more
			return false
		}
		if it.page != nil {
			it.size = min(2*it.size, iterMaxPage)
		}
		var err error
		it.asked = it.size
		if it.desc {
			q := Query{Lo: nil, Hi: it.bound}
			it.page, err = it.t.RangesDesc([]Query{q}, it.size)
		} else {
			it.page, err = it.t.Ranges([]Query{{Lo: it.bound}}, it.size)
		}
		if err != nil {
			it.err, it.done = err, true
			return false
		}
		it.i = 0
		if len(it.page.Values) == 0 {
			it.done = true
			return false
		}
		last := it.page.Keys.At(len(it.page.Values) - 1)
		if it.desc {
			it.bound = append([]byte{}, last...)
		} else if b, ok := successorBound(last); ok {
			it.bound = b
		} else {
			it.asked = len(it.page.Values) + 1 // no key is larger: end after this page, as after a short one
		}
	}
	it.key, it.val = it.page.Keys.At(it.i), it.page.Values[it.i]
	it.i++
	return true
}

// Key is the current key (valid until the next call of Next).
func (it *Iter) Key() []byte { return it.key }

// Value is the current value.
func (it *Iter) Value() uint64 { return it.val }

// Err is the error that ended the iteration early, if any.
func (it *Iter) Err() error { return it.err }
