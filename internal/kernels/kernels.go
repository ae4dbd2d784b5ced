package kernels

import (
	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/btree"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/mpt"
	"github.com/warpkv/warpkv/prim"
	"github.com/warpkv/warpkv/stm"
)

// Package is one package's kernel programs.
type Package struct {
	Name     string // the package's import path below the module
	Programs []gpu.Program
}

// All returns the kernel programs of every package, in dependency order.
// Cost: reads the embedded sources.
func All() []Package {
	return []Package{
		{"prim", prim.Programs()},
		{"hashindex", hashindex.Programs()},
		{"btree", btree.Programs()},
		{"mpt", mpt.Programs()},
		{"art", art.Programs()},
		{"stm", stm.Programs()},
	}
}

// Archs are the GPU architectures every kernel is compile-checked for.
var Archs = []string{"sm_90"}
