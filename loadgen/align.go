package loadgen

import "strings"

// AlignRows lays rows out as text columns two spaces apart, the first two
// columns left-aligned and the others right-aligned (rows may differ in
// length), each line ending in a newline and no trailing space. It is the
// layout of WriteTable's and of warpkv bench's tables. Cost:
// two passes over the cells.
func AlignRows(rows [][]string) string {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < 2 {
				line.WriteString(c + pad) // text columns left-aligned
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String()
}
