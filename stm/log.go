package stm

// wildcard is the item count of a GPU commit log entry whose items did not
// fit in the log's item pool: it conflicts with every transaction validated
// against it (LogFull). The CPU engine keeps no log: it validates against
// per-item versions (commit.go).
const wildcard = -1
