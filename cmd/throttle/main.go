// Command throttle checks and chooses rate limits with the throttle library.
//
// Usage:
//
//	throttle budget   --store FILE [show | reset KEY ...]
//	throttle demo     [--chart out.svg]
//	throttle replay   --capacity N --rate R [--cost C] [TIME[:COST] ...]
//	throttle simulate --limit NAME=RATE[,burst=N][,per=request|cost] ... [--mode wait|reject] [--compare] [--chart out.svg] TRACE.csv
//	throttle help COMMAND
//	throttle --version
//
// Run "throttle COMMAND --help" (or "throttle help COMMAND") for the flags
// of each command. Bad input
// gets a one-line error on stderr and exit status 2; a failure while running
// gets exit status 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command reads and writes, so tests can run it in-process.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(e *env, args []string) error
}

func commands() []command {
	return []command{
		{"budget", "show and reset the spend budgets of a host's store file", runBudget},
		{"demo", "run a plain and a throttled HTTP client against a local fake vendor", runDemo},
		{"replay", "print whether each request of a list passes a token bucket", runReplay},
		{"simulate", "replay a CSV trace against one or several limits and summarise", runSimulate},
	}
}

// usageError is bad input: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errHelp asks for exit status 0 after help was printed.
var errHelp = errors.New("help requested")

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A panic is a bug, but the user still gets one line, not a trace.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "throttle: internal error: %v\n", r)
			code = 1
		}
	}()
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	case "help":
		if len(args) == 1 {
			printUsage(stdout)
			return 0
		}
		// "throttle help demo" is "throttle demo --help".
		args = []string{args[1], "--help"}
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version())
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		if !chartsBuiltIn && wantsChart(args[1:]) {
			return runChartBuild(e, args)
		}
		err := c.run(e, args[1:])
		var ue *usageError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, errHelp):
			return 0
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "throttle %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "throttle %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "throttle: unknown command %q; run \"throttle --help\"\n", args[0])
	return 2
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: throttle COMMAND [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "throttle help COMMAND" or "throttle COMMAND --help" for a command's flags,`)
	fmt.Fprintln(w, `"throttle --version" for the version.`)
}
