module warpkv

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/crypto v0.58.0 // indirect
)
