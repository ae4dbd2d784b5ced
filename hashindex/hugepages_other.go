//go:build !linux

package hashindex

// adviseHuge does nothing where transparent huge pages are not Linux's.
func adviseHuge(words []uint32) {}
