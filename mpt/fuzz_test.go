package mpt

import (
	"testing"
)

// FuzzUpdateBatches decodes data into batches of updates and deletes over
// a small key space (short, prefix-sharing, empty and 32-byte keys; short
// and long values) and checks the incrementally updated trie after every
// batch against a map model: root equal to a from-scratch build, Get,
// proofs and iteration. Run: go test -fuzz FuzzUpdateBatches ./mpt/
func FuzzUpdateBatches(f *testing.F) {
	f.Add(false, []byte{0x01, 0x10, 0x22, 0x31, 0xff, 0x02, 0x10, 0x20})
	f.Add(true, []byte{0x05, 0x10, 0x11, 0x12, 0x13, 0x14, 0xff, 0x03, 0x10, 0x00, 0x11})
	f.Add(false, []byte{0x30, 0x41, 0x52, 0x63, 0x74, 0x85, 0x96, 0xa7, 0xb8, 0xff, 0x30, 0x40, 0x50})
	f.Fuzz(func(t *testing.T, secure bool, data []byte) {
		forEngines(t, func(t *testing.T, e testEngine) { fuzzBatches(t, e, secure, data) })
	})
}

// fuzzBatches is one FuzzUpdateBatches input on one engine.
func fuzzBatches(t *testing.T, e testEngine, secure bool, data []byte) {
	{
		tr := e.new(Options{Secure: secure})
		model := map[string][]byte{}
		var keys, values [][]byte
		flush := func() {
			if err := tr.Update(keys, values); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				if len(values[i]) == 0 {
					delete(model, string(k))
				} else {
					model[string(k)] = values[i]
				}
			}
			keys, values = nil, nil
			checkAgainstModel(t, tr, model)
		}
		for i, b := range data {
			if b == 0xff {
				flush()
				continue
			}
			keys = append(keys, fuzzKey(b>>4))
			values = append(values, fuzzValue(b&0x0f, i))
		}
		flush()
	}
}

// fuzzKey maps a nibble to one of 16 keys chosen to share prefixes.
func fuzzKey(k byte) []byte {
	switch {
	case k == 0:
		return nil
	case k < 4:
		return []byte{0x12, 0x34}[:k%3]
	case k < 8:
		return []byte{0x12, 0x34, k, 0x56}
	case k < 12:
		return []byte{0x12, k << 4}
	default:
		key := make([]byte, 32)
		key[0], key[31] = 0xab, k
		return key
	}
}

// fuzzValue maps a nibble to a value: 0 deletes, others are short or long.
func fuzzValue(v byte, i int) []byte {
	switch {
	case v == 0:
		return nil
	case v < 8:
		return []byte{v, byte(i)}
	case v < 12:
		return []byte{v << 4}
	default:
		out := make([]byte, 20*int(v-10))
		for j := range out {
			out[j] = byte(i + j)
		}
		return out
	}
}
