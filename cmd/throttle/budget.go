package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/hoststore"
	"github.com/throttlekit/throttle/redisbucket"
)

const budgetSynopsis = `budget (--store FILE | --redis URL [--prefix P]) [show | reset KEY ...]

Shows the spend budgets a host's store file (hoststore), or a Redis
server's budget store (redisbucket.NewBudgetStore, its keys under the
prefix P, "budget:" by default; URL as redis://[:password@]host:port/db),
holds: each key
(the budget's name, then "/" and the key of Budget.For if any), the start
of the window its spend is for, and the spend. "reset KEY ..." sets the
spend of each key back to zero, as if its window had just begun.

Examples:
  throttle budget --store /var/lib/myapp/quota reset llm-usd/claude-opus-4
  throttle budget --redis redis://127.0.0.1:6379/0 show`

func runBudget(e *env, args []string) error {
	fs := newFlagSet("budget", budgetSynopsis)
	var storeF, redisF, prefixF stringFlag
	fs.Var(&storeF, "store", "the hoststore `FILE`")
	fs.Var(&redisF, "redis", "the `URL` of the Redis server of a redisbucket budget store")
	fs.Var(&prefixF, "prefix", "with --redis, the `P`refix of the store's keys (default \"budget:\")")
	pos, err := parseArgs(fs, args, e.stdout)
	if err != nil {
		return err
	}
	switch {
	case storeF.set == redisF.set:
		return usagef("give one of --store FILE and --redis URL")
	case storeF.set && storeF.value == "", redisF.set && redisF.value == "":
		return usagef("--store and --redis need a value")
	case prefixF.set && !redisF.set:
		return usagef("--prefix goes with --redis")
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
	s, closeStore, err := openBudgetStore(storeF.value, redisF.value, prefixF.value)
	if err != nil {
		return err
	}
	defer closeStore()
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

// openBudgetStore opens the host store file at path, or else the Redis
// budget store at the URL rawURL, its keys under prefix.
func openBudgetStore(path, rawURL, prefix string) (budget.Store, func() error, error) {
	if path != "" {
		s, err := hoststore.Open(path)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, nil, usagef("--redis %q: %v", rawURL, err)
	}
	c := redis.NewClient(opt)
	return redisbucket.NewBudgetStore(c, prefix), c.Close, nil
}
