package stm

import (
	"fmt"

	"github.com/warpkv/warpkv/internal/phrase"
)

// modeName returns names[v], or kind(v) for a value outside them: the
// String of an option's modes. Cost: O(1).
func modeName(names []string, v int, kind string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

// parseMode returns the mode whose name is s (its index in names), or an
// error naming what and the names it takes ("a, b or c"). Cost: O(len(names)).
func parseMode[T ~int](names []string, s, what string) (T, error) {
	for i, n := range names {
		if s == n {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("stm: %s mode %q: want %s", what, s, phrase.Or(names))
}
