package protocol

import (
	"testing"
)

// TestEventLoopsRunTheTables runs the protocol's request tables and
// connection tests over TCP connections served by event loops (where the
// platform has them) instead of net.Pipe connections on goroutines. The
// tests that count a connection's batches are left out: a loop's
// connection starts at one op per round (slow start, see adapt), and its
// rounds share batches with the loop's other connections.
func TestEventLoopsRunTheTables(t *testing.T) {
	if !loopsAvailable {
		t.Skip("no event loops on this platform")
	}
	overLoops = true
	defer func() { overLoops = false }()
	for name, f := range map[string]func(*testing.T){
		"HalfSentRequestWaitsWithoutSpinning": TestHalfSentRequestWaitsWithoutSpinning,
		"OverlongLinesClose":                  TestOverlongLinesClose,
		"TooLargeValuesAreNotBuffered":        TestTooLargeValuesAreNotBuffered,
		"HugeBinaryLengthsAllocateNothing":    TestHugeBinaryLengthsAllocateNothing,
		"BinaryKeyLengthWaitsForTheKey":       TestBinaryKeyLengthWaitsForTheKey,
		"Garbage":                             TestGarbage,
		"PanicClosesOnlyItsConnection":        TestPanicClosesOnlyItsConnection,
		"FailingCacheClosesTheConnection":     TestFailingCacheClosesTheConnection,
		"BinaryProtocol":                      TestBinaryProtocol,
		"BinaryProtocolErrorsClose":           TestBinaryProtocolErrorsClose,
		"BinaryStats":                         TestBinaryStats,
		"MetaProtocol":                        TestMetaProtocol,
		"MetaAges":                            TestMetaAges,
		"ConcurrentConnections":               TestConcurrentConnections,
		"TextProtocol":                        TestTextProtocol,
		"TextExpiry":                          TestTextExpiry,
		"TextQuitClosesAfterEarlierReplies":   TestTextQuitClosesAfterEarlierReplies,
		"TextStats":                           TestTextStats,
	} {
		t.Run(name, f)
	}
}
