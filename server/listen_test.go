package server

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestListenTCPHostNameListensOnEachAddress: a host name is listened on at
// every address it resolves to, as memcached 1.6.18's server_socket, IPv4
// on tcp4 and IPv6 on tcp6; an address already in use is left out while
// another can be listened on, and fails the listen when none can.
func TestListenTCPHostNameListensOnEachAddress(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	both := func(context.Context, string) ([]net.IPAddr, error) {
		return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("::1")}}, nil
	}
	free, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	for _, tc := range []struct {
		name  string
		taken []string // addresses another socket holds
		want  []string // the listeners' addresses; none: the listen fails
	}{
		{"both addresses", nil, []string{"127.0.0.1:" + port, "[::1]:" + port}},
		{"IPv4 in use", []string{"127.0.0.1:" + port}, []string{"[::1]:" + port}},
		{"both in use", []string{"127.0.0.1:" + port, "[::1]:" + port}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range tc.taken {
				ln, err := net.Listen(tcpNetwork(a), a)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			lns, err := listenTCP("myhost:"+port, both)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), "myhost") {
					t.Errorf("listen: %v, want an address-in-use error naming the host", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := listenerAddrs(t, lns)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("listening on %v, want %v", got, tc.want)
			}
			// Each listener takes connections.
			for _, a := range got {
				c, err := net.Dial("tcp", a)
				if err != nil {
					t.Errorf("dial %s: %v", a, err)
					continue
				}
				c.Close()
			}
		})
	}
}

// TestListenTCPStarListensOnEveryInterface: the host "*" (memcached
// 1.6.18's "-l '*'") listens on 0.0.0.0 and, where the machine has IPv6,
// on ::, each its own socket, as memcached does.
func TestListenTCPStarListensOnEveryInterface(t *testing.T) {
	free, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	lns, err := listenTCP("*:"+port, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := listenerAddrs(t, lns)
	want := []string{"0.0.0.0:" + port}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		want = append(want, "[::]:"+port)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("listening on %v, want %v", got, want)
	}
	c, err := net.Dial("tcp4", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("dial 127.0.0.1: %v", err)
	}
	c.Close()
}

// listenerAddrs returns the addresses of lns, each closed when the test
// ends.
func listenerAddrs(t *testing.T, lns []net.Listener) []string {
	t.Helper()
	var got []string
	for _, ln := range lns {
		got = append(got, ln.Addr().String())
		t.Cleanup(func() { ln.Close() })
	}
	return got
}
