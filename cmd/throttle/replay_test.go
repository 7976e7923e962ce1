package main

import (
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestReplay(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		stdin string
		want  string
	}{
		{"reference", "--capacity 2 --rate 1 0 0 0 1 3", "", "true true false true true"},
		{"capacity below one token", "--capacity 0.5 --rate 1 0 1 2 3 10 100", "", "false false false false false false"},
		{"rate 0.1, one request a second", "--capacity 1 --rate 0.1 " + seq(0, 31), "",
			"true" + strings.Repeat(" false", 9) + " true" + strings.Repeat(" false", 9) + " true" + strings.Repeat(" false", 9) + " true"},
		{"capacity 2 rate 0.5", "--capacity 2 --rate 0.5 0 0 1 1.5", "", "true true false false"},
		{"empty list", "--capacity 2 --rate 1", "", ""},
		{"rate as N/DURATION", "--capacity 1 --rate 60/1m 0 0.5 0.999999999 1", "", "true false false true"},
		{"90000/1m", "--capacity 1500 --rate 90000/1m --cost 1500 0 0 0.999999999 1", "", "true false false true"},
		{"bare unit", "--capacity 1 --rate 1/m 0 59.999999999 60", "", "true false true"},
		{"decimal cost", "--capacity 0.5 --rate 1 --cost 0.5 0 0 0.5 1", "", "true false true true"},
		{"time:cost pairs", "--capacity 3 --rate 1 0:2 0:2 1:2 1:1", "", "true false true false"},
		{"pair overrides --cost", "--capacity 3 --rate 1 --cost 3 0:1 0:2 0", "", "true true false"},
		{"zero rate never refills", "--capacity 2 --rate 0 0 0 0 1000", "", "true true false false"},
		{"zero rate as N/D", "--capacity 1 --rate 0/1s 0 5", "", "true false"},
		{"fine rate", "--capacity 1 --rate 0.000001 0 999999.999999999 1000000", "", "true false true"},
		{"exponents", "--capacity 2e0 --rate 1e0 0 0 0 1e0 3e0", "", "true true false true true"},
		{"nanosecond times", "--capacity 1 --rate 1000000000 0 0 1e-9 0.000000001 0.000000002", "", "true false true false true"},
		{"stdin", "--capacity 2 --rate 1 -", "0\n0\n\n# comment\n0\n 1 \n3\n", "true true false true true"},
		{"stdin between arguments", "--capacity 2 --rate 1 0 - 3", "0\n0\n1\n", "true true false true true"},
		{"file on stdin", "--capacity 2 --rate 1 --file -", "0\n0:1\n0\n1\n3\n", "true true false true true"},
		{"flags after times", "0 0 0 1 3 --capacity 2 --rate=1", "", "true true false true true"},
		{"after --", "--capacity 2 --rate 1 -- 0 0", "", "true true"},
		{"equal times", "--capacity 3 --rate 1 5 5 5 5", "", "true true true false"},
		{"refill capped at capacity", "--capacity 2 --rate 1 0 0 100 100 100", "", "true true true true false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tt.stdin, append([]string{"replay"}, strings.Fields(tt.args)...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if stdout != tt.want+"\n" {
				t.Errorf("stdout = %q, want %q", stdout, tt.want+"\n")
			}
		})
	}
}

func TestReplayFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.txt")
	if err := os.WriteFile(path, []byte("0\n0\n0\n1\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCmd(t, "", "replay", "--capacity", "2", "--rate", "1", "--file", path)
	if code != 0 || stdout != "true true false true true\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestReplayErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		stdin string
		want  string // the whole stderr line
	}{
		{"negative time", "--capacity 2 --rate 1 0 -1", "", `argument 2: time "-1": must not be negative`},
		{"non-numeric time", "--capacity 2 --rate 1 abc", "", `argument 1: time "abc": not a decimal number`},
		{"out of order", "--capacity 2 --rate 1 0 2 1", "", `argument 3: time 1 is earlier than the previous request's`},
		{"out of order on stdin", "--capacity 2 --rate 1 -", "2\n1.5\n", `stdin line 2: time 1.5 is earlier than the previous request's`},
		{"cost above capacity", "--capacity 2 --rate 1 --cost 3 0", "", `--cost 3 exceeds --capacity 2`},
		{"pair cost above capacity", "--capacity 2 --rate 1 0 1:2.5", "", `argument 2: cost 2.5 exceeds --capacity 2`},
		{"zero duration", "--capacity 2 --rate 5/0s 0", "", `--rate "5/0s": period must be a positive duration such as 1s, 1m or 1h`},
		{"negative rate", "--capacity 2 --rate -1 0", "", `--rate "-1": must not be negative`},
		{"bad rate", "--capacity 2 --rate fast 0", "", `--rate "fast": not a decimal number`},
		{"zero capacity", "--capacity 0 --rate 1 0", "", `--capacity "0": must be positive`},
		{"negative capacity", "--capacity -2 --rate 1 0", "", `--capacity "-2": must not be negative`},
		{"zero cost", "--capacity 2 --rate 1 --cost 0 0", "", `--cost "0": must be positive`},
		{"zero pair cost", "--capacity 2 --rate 1 0:0", "", `argument 1: cost "0": must be positive`},
		{"missing capacity", "--rate 1 0", "", `--capacity is required`},
		{"missing rate", "--capacity 1 0", "", `--rate is required`},
		{"finer than a nanosecond", "--capacity 1 --rate 1 1e-10", "", `argument 1: time "1e-10": finer than a nanosecond`},
		{"time too large", "--capacity 1 --rate 1 1e10", "", `argument 1: time "1e10": out of range`},
		{"scale overflow", "--capacity 0.5 --rate 1e18 0", "", `--rate 1000000000000000000 is too large: replay counts exactly in tenths of a token, as the finest value given has 1 decimal place, and 10000000000000000000 tenths is more than 64 bits hold (9223372036854775807)`},
		{"whole overflow", "--capacity 5 --rate 1e19 0", "", `--rate 10000000000000000000 is too large: replay counts whole tokens exactly in 64 bits, up to 9223372036854775807`},
		{"unknown flag", "--capacity 1 --rate 1 --burst 3", "", `unknown flag --burst; run with --help for the flags`},
		{"flag without value", "--capacity 1 --rate", "", `flag --rate needs a value`},
		{"both file and arguments", "--capacity 1 --rate 1 --file - 0", "", `give the requests either as arguments or with --file, not both`},
		{"missing file", "--capacity 1 --rate 1 --file /nonexistent/x", "", `--file: open /nonexistent/x: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tt.stdin, append([]string{"replay"}, strings.Fields(tt.args)...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if want := "throttle replay: " + tt.want + "\n"; stderr != want {
				t.Errorf("stderr = %q, want %q", stderr, want)
			}
		})
	}
}

func TestReplayHelp(t *testing.T) {
	for _, h := range []string{"--help", "-h", "-help"} {
		stdout, stderr, code := runCmd(t, "", "replay", h)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage: throttle replay") || !strings.Contains(stdout, "-capacity N") {
			t.Errorf("replay %s: exit %d, stdout %q, stderr %q", h, code, stdout, stderr)
		}
	}
}

// seq returns the integers lo..hi-1 separated by spaces.
func seq(lo, hi int) string {
	var parts []string
	for i := lo; i < hi; i++ {
		parts = append(parts, strconv.Itoa(i))
	}
	return strings.Join(parts, " ")
}

// decimalString renders n / 10^places as a decimal.
func decimalString(n int64, places int) string {
	s := strconv.FormatInt(n, 10)
	if places == 0 {
		return s
	}
	for len(s) <= places {
		s = "0" + s
	}
	return s[:len(s)-places] + "." + s[len(s)-places:]
}

// TestReplayMatchesRationalModel checks replay on random decimal inputs
// against the token bucket computed with exact rationals.
func TestReplayMatchesRationalModel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 500 {
		capN, capP := 1+r.Int64N(50), r.IntN(3)
		rateN, rateP := r.Int64N(40), r.IntN(4)
		var costN int64 = 1
		costP := 0
		useCost := r.IntN(2) == 0
		if useCost {
			costP = r.IntN(3)
			costN = 1 + r.Int64N(capN*pow10i(costP)/pow10i(capP)+1)
		}
		capacity := big.NewRat(capN, pow10i(capP))
		rate := big.NewRat(rateN, pow10i(rateP))
		cost := big.NewRat(costN, pow10i(costP))
		if useCost && cost.Cmp(capacity) > 0 {
			continue // an error, tested elsewhere
		}
		args := []string{"replay", "--capacity", decimalString(capN, capP), "--rate", decimalString(rateN, rateP)}
		if useCost {
			args = append(args, "--cost", decimalString(costN, costP))
		}
		// Times in ms with up to 3 decimals, gaps clustered around the
		// time one cost takes to refill.
		level := new(big.Rat).Set(capacity)
		var prevMS int64
		var want []string
		for range r.IntN(40) {
			prevMS += r.Int64N(3000)
			at := decimalString(prevMS, 3)
			args = append(args, at)
			want = append(want, "")
		}
		// The model, over the same times.
		var last *big.Rat
		times := args[len(args)-len(want):]
		for i, ts := range times {
			at, _ := new(big.Rat).SetString(ts)
			if last != nil {
				level.Add(level, new(big.Rat).Mul(rate, new(big.Rat).Sub(at, last)))
				if level.Cmp(capacity) > 0 {
					level.Set(capacity)
				}
			}
			last = at
			ok := level.Cmp(cost) >= 0
			if ok {
				level.Sub(level, cost)
			}
			want[i] = strconv.FormatBool(ok)
		}
		stdout, stderr, code := runCmd(t, "", args...)
		if code != 0 {
			t.Fatalf("trial %d: %v: exit %d: %s", trial, args, code, stderr)
		}
		if got := strings.TrimSuffix(stdout, "\n"); got != strings.Join(want, " ") {
			t.Fatalf("trial %d: %v\n got %s\nwant %s", trial, args, got, strings.Join(want, " "))
		}
	}
}

func pow10i(k int) int64 {
	p := int64(1)
	for range k {
		p *= 10
	}
	return p
}

func FuzzReplay(f *testing.F) {
	f.Add("2", "1", "", "0 0 0 1 3")
	f.Add("0.5", "0.1", "", "0 1 10")
	f.Add("2", "90000/1m", "0.5", "0:1 0.5:2 1e-9")
	f.Add("1", "5/0s", "", "1")
	f.Add("3", "1", "4", "-1 x 2 1")
	f.Fuzz(func(t *testing.T, capacity, rate, cost, times string) {
		args := []string{"replay", "--capacity", capacity, "--rate", rate}
		if cost != "" {
			args = append(args, "--cost", cost)
		}
		fields := strings.Fields(times)
		if len(fields) > 200 {
			return
		}
		for _, f := range fields {
			if f == "-" || strings.HasPrefix(f, "--") {
				return // stdin, or flags of the fuzzer's making
			}
		}
		args = append(args, "--")
		args = append(args, fields...)
		stdout, stderr, code := runCmd(t, "", args...)
		switch code {
		case 0:
			if stderr != "" || len(strings.Fields(stdout)) != len(fields) || !strings.HasSuffix(stdout, "\n") {
				t.Fatalf("%q: stdout %q, stderr %q", args, stdout, stderr)
			}
		case 2:
			if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "throttle replay: ") {
				t.Fatalf("%q: exit 2 with stdout %q, stderr %q", args, stdout, stderr)
			}
		default:
			t.Fatalf("%q: exit %d, stderr %q", args, code, stderr)
		}
	})
}
