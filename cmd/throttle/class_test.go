package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
)

// teamsTrace: search and batch ask for 3000 tokens every 100 ms for a
// minute; chat is idle for the first 30 s, then does the same.
func teamsTrace() string {
	var b strings.Builder
	b.WriteString("time,cost,key\n")
	for i := range 600 {
		t := float64(i) / 10
		fmt.Fprintf(&b, "%.1f,3000,search\n%.1f,3000,batch\n", t, t)
		if t >= 30 {
			fmt.Fprintf(&b, "%.1f,3000,chat\n", t)
		}
	}
	return b.String()
}

func TestSimulateClassesGolden(t *testing.T) {
	args := strings.Fields("simulate --limit tokens=200000/1m --class search=100000/1m --class chat=60000/1m --class batch=40000/1m,ceil=200000/1m -")
	stdout, stderr, code := runCmd(t, teamsTrace(), args...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	golden(t, "classes_reject.golden", stdout)
}

// TestSimulateClassesNested puts two classes under a team.
func TestSimulateClassesNested(t *testing.T) {
	args := strings.Fields("simulate --limit tokens=100/1s --class team=60/1s --class x=30/1s,parent=team --class y=30/1s,parent=team --class other=40/1s -")
	stdout, stderr, code := runCmd(t, "0,30,x\n0,30,x\n0,30,y\n0,40,other\n0,1,x\n", args...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// x: its own 30, then nothing: team's 60 are x's and y's.
	for _, want := range []string{"x      30/1s       team    3         1         2", "y      30/1s       team    1         1", "team   60/1s       tokens  0         0         0         60"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s", want, stdout)
		}
	}
}

func TestSimulateClassesErrors(t *testing.T) {
	tests := []struct{ name, args, stdin, want string }{
		{"two limits", "--limit a=1/1s --limit b=1/1s --class c=1/1s -", "", `--class needs exactly one --limit, the quota the classes share; got 2`},
		{"wait mode", "--mode wait --limit a=10/1s --class c=1/1s -", "", `--class replays in --mode reject only (TryAcquire at each arrival)`},
		{"unknown parent", "--limit a=10/1s --class c=1/1s,parent=z -", "", `--class c: parent "z" is not a class given before it`},
		{"above the quota", "--limit a=10/1s --class c=11/1s -", "", `--class c: htb: NewClass "c": guarantees of the children of "a" would add up to more than its 10/s`},
		{"bad option", "--limit a=10/1s --class c=1/1s,size=2 -", "", `--class "c=1/1s,size=2": unknown option "size=2": want burst=N, ceil=RATE, ceilburst=N or parent=NAME`},
		{"unknown key", "--limit a=10/1s --class c=1/1s -", "0,1,d\n", `trace line 1: key "d" names no --class`},
		{"no period", "--limit a=10/1s --class c=1 -", "", `--class "c=1": rate "1" has no period: write tokens per period, such as 1/1s or 1/1m`},
		{"ceil with no period", "--limit a=10/1s --class c=1/1s,ceil=5 -", "", `--class "c=1/1s,ceil=5": ceil: rate "5" has no period: write tokens per period, such as 5/1s or 5/1m`},
		{"burst twice", "--limit a=10/1s --class c=1/1s,burst=2,burst=1 -", "", `--class "c=1/1s,burst=2,burst=1": burst given twice (burst=2 and burst=1): give it once`},
		{"limit with no period", "--limit a=10 --class c=1/1s -", "", `--limit "a=10": rate "10" has no period: write tokens per period, such as 10/1s or 10/1m`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tt.stdin, append([]string{"simulate"}, strings.Fields(tt.args)...)...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			if want := "throttle simulate: " + tt.want + "\n"; stderr != want {
				t.Errorf("stderr = %q\n           want %q", stderr, want)
			}
		})
	}
}

func FuzzParseClass(f *testing.F) {
	for _, s := range []string{"search=100000/1m", "batch=40000/1m,ceil=200000/1m,ceilburst=200000", "x=30/1s,parent=team,burst=5", "c=0.5/1s", "c=5/1s,size=2", "=1/1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseClass(s)
		if err != nil {
			return
		}
		if name, _, _ := strings.Cut(s, "="); name != c.name || c.name == "" {
			t.Fatalf("parseClass(%q) named %q", s, c.name)
		}
		// Whatever is accepted is either a class of a large quota or a
		// clear error from NewClass; never a panic.
		q, err := htb.NewQuota(1<<40, throttle.Per(1<<40, time.Nanosecond))
		if err != nil {
			t.Fatal(err)
		}
		if k, err := q.NewClass(c.cfg); err == nil {
			k.TryAcquire(1)
		}
	})
}
