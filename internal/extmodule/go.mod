module example.com/warpkvuser

go 1.26.0

require github.com/warpkv/warpkv v0.0.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/warpkv/warpkv => ../..
