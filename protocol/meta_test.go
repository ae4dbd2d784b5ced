package protocol

import (
	"regexp"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/difftest"
)

var (
	longKey   = strings.Repeat("k", 251)
	opaque33  = "O" + strings.Repeat("o", 33)
	tooLargeV = strings.Repeat("v", 1048577)
)

// Replies of memcached 1.6.18 to meta commands (CAS values are the model's).
var metaCases = []struct {
	name, req, want string
}{
	{"mg miss", "mg a\r\nmg a v\r\n", "EN\r\nEN\r\n"},
	{"mg miss under q", "mg a q\r\nmg a q k O1\r\n", ""},
	{"mg miss echoes O and k", "mg a O123 k\r\n", "EN O123 ka\r\n"},
	{"mg hit without flags", "ms a 2\r\nhi\r\nmg a\r\n", "HD\r\nHD\r\n"},
	{"mg flags in request order", "ms a 2 F5 T100\r\nhi\r\nmg a s v f t c k O1 h l\r\n", "HD\r\nVA 2 s2 f5 t100 c1 ka O1 h0 l0\r\nhi\r\n"},
	{"mg h reports the state before the fetch", "ms a 2\r\nhi\r\nmg a h\r\nmg a h\r\n", "HD\r\nHD h0\r\nHD h1\r\n"},
	{"mg u leaves the item unfetched", "ms a 1\r\nx\r\nmg a u\r\nmg a h\r\n", "HD\r\nHD\r\nHD h0\r\n"},
	{"mg hit under q", "ms a 1\r\nx\r\nmg a q v\r\nmg a q k\r\n", "HD\r\nVA 1\r\nx\r\nHD ka\r\n"},
	{"mg T sets the TTL", "ms a 1 T100\r\nx\r\nmg a T30 t\r\nmg a t\r\n", "HD\r\nHD t30\r\nHD t30\r\n"},
	{"mg t before T reports the old TTL", "ms a 1 T100\r\nx\r\nmg a t T30\r\nmg a t\r\n", "HD\r\nHD t100\r\nHD t30\r\n"},
	{"mg t of an item without expiry", "ms a 1\r\nx\r\nmg a t\r\n", "HD\r\nHD t-1\r\n"},
	{"mg ignores proxy flags", "ms a 1\r\nx\r\nmg a v P L\r\n", "HD\r\nVA 1\r\nx\r\n"},
	{"mg duplicate flag", "mg a k k\r\nmg a \x80\r\n", "CLIENT_ERROR duplicate flag\r\nCLIENT_ERROR duplicate flag\r\n"},
	{"mg invalid flag", "mg a x\r\nmg a E5\r\nmg a \x01\r\n", "CLIENT_ERROR invalid flag\r\nCLIENT_ERROR invalid flag\r\nCLIENT_ERROR invalid flag\r\n"},
	{"mg bad token", "mg a Tx\r\nmg a T\r\n", "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
	{"mg too many flags", "mg a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\r\n", "CLIENT_ERROR options flags are too long\r\n"},
	{"mg opaque too long", "mg a " + opaque33 + "\r\nms a 1\r\nx\r\nmg a v " + opaque33 + "\r\n",
		"CLIENT_ERROR opaque token too long\r\nHD\r\nCLIENT_ERROR opaque token too long\r\n"},
	{"mg opaque of 32 bytes", "mg a O" + strings.Repeat("o", 31) + "\r\n", "EN O" + strings.Repeat("o", 31) + "\r\n"},
	{"mg key too long", "mg " + longKey + "\r\nmg\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{"mg base64 key", "ms YWJj 1 b\r\nx\r\nmg abc v\r\nmg YWJj b v\r\n", "HD\r\nVA 1\r\nx\r\nVA 1\r\nx\r\n"},
	{"mg base64 miss echoes the key encoded", "mg YWJj b k\r\n", "EN kYWJj b\r\n"},
	{"mg bad base64", "mg YQ b\r\nmg YQ= b\r\nmg !!! b\r\n",
		"CLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\n"},
	{"mg N creates the item and wins", "mg a N30\r\nmg a R30\r\n", "HD W\r\nHD Z\r\n"},
	{"mg N item is empty with the TTL", "mg a N30 t v\r\nmg a t N30 v\r\nmg a v t\r\n", "VA 0 t30 W\r\n\r\nVA 0 t30 Z\r\n\r\nVA 0 t30 Z\r\n\r\n"},
	{"mg t before N of a created item", "mg a t N30 v\r\nmg a t v\r\n", "VA 0 t-1 W\r\n\r\nVA 0 t30 Z\r\n\r\n"},
	{"mg N created item flags", "mg a s N30 f h l\r\n", "HD s0 f0 h0 l0 W\r\n"},
	{"mg N under q answers", "mg a N30 q\r\nmg a N30 q\r\nmg b q\r\nmn\r\n", "HD W\r\nHD Z\r\nMN\r\n"},
	{"mg N without expiry", "mg a N0 v\r\nmg a N-1 v\r\n", "VA 0 W\r\n\r\nVA 0 Z\r\n\r\n"},
	{"mg R wins an item expiring sooner", "ms a 1 T10\r\nx\r\nmg a R30 v t\r\nmg a R30 v t\r\nmg a R5\r\n", "HD\r\nVA 1 t10 W\r\nx\r\nVA 1 t10 Z\r\nx\r\nHD Z\r\n"},
	{"mg R on a hit with N", "ms a 1 T100\r\nx\r\nmg a N30 R200 t\r\nmg a R200 t\r\n", "HD\r\nHD t100 W\r\nHD t100 Z\r\n"},
	{"mg R does not win an item without expiry", "ms a 1\r\nx\r\nmg a R30\r\n", "HD\r\nHD\r\n"},
	{"mg k of an item stored with a base64 key", "ms YWJj 1 b\r\nx\r\nmg YWJj b v k\r\nmg abc k\r\nme abc\r\nms abd 1\r\nx\r\nmg YWJk b k\r\n",
		"HD\r\nVA 1 kYWJj b\r\nx\r\nHD kYWJj b\r\nME YWJj exp=-1 la=0 cas=1 fetch=yes cls=1 size=63\r\nHD\r\nHD kabd\r\n"},
	{"mg k of a printable base64 key", "ms bWtiNjQ= 2 b\r\nhi\r\nmg bWtiNjQ= b v k\r\n", "HD\r\nVA 2 kbWtiNjQ= b\r\nhi\r\n"},

	{"ms returns c k O", "ms a 2 c k O9\r\nhi\r\n", "HD c1 ka O9\r\n"},
	{"ms q hides only HD", "ms a 1 q\r\nx\r\nms a 1 q ME\r\nx\r\n", "NS\r\n"},
	{"ms modes", "ms a 1 ME\r\nx\r\nms a 1 ME\r\ny\r\nms a 1 MA\r\nz\r\nms a 1 MP\r\nw\r\nms b 1 MR\r\nv\r\nms b 1 MA\r\nv\r\nms a 1 MS\r\ns\r\nmg a v\r\n",
		"HD\r\nNS\r\nHD\r\nHD\r\nNS\r\nNS\r\nHD\r\nVA 1\r\ns\r\n"},
	{"ms C compares the CAS", "ms a 1\r\nx\r\nms a 1 C1 c\r\ny\r\nms a 1 C1 c\r\nz\r\nms b 1 C1 c\r\nz\r\nms b 1 MR C1\r\nz\r\n",
		"HD\r\nHD c2\r\nEX c0\r\nNF c0\r\nNF\r\n"},
	{"ms C with append and add", "ms a 1 MA C5\r\nx\r\nms a 1 ME C5\r\nx\r\nms a 1 MA C0\r\ny\r\nms a 1 MA C5\r\nz\r\nmg a v\r\n",
		"NS\r\nHD\r\nHD\r\nEX\r\nVA 2\r\nxy\r\n"},
	{"ms invalid mode swallows the data", "ms a 2 MX\r\nhi\r\nms a 2 MEE\r\nhi\r\n",
		"CLIENT_ERROR invalid mode for ms M token\r\nCLIENT_ERROR incorrect length for M token\r\n"},
	{"ms flags wrap at 32 bits", "ms a 1 F4294967296\r\nx\r\nmg a f\r\nms a 1 F+3\r\nx\r\nmg a f\r\n", "HD\r\nHD f0\r\nHD\r\nHD f3\r\n"},
	{"ms bad flags", "ms a 1 Fx\r\nx\r\nms a 1 F-1\r\nx\r\nms a 1 S1\r\nx\r\n",
		"CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR invalid flag\r\n"},
	{"ms negative TTL", "ms a 1 T-1\r\nx\r\nmg a\r\n", "HD\r\nEN\r\n"},
	{"ms bad length", "ms a -1\r\nms a x\r\nms a\r\nms\r\n",
		"CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{"ms key too long", "ms " + longKey + " 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{"ms too many flags", "ms a 1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\r\nx\r\n", "CLIENT_ERROR options flags too long\r\nERROR\r\n"},
	{"ms bad data chunk", "ms a 1\r\nxyz\r\nms a 1 q\r\nxyz\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\nERROR\r\n"},
	{"ms base64 key", "ms YWJj 1 b k\r\nx\r\nms !! 1 b\r\nx\r\n", "HD kYWJj b\r\nCLIENT_ERROR error decoding key\r\n"},
	{"ms too large removes the item in any mode", "ms a 1\r\nx\r\nms a 1048577 ME k O1\r\n" + tooLargeV + "\r\nmg a\r\n",
		"HD\r\nSERVER_ERROR object too large for cache\r\nEN\r\n"},
	{"ms I with C on a missing item", "ms a 1 I C1\r\nx\r\nms a 1 I\r\nx\r\n", "NF\r\nHD\r\n"},

	{"md", "ms a 1\r\nx\r\nmd a\r\nmd a\r\n", "HD\r\nHD\r\nNF\r\n"},
	{"md q hides only HD", "ms a 1\r\nx\r\nmd a q\r\nmd a q\r\n", "HD\r\nNF\r\n"},
	{"md C compares the CAS", "ms a 1\r\nx\r\nmd a C2\r\nmd a C0\r\nmd a C1\r\n", "HD\r\nEX\r\nEX\r\nHD\r\n"},
	{"md echoes O and k", "md a k O5\r\nmd YWJj b k\r\n", "NF ka O5\r\nNF kYWJj b\r\n"},
	{"md bad flags", "md a x\r\nmd a k k\r\nmd a Tx\r\nmd YQ b\r\n",
		"CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\n"},
	{"md opaque too long", "md a " + opaque33 + "\r\n", "CLIENT_ERROR opaque token too long\r\n"},
	{"md without key", "md\r\nmd " + longKey + "\r\n", "ERROR\r\nCLIENT_ERROR bad command line format\r\n"},
	{"md I marks the item stale", "md a I\r\nms a 1\r\nx\r\nmd a I T30\r\nmg a t v\r\nmg a v\r\nmg a\r\n",
		"NF\r\nHD\r\nHD\r\nVA 1 t30 X W\r\nx\r\nVA 1 Z X\r\nx\r\nHD Z X\r\n"},
	{"md I under q", "ms a 1\r\nx\r\nmd a I q\r\nmg a\r\nmd a I\r\nmg a k\r\n", "HD\r\nHD X W\r\nHD\r\nHD ka X W\r\n"},

	{"ma miss", "ma a\r\nma a q\r\nma a k O7\r\n", "NF\r\nNF\r\nNF ka O7\r\n"},
	{"ma modes and deltas", "ms n 2\r\n10\r\nma n\r\nma n v\r\nma n MD D5 v\r\nma n M- D50 v\r\nma n M+ D3 v\r\nma n MI v\r\n",
		"HD\r\nHD\r\nVA 2\r\n12\r\nVA 1\r\n7\r\nVA 1\r\n0\r\nVA 1\r\n3\r\nVA 1\r\n4\r\n"},
	{"ma vivify", "ma n N0 J5 v\r\nma n N0 J5 v\r\n", "VA 1\r\n5\r\nVA 1\r\n6\r\n"},
	{"ma q hides success but not a vivify", "ma n N0 q\r\nma n N0 q\r\nma n q v\r\nmg n v\r\n", "HD\r\nVA 1\r\n2\r\n"},
	{"ma c k O", "ms n 1\r\n5\r\nma n c k O1\r\n", "HD\r\nHD c2 kn O1\r\n"},
	{"ma C compares the CAS", "ms n 1\r\n5\r\nma n C9\r\nma n C1 v\r\nma n C0 v\r\n", "HD\r\nEX\r\nVA 1\r\n6\r\nVA 1\r\n7\r\n"},
	{"ma wraps and stops at zero", "ms n 20\r\n18446744073709551615\r\nma n v\r\nma n MD D9 v\r\n", "HD\r\nVA 1\r\n0\r\nVA 1\r\n0\r\n"},
	{"ma of a non-number", "ms n 1\r\nx\r\nma n\r\nma n q\r\nms m 2\r\n-1\r\nma m\r\n",
		"HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nHD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	{"ma bad flags", "ma n Dx\r\nma n D-1\r\nma n Jx\r\nma n x\r\nma n D18446744073709551616\r\n",
		strings.Repeat("CLIENT_ERROR invalid or duplicate flag\r\n", 5)},
	{"ma invalid mode", "ma n Mx\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n"},
	{"ma t and T", "ms n 1 T100\r\n5\r\nma n t T200\r\nma n t\r\nma n T0 t\r\n", "HD\r\nHD t100\r\nHD t200\r\nHD t-1\r\n"},
	{"ma t of a vivified item", "ma d t N10 v\r\nma e N10 t\r\nma f N10 T100 t\r\n", "VA 1 t-1\r\n0\r\nHD t10\r\nHD t100\r\n"},

	{"ms I stores a stale value", "ms a 1\r\nx\r\nmd a I\r\nmg a v c\r\nms a 1 I C1\r\ny\r\nmg a v c\r\nms a 1 I C999\r\nz\r\nmg a v c\r\n",
		"HD\r\nHD\r\nVA 1 c2 X W\r\nx\r\nHD\r\nVA 1 c3 Z X\r\ny\r\nEX\r\nVA 1 c3 Z X\r\ny\r\n"},

	{"me", "ms a 2 T100\r\nhi\r\nme a\r\n", "HD\r\nME a exp=-100 la=0 cas=1 fetch=no cls=1 size=62\r\n"},
	{"me of a fetched item with flags", "ms b 2 F1\r\nhi\r\nmg b\r\nme b x\r\n", "HD\r\nHD\r\nME b exp=-1 la=0 cas=1 fetch=yes cls=1 size=66\r\n"},
	{"me slab class", "ms c 1000\r\n" + strings.Repeat("c", 1000) + "\r\nme c\r\n", "HD\r\nME c exp=-1 la=0 cas=1 fetch=no cls=12 size=1060\r\n"},
	{"me slab class of a chunked item", "ms d 600000\r\n" + strings.Repeat("d", 600000) + "\r\nme d\r\n", "HD\r\nME d exp=-1 la=0 cas=1 fetch=no cls=39 size=600060\r\n"},
	{"me miss and errors", "me zz\r\nme\r\nme !!! b\r\nme " + longKey + "\r\n",
		"EN\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
	{"me base64 key of a text item", "ms a 1\r\nx\r\nme YQ== b\r\n", "HD\r\nME a exp=-1 la=0 cas=1 fetch=no cls=1 size=61\r\n"},
	{"mn", "mn\r\nmn extra\r\n", "MN\r\nMN\r\n"},
}

// metaDiffers names the metaCases skipped against a real memcached.
var metaDiffers = map[string]string{
	"ms C compares the CAS":     "uses the model's CAS numbering",
	"md C compares the CAS":     "uses the model's CAS numbering",
	"ma C compares the CAS":     "uses the model's CAS numbering",
	"ms I stores a stale value": "uses the model's CAS numbering",
}

func TestMetaProtocol(t *testing.T) {
	for _, tc := range metaCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Config{})
			if got := textExchange(t, s.pipe(t), tc.req); got != tc.want {
				t.Errorf("request %q\n got %q\nwant %q", trunc([]byte(tc.req)), got, tc.want)
			}
		})
	}
}

