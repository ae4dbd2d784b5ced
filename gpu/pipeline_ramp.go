package gpu

// rampChunks returns the byte sizes of the chunks a staged upload of total
// bytes takes through a ring of chunk-byte buffers with a ramp of ramp
// bytes (UploadRamped; 0 or ramp >= chunk: every chunk chunk bytes but
// the last). With a ramp the chunks double from ramp up to chunk
// and halve back down to ramp before the end, so that the first DMA starts
// after a copy of ramp bytes instead of a whole chunk and the last DMA
// ends soon after the host's last copy (its chunk is less than 2*ramp
// bytes), while the middle of a large transfer keeps the full chunks and
// their low per-chunk cost. Every size is a multiple of align (the
// element size) but possibly the last. Cost: O(chunks).
func rampChunks(total, chunk, ramp, align int) []int {
	chunk = max(align, chunk/align*align)
	if ramp <= 0 || ramp >= chunk {
		sizes := make([]int, 0, (total+chunk-1)/chunk)
		for r := total; r > 0; r -= min(chunk, r) {
			sizes = append(sizes, min(chunk, r))
		}
		return sizes
	}
	ramp = max(align, ramp/align*align)
	var sizes []int
	up := ramp
	for r := total; r > 0; {
		c := min(up, chunk)
		// Halve a chunk that would leave less than half of itself after
		// it (the rest ramps down), and take a remainder of less than a
		// ramp with the chunk before it.
		for c > ramp && r-c < c/2 {
			c = max(ramp, c/2/align*align)
		}
		if c >= r || (r-c < ramp && r <= chunk) {
			c = r
		}
		sizes = append(sizes, c)
		r -= c
		up = min(2*up, chunk)
	}
	return sizes
}
