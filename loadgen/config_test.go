package loadgen

import "testing"

// TestMaxKeysAndMultiGet checks that MaxKeys and MaxMultiGet are the
// bounds Config.Check applies: at the bound a config passes, one past it
// fails.
func TestMaxKeysAndMultiGet(t *testing.T) {
	for _, ks := range []int{2, 3, 8, 9, 16, 128, 250} {
		c := Config{Addr: "x", Workload: Workload{KeySize: ks, Keys: min(MaxKeys(ks), 1<<40)}, MultiGet: MaxMultiGet(ks)}
		if err := c.Check(); err != nil {
			t.Errorf("%d-byte keys at the bounds (%d keys, %d per get): %v", ks, c.Workload.Keys, c.MultiGet, err)
		}
		more := c
		more.MultiGet++
		if more.Check() == nil {
			t.Errorf("%d-byte keys: %d keys per get passed", ks, more.MultiGet)
		}
		if MaxKeys(ks) < 1<<40 {
			more = c
			more.Workload.Keys++
			if more.Check() == nil {
				t.Errorf("%d-byte keys: %d keys passed", ks, more.Workload.Keys)
			}
		}
	}
}