// casToken matches the CAS in meta replies.
var casToken = regexp.MustCompile(`( c|cas=)[0-9]+`)

// TestMetaCasesAgainstMemcached checks metaCases' expectations on a real
// memcached (started by difftest.Memcached), CAS values aside.
func TestMetaCasesAgainstMemcached(t *testing.T) {
	addr := difftest.Memcached(t)
	for _, tc := range metaCases {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := metaDiffers[tc.name]; ok {
				t.Skip(why)
			}
			nc := dialMemcached(t, addr, false)
			got := casToken.ReplaceAllString(textExchange(t, nc, tc.req), "${1}CAS")
			if want := casToken.ReplaceAllString(tc.want, "${1}CAS"); got != want {
				t.Errorf("request %q\n got %q\nwant %q", trunc([]byte(tc.req)), got, want)
			}
		})
	}
}

func TestMetaAges(t *testing.T) {
	s := newTestServer(t, Config{})
	nc := s.pipe(t)
	steps := []struct {
		advance   int64
		req, want string
	}{
		{0, "ms a 1 T100\r\nx\r\n", "HD\r\n"},
		{7, "mg a t l h\r\n", "HD t93 l7 h0\r\n"},
		{3, "mg a l h\r\nme a\r\n", "HD l3 h1\r\nME a exp=-90 la=0 cas=1 fetch=yes cls=1 size=61\r\n"},
		{90, "mg a\r\n", "EN\r\n"},
	}
	for _, st := range steps {
		s.clock.advance(st.advance)
		if got := textExchange(t, nc, st.req); got != st.want {
			t.Fatalf("after %ds, %q\n got %q\nwant %q", s.clock.now()-testNow, st.req, got, st.want)
		}
	}
}
