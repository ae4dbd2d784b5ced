package stm

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// readHistory reads the history regions the kernels filled (the committed
// records, then the aborted attempts kept) and decodes them.
func (g *gpuEngine) readHistory(pl *runPlan, m *runMemory, dc []uint64) ([]Record, error) {
	var out []Record
	for _, region := range []struct {
		buf  *gpu.Buffer[uint64]
		used int64
	}{{m.hist, min(int64(dc[dctlHistOff]), pl.histWords)}, {m.histAb, min(int64(dc[dctlHistAbEnd]), pl.abWords)}} {
		words := make([]uint64, region.used)
		if err := region.buf.Read(nil, 0, words); err != nil {
			return nil, err
		}
		recs, err := parseHistory(words)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// parseHistory decodes the history the kernels wrote (see stm_record).
func parseHistory(words []uint64) ([]Record, error) {
	var out []Record
	for i := 0; i < len(words); {
		if i+4 > len(words) {
			return nil, fmt.Errorf("history: truncated record at word %d", i)
		}
		kind, cause := words[i]&0xFF, (words[i]>>8)&0xFF
		nr, nw := int(words[i+1]>>32), int(uint32(words[i+1]))
		r := Record{TS: words[i+2], Snapshot: words[i+3], ReadOnly: kind == 1, Aborted: kind == 2, Cause: Cause(cause)}
		i += 4
		if kind > 2 || i+2*(nr+nw) > len(words) {
			return nil, fmt.Errorf("history: bad record at word %d", i-4)
		}
		r.Reads = make([]Access, nr)
		for j := range r.Reads {
			r.Reads[j] = Access{Item: uint32(words[i]), Value: words[i+1]}
			i += 2
		}
		if nw > 0 {
			r.Writes = make([]Access, nw)
			for j := range r.Writes {
				r.Writes[j] = Access{Item: uint32(words[i]), Value: words[i+1]}
				i += 2
			}
		}
		if r.Aborted && r.Writes != nil && len(r.Writes) == 0 {
			r.Writes = nil
		}
		out = append(out, r)
	}
	return out, nil
}
