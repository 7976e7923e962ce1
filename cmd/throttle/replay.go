package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
)

const replaySynopsis = `replay --capacity N --rate R [--cost C] [--file FILE] [TIME[:COST] ...]

Prints, on one line, whether each request passes a token bucket that starts
full. Times are decimal seconds since the start, never decreasing; a "-"
argument reads more times from stdin, one TIME or TIME:COST per line.
Decimal inputs are exact: they are scaled to whole units, never rounded.
A request whose default cost of 1 exceeds a capacity below 1 never passes;
an explicit cost above the capacity is an error.

Example: throttle replay --capacity 2 --rate 1 0 0 0 1 3
prints:  true true false true true`

// replayEntry is one request of a replay: its time and, if given, its cost.
type replayEntry struct {
	at      time.Duration
	cost    trace.Decimal
	hasCost bool
	name    string // how to name the entry in an error
}

// replayConfig is a replay's bucket, as written.
type replayConfig struct {
	capacity trace.Decimal
	rate     trace.Rate
	cost     trace.Decimal // default cost of a request
	hasCost  bool          // --cost was given
}

func runReplay(e *env, args []string) error {
	fs := newFlagSet("replay", replaySynopsis)
	var capF, rateF, costF, fileF stringFlag
	fs.Var(&capF, "capacity", "bucket capacity `N` in tokens, a decimal such as 2 or 0.5 (required)")
	fs.Var(&rateF, "rate", "refill rate `R`: tokens per second as a decimal (0.1), or N/DURATION (90000/1m) (required)")
	fs.Var(&costF, "cost", "cost `C` of each request without its own :COST, a decimal (default 1)")
	fs.Var(&fileF, "file", "read the requests from `FILE`, one TIME or TIME:COST per line (- for stdin)")
	pos, err := parseArgs(fs, args, e.stdout)
	if err != nil {
		return err
	}
	cfg, err := parseReplayConfig(capF, rateF, costF)
	if err != nil {
		return err
	}
	var entries []replayEntry
	if fileF.set {
		if len(pos) > 0 {
			return usagef("give the requests either as arguments or with --file, not both")
		}
		if entries, err = readReplayFile(e, fileF.value); err != nil {
			return err
		}
	} else {
		for i, a := range pos {
			if a == "-" {
				more, err := readReplayEntries(e.stdin, "stdin")
				if err != nil {
					return err
				}
				entries = append(entries, more...)
				continue
			}
			en, err := parseReplayEntry(a, fmt.Sprintf("argument %d", i+1))
			if err != nil {
				return err
			}
			entries = append(entries, en)
		}
	}
	got, err := replay(cfg, entries)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	for i, ok := range got {
		if i > 0 {
			w.WriteByte(' ')
		}
		w.WriteString(strconv.FormatBool(ok))
	}
	w.WriteByte('\n')
	return w.Flush()
}

func parseReplayConfig(capF, rateF, costF stringFlag) (replayConfig, error) {
	var cfg replayConfig
	if !capF.set {
		return cfg, usagef("--capacity is required")
	}
	if !rateF.set {
		return cfg, usagef("--rate is required")
	}
	var err error
	if cfg.capacity, err = trace.ParseDecimal(capF.value); err != nil {
		return cfg, usagef("--capacity %q: %v", capF.value, err)
	}
	if cfg.capacity.IsZero() {
		return cfg, usagef("--capacity %q: must be positive", capF.value)
	}
	if cfg.rate, err = trace.ParseRate(rateF.value); err != nil {
		return cfg, usagef("--rate %q: %v", rateF.value, err)
	}
	cfg.cost = trace.Decimal{Coef: 1}
	if costF.set {
		if cfg.cost, err = trace.ParseDecimal(costF.value); err != nil {
			return cfg, usagef("--cost %q: %v", costF.value, err)
		}
		if cfg.cost.IsZero() {
			return cfg, usagef("--cost %q: must be positive", costF.value)
		}
		cfg.hasCost = true
	}
	return cfg, nil
}

// parseReplayEntry parses TIME or TIME:COST.
func parseReplayEntry(s, name string) (replayEntry, error) {
	ts, cs, hasCost := strings.Cut(s, ":")
	en := replayEntry{name: name, hasCost: hasCost}
	var err error
	if en.at, err = trace.ParseSeconds(ts); err != nil {
		return en, usagef("%s: time %q: %v", name, ts, err)
	}
	if hasCost {
		if en.cost, err = trace.ParseDecimal(cs); err != nil {
			return en, usagef("%s: cost %q: %v", name, cs, err)
		}
		if en.cost.IsZero() {
			return en, usagef("%s: cost %q: must be positive", name, cs)
		}
	}
	return en, nil
}

