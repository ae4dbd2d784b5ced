package main

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// TestServeMetadumpAsMemcached: "lru_crawler metadump" prints memcached
// 1.6.18's key dump, which memcached-dump tools read: a "key=... exp=...
// la=... cas=... fetch=... cls=... size=..." line for each live item (the
// key URI-encoded, exp -1 for no expiry, size memcached's item size), then
// END; a bad class id answers BADCLASS, a missing or extra argument ERROR,
// and a metadump after other requests of the same packet is refused. The
// lines come in crawl order, which differs (memcached's LRU's, warpkv's
// slab order): they are compared sorted, and the times (exp, la) within
// three seconds of the expected ones. A BUSY reply (memcached's crawler
// still finishing the previous dump) is retried.
func TestServeMetadumpAsMemcached(t *testing.T) {
	_, port, _ := net.SplitHostPort(freeAddr(t))
	setup := "set a 5 0 3\r\nabc\r\nset b%20c 0 100 1\r\nx\r\nset big 0 0 2000\r\n" + strings.Repeat("y", 2000) + "\r\n" +
		"set gone 0 -1 1\r\nz\r\nget a\r\n"
	steps := []string{"lru_crawler metadump all\r\n", "lru_crawler metadump 1\r\n", "lru_crawler metadump 1,15\r\n",
		"lru_crawler metadump 40\r\n", "lru_crawler metadump hash\r\n", "lru_crawler metadump 99\r\n", "lru_crawler metadump x\r\n",
		"lru_crawler metadump\r\n", "lru_crawler metadump all extra\r\n", "version\r\nlru_crawler metadump all\r\n"}
	want := []string{
		"END\r\n|key=a exp=-1 la=NOW cas=1 fetch=yes cls=1 size=67\n|key=b%2520c exp=NOW+100 la=NOW cas=2 fetch=no cls=1 size=65\n|key=big exp=-1 la=NOW cas=3 fetch=no cls=15 size=2062\n",
		"END\r\n|key=a exp=-1 la=NOW cas=1 fetch=yes cls=1 size=67\n|key=b%2520c exp=NOW+100 la=NOW cas=2 fetch=no cls=1 size=65\n",
		"END\r\n|key=a exp=-1 la=NOW cas=1 fetch=yes cls=1 size=67\n|key=b%2520c exp=NOW+100 la=NOW cas=2 fetch=no cls=1 size=65\n|key=big exp=-1 la=NOW cas=3 fetch=no cls=15 size=2062\n",
		"END\r\n",
		"END\r\n|key=a exp=-1 la=NOW cas=1 fetch=yes cls=1 size=67\n|key=b%2520c exp=NOW+100 la=NOW cas=2 fetch=no cls=1 size=65\n|key=big exp=-1 la=NOW cas=3 fetch=no cls=15 size=2062\n",
		"BADCLASS invalid class id\r\n",
		"BADCLASS invalid class id\r\n",
		"ERROR\r\n",
		"ERROR\r\n",
		"ERROR cannot pipeline other commands before metadump\r\n|VERSION V\r\n",
	}
	for _, server := range []string{"warpkv", "memcached"} {
		t.Run(server, func(t *testing.T) {
			args := []string{"-p", port, "-l", "127.0.0.1"}
			if server == "warpkv" {
				p := difftest.Serve(t, append([]string{"--device", "cpu"}, args...)...)
				defer stopServe(t, p) // memcached listens on the same port next
			} else {
				startMemcachedProc(t, args...)
			}
			c := dialStarting(t, "tcp", "127.0.0.1:"+port)
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(c)
			if _, err := io.WriteString(c, setup); err != nil {
				t.Fatal(err)
			}
			for _, end := range []string{"STORED", "STORED", "STORED", "STORED", "VALUE a 5 3", "abc", "END"} {
				if l, err := r.ReadString('\n'); err != nil || strings.TrimSpace(l) != end {
					t.Fatalf("setup: %q, %v; want %q", l, err, end)
				}
			}
			for i, step := range steps {
				var got string
				// memcached's crawler thread may still be finishing the
				// previous dump: it answers BUSY, and its own tests
				// (t/lru-crawler.t) ask again until it does not.
				for try := 0; ; try++ {
					if _, err := io.WriteString(c, step); err != nil {
						t.Fatal(err)
					}
					got = metadumpReply(t, r, strings.Count(step, "\r\n"), time.Now().Unix())
					if !strings.Contains(got, "BUSY currently processing crawler request") || try == 100 {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if got != want[i] {
					t.Errorf("%q:\n got %q\nwant %q", step, got, want[i])
				}
			}
		})
	}
}

var metadumpTimeRE = regexp.MustCompile(`(exp|la)=(\d+)`)

// metadumpReply reads the replies of n requests (a dump ends at END, any
// other reply is one line) and returns them sorted and joined by "|", the
// times within three seconds of now written NOW or NOW+100 and the
// version VERSION V.
func metadumpReply(t *testing.T, r *bufio.Reader, n int, now int64) string {
	t.Helper()
	var lines []string
	for n > 0 {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		if !strings.HasPrefix(l, "key=") {
			n--
		}
		if strings.HasPrefix(l, "VERSION ") {
			l = "VERSION V\r\n"
		}
		l = metadumpTimeRE.ReplaceAllStringFunc(l, func(m string) string {
			name, v, _ := strings.Cut(m, "=")
			x, _ := strconv.ParseInt(v, 10, 64)
			switch {
			case x >= now-3 && x <= now+3:
				return name + "=NOW"
			case x >= now+97 && x <= now+103:
				return name + "=NOW+100"
			}
			return m
		})
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return strings.Join(lines, "|")
}
