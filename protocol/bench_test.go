package protocol

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// benchPipeline measures a pipeline of gets over loopback TCP; each op is
// one Get of a 100-byte value.
func benchPipeline(b *testing.B, depth int, binaryProto bool) {
	s := newTestServer(b, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	value := strings.Repeat("v", 100)
	var req []byte
	if binaryProto {
		binExchange(b, nc, bset(opSet, "key", value, 0, 0, 0))
		for range depth {
			req = append(req, bget(opGetQ, "key").bytes()...)
		}
		req = append(req, binReq{op: opNoop, opaque: sentinelOpaque}.bytes()...)
	} else {
		textExchange(b, nc, fmt.Sprintf("set key 0 0 %d\r\n%s\r\n", len(value), value))
		req = []byte(strings.Repeat("get key\r\n", depth) + "mn\r\n")
	}
	replyLen := depth * len(fmt.Sprintf("VALUE key 0 100\r\n%s\r\nEND\r\n", value))
	if binaryProto {
		replyLen = depth*(binHdrLen+4+100) + binHdrLen
	} else {
		replyLen += len("MN\r\n")
	}
	buf := make([]byte, replyLen)
	b.SetBytes(int64(len(req) + replyLen))
	b.ResetTimer()
	for range b.N {
		if _, err := nc.Write(req); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < replyLen; {
			n, err := nc.Read(buf[got:])
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.ReportMetric(float64(b.N*depth)/b.Elapsed().Seconds(), "gets/s")
}

func BenchmarkTextGetPipeline1(b *testing.B)     { benchPipeline(b, 1, false) }
func BenchmarkTextGetPipeline100(b *testing.B)   { benchPipeline(b, 100, false) }
func BenchmarkBinaryGetPipeline100(b *testing.B) { benchPipeline(b, 100, true) }
