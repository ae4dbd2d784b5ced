package server

import (
	"testing"

	"github.com/warpkv/warpkv/internal/difftest"
	"github.com/warpkv/warpkv/protocol"
)

// TestDifferentialAgainstMemcachedOnIOUring is TestDifferentialAgainstMemcached
// with the event loops on io_uring (Config.LoopIO, serve --loop-io uring
// and uringpoll), plus the gomemcache client scenarios, on each engine.
func TestDifferentialAgainstMemcachedOnIOUring(t *testing.T) {
	mc := difftest.Memcached(t)
	for _, io := range []string{protocol.LoopIOUringPoll, protocol.LoopIOUring} {
		for _, ec := range testEngines {
			t.Run(io+"/"+ec.name, func(t *testing.T) {
				addr := startServerConfig(t, ec, Config{LoopIO: io})
				cfg := difftest.Config{}
				if testing.Short() {
					cfg.Sequences = 20
				}
				difftest.Run(t, mc, addr, cfg)
				difftest.ClientSuite(t, addr)
			})
		}
	}
}