func readReplayFile(e *env, path string) ([]replayEntry, error) {
	if path == "-" {
		return readReplayEntries(e.stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--file: %v", err)
	}
	defer f.Close()
	return readReplayEntries(f, path)
}

// readReplayEntries reads one entry per line; blank lines and lines
// starting with '#' are skipped.
func readReplayEntries(r io.Reader, source string) ([]replayEntry, error) {
	var out []replayEntry
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if line == 1 {
			// A file saved by a spreadsheet starts with a byte-order mark.
			s = strings.TrimPrefix(s, "\ufeff")
		}
		s = strings.TrimSpace(s)
		if s == "" || s[0] == '#' {
			continue
		}
		en, err := parseReplayEntry(s, fmt.Sprintf("%s line %d", source, line))
		if err != nil {
			return nil, err
		}
		out = append(out, en)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	return out, nil
}

// replay decides every entry against a bucket built from cfg, on a fake
// clock moved to each entry's time. Capacity, rate and costs are all
// multiplied by 10^k, k being the most decimal places any of them has, so
// the bucket sees whole numbers and decides exactly. Every input is checked
// before the first decision, so an error never follows partial output.
func replay(cfg replayConfig, entries []replayEntry) ([]bool, error) {
	k := max(cfg.capacity.Places(), cfg.rate.Tokens.Places(), cfg.cost.Places())
	for _, en := range entries {
		if en.hasCost {
			k = max(k, en.cost.Places())
		}
	}
	scaleErr := func(what string, d trace.Decimal, _ error) error {
		if k == 0 {
			return usagef("%s %s is too large: replay counts whole tokens exactly in 64 bits, up to %d", what, d, int64(math.MaxInt64))
		}
		return usagef("%s %s is too large: replay counts exactly in %s of a token, as the finest value given has %s, and %s %s is more than 64 bits hold (%d)",
			what, d, fractionName(k), plural(uint64(k), "decimal place"), trace.Decimal{Coef: d.Coef, Exp: d.Exp + int32(k)}, fractionName(k), int64(math.MaxInt64))
	}
	capacity, err := cfg.capacity.Scaled(k)
	if err != nil {
		return nil, scaleErr("--capacity", cfg.capacity, err)
	}
	tokens, err := cfg.rate.Tokens.Scaled(k)
	if err != nil {
		return nil, scaleErr("--rate", cfg.rate.Tokens, err)
	}
	defCost, err := cfg.cost.Scaled(k)
	if err != nil {
		return nil, scaleErr("--cost", cfg.cost, err)
	}
	if cfg.hasCost && defCost > capacity {
		return nil, usagef("--cost %s exceeds --capacity %s", cfg.cost, cfg.capacity)
	}
	costs := make([]int64, len(entries))
	var prev time.Duration
	for i, en := range entries {
		if en.at < prev {
			return nil, usagef("%s: time %v is earlier than the previous request's", en.name, seconds(en.at))
		}
		prev = en.at
		costs[i] = defCost
		if en.hasCost {
			if costs[i], err = en.cost.Scaled(k); err != nil {
				return nil, scaleErr(en.name+": cost", en.cost, err)
			}
			if costs[i] > capacity {
				return nil, usagef("%s: cost %s exceeds --capacity %s", en.name, en.cost, cfg.capacity)
			}
		}
	}

	clock := clockwork.NewFakeClockAt(time.Unix(0, 0))
	b, err := throttle.New(capacity, throttle.Per(tokens, cfg.rate.Period), throttle.WithClock(clock))
	if err != nil {
		return nil, usagef("%v", err)
	}
	out := make([]bool, len(entries))
	var now time.Duration
	for i, en := range entries {
		clock.Advance(en.at - now)
		now = en.at
		if costs[i] > capacity {
			// Only the default cost of 1 gets here, against a capacity
			// below 1: such a bucket never holds a whole token.
			continue
		}
		ok, err := b.TryAcquire(costs[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", en.name, err)
		}
		out[i] = ok
	}
	return out, nil
}

// seconds formats d as decimal seconds, exactly.
func seconds(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if ns := d % time.Second; ns != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", int64(ns)), "0")
	}
	return s
}

// fractionName names the unit 10^-k: tenths, hundredths, ...
func fractionName(k int) string {
	switch k {
	case 1:
		return "tenths"
	case 2:
		return "hundredths"
	case 3:
		return "thousandths"
	case 6:
		return "millionths"
	case 9:
		return "billionths"
	}
	return fmt.Sprintf("units of 10^-%d", k)
}
