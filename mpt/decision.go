package mpt

import (
	"fmt"
	"math"
)

// NodeUpdate names the GPU engine's node-update algorithm for a batch.
type NodeUpdate string

// The GPU engine's node-update algorithms (Options.NodeUpdate).
const (
	// NodeUpdateAuto lets the decision model pick per batch.
	NodeUpdateAuto NodeUpdate = ""
	// NodeUpdatePhase is PhaseNU: expand the short nodes the batch
	// branches inside, insert with one CAS per child slot, compress back
	// to canonical form. It handles deletes.
	NodeUpdatePhase NodeUpdate = "phase"
	// NodeUpdateLock is LockNU: optimistic lock coupling with a version
	// lock per node and restarts from the root; inserts only.
	NodeUpdateLock NodeUpdate = "lock"
)

// ParseNodeUpdate returns the algorithm named s ("" and "auto" are the
// decision model), or an error naming the valid ones.
func ParseNodeUpdate(s string) (NodeUpdate, error) {
	switch s {
	case "", "auto":
		return NodeUpdateAuto, nil
	case string(NodeUpdatePhase), string(NodeUpdateLock):
		return NodeUpdate(s), nil
	}
	return "", fmt.Errorf("mpt: unknown node update %q (want auto, phase or lock)", s)
}

// Thresholds of the decision model.
const (
	// clusterSlack: a batch is clustered when its keys share, on average,
	// more than this many nibbles beyond what m uniform keys share with a
	// sorted neighbour (about log16 m).
	clusterSlack = 2.0
	// denseRatio: a uniform batch is dense when it brings at least one key
	// for every denseRatio live nodes of the trie (many keys per touched
	// subtree: LockNU would contend on the same nodes).
	denseRatio = 8
)

// chooseUpdate is the paper's decision model: clustered keys go to
// PhaseNU (long shared paths: LockNU's walks would contend on the same
// nodes), uniform and dense batches to PhaseNU, uniform and sparse ones to
// LockNU. Batches LockNU cannot run go to PhaseNU whatever the mode:
// those with deletes (which collapse nodes upward) and those into an
// empty trie. lcpMean is the batch's mean need (nibbles shared with a
// sorted neighbour), live the trie's live node count.
func chooseUpdate(mode NodeUpdate, m int, lcpMean float64, live int, hasDeletes, emptyTrie bool) (NodeUpdate, string) {
	switch {
	case emptyTrie:
		return NodeUpdatePhase, "empty trie"
	case hasDeletes:
		return NodeUpdatePhase, "batch has deletes"
	case mode == NodeUpdatePhase:
		return NodeUpdatePhase, "requested"
	case mode == NodeUpdateLock:
		return NodeUpdateLock, "requested"
	}
	uniform := math.Log(float64(max(m, 1))) / math.Log(16)
	if lcpMean > uniform+clusterSlack {
		return NodeUpdatePhase, fmt.Sprintf("clustered keys (mean shared prefix %.1f nibbles, uniform %.1f)", lcpMean, uniform)
	}
	if m*denseRatio >= live {
		return NodeUpdatePhase, fmt.Sprintf("uniform and dense (%d keys, %d live nodes)", m, live)
	}
	return NodeUpdateLock, fmt.Sprintf("uniform and sparse (%d keys, %d live nodes)", m, live)
}

// liveNodes is the GPU trie's node count (ids handed out and not free).
func (g *gpuTrie) liveNodes() int { return int(g.bump) - 1 - int(g.nfree) }
