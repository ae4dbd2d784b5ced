// Command warpkv is the command-line front end of warpkv: it reports the
// GPUs it can use, runs the benchmarks, and serves the
// Mega-KV memcached-compatible store.
//
// Usage:
//
//	warpkv <command> [flags] [arguments]
//
// Run "warpkv help" for the list of commands and "warpkv help <command>"
// for the flags of one.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand. run parses its own flags from args with a
// FlagSet of its own that writes usage to env.stderr.
type command struct {
	name    string
	summary string
	run     func(env *env, args []string) error
	// help lists, for a command with subcommands whose flags differ, the
	// argument lists that make run print each subcommand's usage ("root",
	// "-h"); nil means run(-h) prints the command's usage.
	help [][]string
}

// env is where a command writes: results to stdout, progress, usage and
// errors to stderr.
type env struct {
	stdout, stderr io.Writer
	// parseOnly makes every command stop after its first successful flag
	// parse, returning *parsedOnly (see parseCheck).
	parseOnly bool
}

// parseOnlyFlag marks the flag sets of an env with parseOnly.
const parseOnlyFlag = "warpkv-parse-only"

// parsedOnly is what a command returns, under env.parseOnly, once its
// flags are parsed: the flag set (its Args are the arguments left) and the
// parse error.
type parsedOnly struct {
	fs  *flag.FlagSet
	err error
}

func (p *parsedOnly) Error() string {
	if p.err != nil {
		return p.err.Error()
	}
	return "parsed only"
}

// usageError is a mistake on the command line; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// commands returns the subcommands in the order help lists them.
func commands() []command {
	return []command{
		{"version", "print the warpkv, Go, CUDA driver and NVRTC versions", runVersion, nil},
		{"devices", "list the GPUs warpkv can use, or say why none is usable", runDevices, nil},
		{"serve", "serve the Mega-KV memcached-compatible store on 127.0.0.1:11211", runServe, nil},
		{"bench", "run a benchmark suite: warpkv bench " + strings.Join(suiteNames(), "|") + " [flags]", runBench, nil},
		{"loadgen", "load memcached-compatible servers and compare them: warpkv loadgen --addr A [--addr B]", runLoadgen, nil},
		{"mpt", "Merkle Patricia Trie: warpkv mpt root|prove [--secure] FILE [HEXKEY]", runMPT, [][]string{{"root", "-h"}, {"prove", "-h"}}},
		{"stm", "transactional memory (CSMV): warpkv stm bank [--device D] [--accounts N] ... | warpkv stm run --body FILE.cu [--items N] ...", runSTM, [][]string{{"bank", "-h"}, {"run", "-h"}}},
		{"btree", "B+ tree (CUBPT): warpkv btree run [--device D] [--batch N] FILE applies put/upd/del/get/range/len lines (decimal keys)", runBTree, [][]string{{"run", "-h"}}},
		{"art", "adaptive radix tree (CuART): warpkv art run [--device D] [--batch N] FILE applies put/upd/del/get/range/prefix/len lines", runART, [][]string{{"run", "-h"}}},
		{"help", "show help for warpkv, one command or one subcommand: warpkv help [command [subcommand]]", runHelp, nil},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run executes the command line args (without the program name) and
// returns the exit status: 0 success, 1 failure, 2 usage error.
func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "warpkv: unknown command %q\n\n", name)
		printUsage(stderr)
		return 2
	}
	var err error
	if len(args) == 2 && isHelpFlag(args[1]) && c.help != nil {
		err = printHelp(c, e) // "warpkv mpt --help": every subcommand's usage
	} else {
		err = c.run(e, args[1:])
	}
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "warpkv %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "warpkv: %v\n", err)
		return 1
	}
}

// newFlagSet returns a FlagSet for a command whose usage starts with the
// given synopsis lines.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("warpkv "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if e.parseOnly {
		fs.Bool(parseOnlyFlag, true, "stop after parsing (tests)")
	}
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n", synopsis)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(e.stderr, "\nflags:")
			out := fs.Output()
			fs.SetOutput(e.stderr)
			fs.PrintDefaults()
			fs.SetOutput(out)
		}
	}
	return fs
}

// parse parses args into fs, turning flag errors into usage errors: the
// FlagSet prints the usage, and run prints the error once (the FlagSet's
// own copy of the message is dropped).
func parse(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	if fs.Lookup(parseOnlyFlag) != nil {
		return &parsedOnly{fs: fs, err: fs.Parse(args)}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "warpkv: GPU-accelerated in-memory indexes and key-value store")
	fmt.Fprintln(w, "\nusage: warpkv <command> [flags] [arguments]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"warpkv help <command> [<subcommand>]\" for the flags of a command.")
}

// runHelp prints the overall usage, the usage and flags of one command, or
// those of one subcommand ("warpkv help stm bank", "warpkv help bench art").
func runHelp(e *env, args []string) error {
	if len(args) == 0 {
		printUsage(e.stdout)
		return nil
	}
	if len(args) > 2 {
		return usagef("help takes at most a command and a subcommand, got %q", strings.Join(args, " "))
	}
	c, ok := lookup(args[0])
	if !ok {
		return usagef("unknown command %q", args[0])
	}
	if c.name == "help" {
		printUsage(e.stdout)
		return nil
	}
	out := &env{stdout: e.stdout, stderr: e.stdout}
	if len(args) == 1 {
		return printHelp(c, out)
	}
	subs := subcommands(c)
	if !slices.Contains(subs, args[1]) {
		if len(subs) == 0 {
			return usagef("%s has no subcommands (warpkv help %s)", c.name, c.name)
		}
		return usagef("unknown %s subcommand %q (want %s)", c.name, args[1], strings.Join(subs, ", "))
	}
	return printHelp(command{name: c.name, run: c.run, help: [][]string{{args[1], "-h"}}}, out)
}

// subcommands returns the subcommands of command c that "warpkv help CMD
// SUBCMD" documents one at a time: the first word of each of c.help's
// argument lists, or bench's suites, plot and floor.
func subcommands(c command) []string {
	if c.name == "bench" {
		return append(suiteNames(), "plot", "floor")
	}
	var out []string
	for _, args := range c.help {
		out = append(out, args[0])
	}
	return out
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// printHelp prints the usage and flags of command c to e.stderr: its
// run(-h), or for a command with subcommands each one's in turn. Help is
// not an error.
func printHelp(c command, e *env) error {
	lists := c.help
	if lists == nil {
		lists = [][]string{{"-h"}}
	}
	for i, args := range lists {
		if i > 0 {
			fmt.Fprintln(e.stderr)
		}
		if err := c.run(e, args); err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
	}
	return nil
}
