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
}

// env is where a command writes: results to stdout, progress, usage and
// errors to stderr.
type env struct {
	stdout, stderr io.Writer
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
		{"version", "print the warpkv, Go, CUDA driver and NVRTC versions", runVersion},
		{"devices", "list the GPUs warpkv can use, or say why none is usable", runDevices},
		{"serve", "serve the Mega-KV memcached-compatible store on 127.0.0.1:11211", runServe},
		{"bench", "run a benchmark suite: warpkv bench limits|prim|index|mpt|btree|stm|art [flags], or warpkv bench serve (warpkv against memcached)", runBench},
		{"loadgen", "load memcached-compatible servers and compare them: warpkv loadgen --addr A [--addr B]", runLoadgen},
		{"mpt", "Merkle Patricia Trie: warpkv mpt root|prove [--secure] FILE [HEXKEY]", runMPT},
		{"stm", "transactional memory (CSMV): warpkv stm bank [--device D] [--accounts N] [--transactions N | --duration D] ...", runSTM},
		{"art", "adaptive radix tree (CuART): warpkv art run [--device D] [--batch N] FILE applies put/upd/del/get/range/prefix/len lines", runART},
		{"help", "show help for warpkv or one command: warpkv help [command]", runHelp},
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
	err := c.run(e, args[1:])
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
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n", synopsis)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(e.stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args into fs, turning flag errors into usage errors (the
// FlagSet has already printed the message and usage).
func parse(fs *flag.FlagSet, args []string) error {
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
	fmt.Fprintln(w, "\nRun \"warpkv help <command>\" for the flags of a command.")
}

// runHelp prints the overall usage, or the usage of one command.
func runHelp(e *env, args []string) error {
	switch len(args) {
	case 0:
		printUsage(e.stdout)
		return nil
	case 1:
		c, ok := lookup(args[0])
		if !ok {
			return usagef("unknown command %q", args[0])
		}
		if c.name == "help" {
			printUsage(e.stdout)
			return nil
		}
		return c.run(&env{stdout: e.stdout, stderr: e.stdout}, []string{"-h"})
	default:
		return usagef("help takes at most one command")
	}
}
