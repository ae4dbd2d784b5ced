//go:build !linux

package art

// adviseHuge does nothing off Linux (see hugepages_linux.go).
func adviseHuge[T any](s []T) {}
