package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseArgs sets the flags of fs from args and returns the positional
// arguments. Unlike fs.Parse it lets flags and positional arguments mix,
// and it takes an argument that looks like a negative number ("-1", "-0.5")
// as positional, so that a negative time is reported as a bad time rather
// than an unknown flag. "--" ends the flags. --help prints the usage to
// stdout and returns errHelp; every other problem is a usageError.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' || looksNegative(a) {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, value, hasValue := strings.Cut(name, "=")
		if name == "h" || name == "help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, errHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, usagef("unknown flag %s; run with --help for the flags", a)
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, usagef("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, usagef("--%s %q: %v", name, value, err)
		}
	}
	return pos, nil
}

// looksNegative reports whether a is a minus sign followed by a digit or a
// point: a negative number, not a flag.
func looksNegative(a string) bool {
	return len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.')
}

// newFlagSet returns a FlagSet whose usage prints synopsis, then the flags.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: throttle %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// stringFlag is a string flag that records whether it was given, for
// flags whose default differs in meaning from an explicit value.
type stringFlag struct {
	value string
	set   bool
}

func (s *stringFlag) String() string { return s.value }

func (s *stringFlag) Set(v string) error {
	s.value, s.set = v, true
	return nil
}
