// Package phrase builds the small pieces of English that warpkv's usage
// text and errors share, so that every list of choices reads the same.
package phrase

import "strings"

// Or joins words as "a, b or c": "a or b" for two, the word alone for
// one, "" for none. Cost: one allocation of the result.
func Or(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
