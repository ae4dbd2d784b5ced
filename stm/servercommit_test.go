package stm

import "testing"

// TestServerCommitOption: Options.ServerCommit's names and the modes Open
// refuses.
func TestServerCommitOption(t *testing.T) {
	for _, c := range []struct {
		name string
		mode ServerCommit
	}{{"off", ServerCommitOff}, {"writeback", ServerCommitWriteBack}, {"retry", ServerCommitRetry}} {
		got, err := ParseServerCommit(c.name)
		if err != nil || got != c.mode || got.String() != c.name {
			t.Errorf("ParseServerCommit(%q) = %v (%q), %v; want %v", c.name, got, got.String(), err, c.mode)
		}
	}
	if _, err := ParseServerCommit("on"); err == nil {
		t.Error("ParseServerCommit(\"on\"): no error")
	}
	for _, bad := range []ServerCommit{-1, ServerCommitRetry + 1} {
		if e, err := Open(Options{Device: "cpu", ServerCommit: bad}); err == nil {
			e.Close()
			t.Errorf("Open with ServerCommit %d: no error", int(bad))
		}
	}
}
