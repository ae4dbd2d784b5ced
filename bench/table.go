package bench

import (
	"fmt"
	"io"
	"strings"
)

// PrintTable writes results as an aligned text table with the columns
// operation, engine, items, ops/s, GB/s and ratio, counts in SI units
// (k, M, G, T). Text columns are left-aligned, numbers right-aligned.
func PrintTable(w io.Writer, results []Result) error {
	header := []string{"operation", "engine", "items", "ops/s", "GB/s", "ratio"}
	rows := [][]string{header}
	for _, r := range results {
		rows = append(rows, []string{
			r.Op, r.Engine, SI(float64(r.Items)), SI(r.OpsPerSec), formatGBps(r.GBps), formatRatio(r.Ratio, r.RatioTo),
		})
	}
	width := make([]int, len(header))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len(c))
			switch {
			case i < 2:
				b.WriteString(c)
				if i < len(row)-1 {
					b.WriteString(pad)
				}
			case i == len(row)-1:
				b.WriteString(c) // ratio: left-aligned, last, no trailing spaces
			default:
				b.WriteString(pad + c)
			}
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("bench: writing table: %w", err)
	}
	return nil
}

// SI formats a non-negative count with an SI prefix and four significant
// digits: 999, 1.5k, 134.2M, 2.147G. Zero prints as "-".
func SI(v float64) string {
	if v == 0 {
		return "-"
	}
	for _, p := range []string{"", "k", "M", "G", "T", "P"} {
		if v < 999.95 || p == "P" {
			if p == "" && v == float64(int64(v)) {
				return fmt.Sprintf("%d", int64(v))
			}
			return fmt.Sprintf("%.4g%s", v, p)
		}
		v /= 1000
	}
	panic("unreachable")
}

// formatGBps prints a bandwidth with precision that suits its size.
func formatGBps(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// formatRatio prints a ratio and its reference, e.g. "0.81x gpu copy".
func formatRatio(v float64, to string) string {
	if to == "" {
		return "-"
	}
	return fmt.Sprintf("%.2fx %s", v, to)
}

// IEC formats a byte count with a binary prefix: 256 MiB, 4 GiB, 1.5 KiB.
func IEC(n int64) string {
	v := float64(n)
	for _, p := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if v < 1024 || p == "TiB" {
			if v == float64(int64(v)) {
				return fmt.Sprintf("%d %s", int64(v), p)
			}
			return fmt.Sprintf("%.3g %s", v, p)
		}
		v /= 1024
	}
	panic("unreachable")
}
