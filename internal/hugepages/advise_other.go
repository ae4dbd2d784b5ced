//go:build !linux

package hugepages

// advise does nothing where transparent huge pages are not Linux's.
func advise([]byte) {}
