module github.com/warpkv/warpkv

go 1.26.0

require (
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/ebitengine/purego v0.11.3
	github.com/tidwall/btree v1.8.2
	golang.org/x/crypto v0.58.0
)

require golang.org/x/sys v0.49.0
