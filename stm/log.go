package stm

// wildcard is the item count of a GPU commit log entry whose items did not
// fit in the log's item pool: a final check that meets it validates again
// against every item's newest write when made in the server's turn, else
// aborts (LogFull). The CPU engine keeps no log: it validates against
// per-item versions (commit.go).
const wildcard = -1
