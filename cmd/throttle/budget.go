package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/throttlekit/throttle/hoststore"
)

const budgetSynopsis = `budget --store FILE [show | reset KEY ...]

Shows the spend budgets a host's store file (hoststore) holds: each key
(the budget's name, then "/" and the key of Budget.For if any), the start
of the window its spend is for, and the spend. "reset KEY ..." sets the
spend of each key back to zero, as if its window had just begun.

Example: throttle budget --store /var/lib/myapp/quota reset llm-usd/claude-opus-4`

func runBudget(e *env, args []string) error {
	fs := newFlagSet("budget", budgetSynopsis)
	var storeF stringFlag
	fs.Var(&storeF, "store", "the hoststore `FILE` (required)")
	pos, err := parseArgs(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if !storeF.set || storeF.value == "" {
		return usagef("--store FILE is required")
	}
	verb := "show"
	if len(pos) > 0 {
		verb, pos = pos[0], pos[1:]
	}
	switch {
	case verb == "show" && len(pos) > 0:
		return usagef("show takes no arguments, got %q", pos)
	case verb == "reset" && len(pos) == 0:
		return usagef("reset needs the KEY of each budget to reset")
	case verb != "show" && verb != "reset":
		return usagef("unknown action %q: want show or reset", verb)
	}
	s, err := hoststore.Open(storeF.value)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, k := range pos {
		if err := s.Reset(e.ctx, k); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "reset %s\n", k)
	}
	if verb == "reset" {
		return nil
	}
	entries, err := s.Entries(e.ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tWINDOW\tSPENT")
	for _, en := range entries {
		win := "-"
		if en.Window.UnixNano() != 0 {
			win = en.Window.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\n", en.Key, win, en.Spent)
	}
	return w.Flush()
}
