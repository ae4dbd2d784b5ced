package itemstore

import "sort"

// chunkAlign is the alignment of chunk sizes (and so of every item header).
const chunkAlign = 8

// align8 rounds n up to a multiple of chunkAlign.
func align8(n int) int { return (n + chunkAlign - 1) &^ (chunkAlign - 1) }

// classSizes returns the chunk size of every size class, smallest first,
// computed as memcached 1.6 does: the first chunk is the header plus
// chunkMin, each next one the previous times factor (truncated, then
// rounded up to 8 bytes, and at least 8 bytes more), as long as it is at
// most pageSize/2 and fewer than MaxClasses classes exist; a final class
// holds a whole page.
func classSizes(pageSize, chunkMin int, factor float64) []int {
	var sizes []int
	size := headerSize + chunkMin
	for len(sizes) < MaxClasses-1 {
		size = align8(size)
		if size > pageSize/2 {
			break
		}
		sizes = append(sizes, size)
		size = max(int(float64(size)*factor), size+chunkAlign)
	}
	return append(sizes, pageSize)
}

// itemSize is the chunk space an item with the given key and value lengths
// needs.
func itemSize(keyLen, valueLen int) int { return headerSize + keyLen + valueLen }

// ClassFor returns the size class (numbered from 1, as memcached's slab
// classes) that an item with a keyLen-byte key and a valueLen-byte value
// goes to, and false when the lengths are out of bounds or the item does
// not fit in a page. Cost: a binary search of the class table.
func (s *Store) ClassFor(keyLen, valueLen int) (class int, ok bool) {
	i, err := s.classIndex(keyLen, valueLen)
	return i + 1, err == nil
}

// classIndex returns the index in s.classes of the class for the lengths,
// or ErrKeyLength, ErrTooLarge or errNegativeValue.
func (s *Store) classIndex(keyLen, valueLen int) (int, error) {
	switch {
	case keyLen < 1 || keyLen > MaxKeyLen:
		return -1, ErrKeyLength
	case valueLen < 0:
		return -1, errNegativeValue
	case valueLen > s.cfg.itemSizeMax:
		return -1, ErrTooLarge
	}
	need := itemSize(keyLen, valueLen)
	i := sort.Search(len(s.classes), func(i int) bool { return s.classes[i].size >= need })
	if i == len(s.classes) {
		return -1, ErrTooLarge
	}
	return i, nil
}
