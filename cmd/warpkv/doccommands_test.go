package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocCommandsParse checks that every warpkv command line that README.md
// and BENCHMARKS.md show (in code blocks and inline code) names a command
// that exists and flags that its real flag set defines, with values it
// accepts. Each command is run in parse-only mode (env.parseOnly): it stops
// once its flags are parsed, so nothing is served or measured, and a
// command added later is checked through its own flags.
func TestDocCommandsParse(t *testing.T) {
	n := 0
	for _, doc := range []string{"README.md", "BENCHMARKS.md"} {
		path := filepath.Join("..", "..", doc)
		for _, dc := range docCommands(t, path) {
			n++
			if err := parseCheck(dc.words, dc.synopsis); err != nil {
				t.Errorf("%s:%d: warpkv %s: %v", doc, dc.line, strings.Join(dc.words, " "), err)
			}
		}
	}
	if n < 20 {
		t.Errorf("found only %d warpkv command lines in README.md and BENCHMARKS.md", n)
	}
}

// TestParseCheck checks the checker itself on good and bad command lines.
func TestParseCheck(t *testing.T) {
	for _, tc := range []struct {
		line     string
		synopsis bool
		ok       bool
	}{
		{"serve -p 11211 -m 64", false, true},
		{"serve --metrics-addr 127.0.0.1:9150", false, true},
		{"serve --no-such-flag", false, false},
		{"serve -p notaport", false, false},
		{"serve -p N", false, true}, // placeholder value
		{"frobnicate", false, false},
		{"bench art --device gpu --size 100 --json FILE", false, true},
		{"bench art --sise 100", false, false},
		{"bench serve --engines cpu -- --multiget 10 --duration 2s", false, true},
		{"bench serve -- --multigets 10", false, false},
		{"bench plot a.json b.json -o x.svg --log", false, true},
		{"mpt prove --secure FILE HEXKEY", false, true},
		{"bench btree [--device auto|cpu|gpu|gpu:N] [--size N] [--json FILE]", true, true},
		{"bench btree [--devices auto] [--size N]", true, false},
		{"bench btrees --size 1", false, false},
		{"bench serve --report", false, true},
		{"bench serve --reports", false, false},
		{"serve -t N --device ...", true, true},
		{"mpt", false, true},
		{"loadgen --addr HOST:PORT [--workloads a,b] [--rate OPS | --p99-at F]", true, true},
		{"bench serve [--engines gpu,cpu] -- [loadgen flags, e.g. --multiget 10]", true, true},
	} {
		err := parseCheck(splitWords(tc.line), tc.synopsis)
		if (err == nil) != tc.ok {
			t.Errorf("parseCheck(%q) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
}

// docCommand is a warpkv command line found in a document.
type docCommand struct {
	line     int
	words    []string // after "warpkv"
	synopsis bool     // a usage synopsis: [optional] parts, placeholders
}

// warpkvRE finds an invocation of warpkv: "go run ./cmd/warpkv", a path
// ending in /warpkv, or a bare warpkv, then its arguments.
var warpkvRE = regexp.MustCompile(`(?:go run \./cmd/warpkv|(?:^|[\s(])(?:[\w.$/-]*/)?warpkv)\s+([a-z].*)$`)

// docCommands returns the warpkv command lines of a Markdown file: lines of
// fenced code blocks, and inline code spans.
func docCommands(t *testing.T, path string) []docCommand {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	add := func(line int, text string) {
		m := warpkvRE.FindStringSubmatch(text)
		if m == nil {
			return
		}
		rest := m[1]
		syn := strings.ContainsAny(rest, "[<") || strings.Contains(rest, "...")
		words := splitWords(rest)
		var kept []string
		for _, w := range words {
			if w == "&&" || w == ";" || w == "&" || strings.HasPrefix(w, "#") || strings.HasPrefix(w, ">") ||
				strings.HasPrefix(w, "2>") || w == ")" || (w == "|" && !syn) {
				break
			}
			kept = append(kept, w)
		}
		if len(kept) > 0 {
			out = append(out, docCommand{line, kept, syn})
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inCode := false
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			add(n, text)
			continue
		}
		spans := strings.Split(text, "`")
		for i := 1; i < len(spans); i += 2 {
			if strings.HasPrefix(spans[i], "warpkv ") || strings.Contains(spans[i], "/warpkv ") || strings.HasPrefix(spans[i], "go run ./cmd/warpkv ") {
				add(n, spans[i])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitWords splits a shell command line into words, honouring single and
// double quotes.
func splitWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// placeholderRE matches a placeholder value such as N, FILE or HOST:PORT.
var placeholderRE = regexp.MustCompile(`^[A-Z][A-Z0-9_:.,-]*$`)

// flagNameRE finds the flags a synopsis names.
var flagNameRE = regexp.MustCompile(`(?:^|[\[|\s])--?([a-zA-Z][\w-]*)`)

// parseCheck parses warpkv's command line words as the binary would, in
// parse-only mode. A placeholder value (N, FILE) passes for any flag type.
// A synopsis ("bench btree [--size N] ...") is checked by parsing the words
// before its first optional part and looking up every flag it names. After
// bench serve's "--", the words are checked as loadgen flags.
func parseCheck(words []string, synopsis bool) error {
	if len(words) == 0 {
		return errors.New("no command")
	}
	c, ok := lookup(words[0])
	if !ok {
		return fmt.Errorf("unknown command %q", words[0])
	}
	args := append([]string(nil), words[1:]...)
	var named []string
	if synopsis {
		for i, w := range args {
			if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "<") || strings.Contains(w, "...") || w == "--" {
				rest, _, _ := strings.Cut(strings.Join(args[i:], " "), " -- ") // loadgen's flags follow
				for _, m := range flagNameRE.FindAllStringSubmatch(rest, -1) {
					named = append(named, m[1])
				}
				args = args[:i]
				break
			}
		}
	}
	if c.name == "bench" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if !slices.Contains(append(suiteNames(), "plot", "floor"), args[0]) {
			return fmt.Errorf("unknown bench suite %q", args[0])
		}
	}
	var loadgenArgs []string
	if c.name == "bench" && len(args) > 0 && args[0] == "serve" && !synopsis {
		for i, a := range args {
			if a == "--" {
				args, loadgenArgs = args[:i], args[i+1:]
				break
			}
		}
	}
	for attempt := 0; ; attempt++ {
		fs, err := parseOnce(c, args)
		if err != nil && len(args) > 0 && strings.HasPrefix(err.Error(), "flag needs an argument: ") &&
			strings.TrimLeft(args[len(args)-1], "-") == strings.TrimPrefix(err.Error(), "flag needs an argument: -") {
			// The text names a flag without its value ("bench serve
			// --report"): the flag must exist.
			named = append(named, strings.TrimLeft(args[len(args)-1], "-"))
			args = args[:len(args)-1]
			continue
		}
		var ue *usageError
		if err != nil && fs == nil && errors.As(err, &ue) && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
			// A mention of a command with subcommands ("warpkv mpt",
			// "warpkv art"): the command exists.
			return nil
		}
		if err != nil {
			// A placeholder value that the flag's type refuses: give it
			// a value of that type and parse again.
			if fixed, ok := fillPlaceholder(fs, args, err); ok && attempt < len(args) {
				args = fixed
				continue
			}
			return err
		}
		if fs == nil {
			if len(named) > 0 {
				return fmt.Errorf("names flags %v but takes none", named)
			}
			break
		}
		for _, name := range named {
			if fs.Lookup(name) == nil {
				return fmt.Errorf("flag -%s is not defined by %s", name, fs.Name())
			}
		}
		break
	}
	if len(loadgenArgs) > 0 {
		if err := parseCheck(append([]string{"loadgen", "--addr", "127.0.0.1:1"}, loadgenArgs...), false); err != nil {
			return fmt.Errorf("loadgen flags after --: %w", err)
		}
	}
	return nil
}

// parseOnce runs command c in parse-only mode, then parses what its first
// parse left as the commands that take flags after arguments do (the
// first word dropped, the rest parsed again). It returns the flag set (nil
// for a command without flags) and the first parse error.
func parseOnce(c command, args []string) (*flag.FlagSet, error) {
	e := &env{stdout: io.Discard, stderr: io.Discard, parseOnly: true}
	err := c.run(e, args)
	var p *parsedOnly
	if !errors.As(err, &p) {
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, nil
	}
	if p.err != nil {
		return p.fs, p.err
	}
	for rest := p.fs.Args(); len(rest) > 1; rest = p.fs.Args() {
		if err := p.fs.Parse(rest[1:]); err != nil {
			return p.fs, err
		}
	}
	return p.fs, nil
}

// invalidValueRE matches the flag package's error for a value a flag
// refuses.
var invalidValueRE = regexp.MustCompile(`^invalid value "([^"]*)" for flag -([\w-]+)`)

// fillPlaceholder replaces the placeholder value that err names with one
// that flag's type accepts.
func fillPlaceholder(fs *flag.FlagSet, args []string, err error) ([]string, bool) {
	m := invalidValueRE.FindStringSubmatch(err.Error())
	if m == nil || fs == nil || !placeholderRE.MatchString(m[1]) {
		return nil, false
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return nil, false
	}
	for _, v := range []string{"1", "1s", "0.5", "1-2", "a", "true"} {
		if f.Value.Set(v) == nil {
			out := append([]string(nil), args...)
			for i, a := range out {
				if a == m[1] {
					out[i] = v
					return out, true
				}
				if name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok && name == m[2] && val == m[1] {
					out[i] = a[:len(a)-len(val)] + v
					return out, true
				}
			}
		}
	}
	return nil, false
}
