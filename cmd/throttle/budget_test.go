package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/hoststore"
	"github.com/throttlekit/throttle/redisbucket"
)

// TestBudgetShowAndReset spends through a Budget on a host store, as an
// application would, then shows and resets it with the command.
func TestBudgetShowAndReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota")
	s, err := hoststore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New("llm-usd", 1000, budget.Daily(time.UTC), budget.WithStore(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"opus", "haiku"} {
		if _, err := b.For(k).Acquire(context.Background(), 700); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	day, _ := budget.Daily(time.UTC).Bounds(time.Now())

	out, errOut, code := runCmd(t, "", "budget", "--store", path)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	want := "KEY            WINDOW                SPENT\n" +
		"llm-usd/haiku  " + day.Format(time.RFC3339) + "  700\n" +
		"llm-usd/opus   " + day.Format(time.RFC3339) + "  700\n"
	if out != want {
		t.Errorf("show printed\n%s\nwant\n%s", out, want)
	}
	if out, errOut, code = runCmd(t, "", "budget", "--store", path, "reset", "llm-usd/opus"); code != 0 || out != "reset llm-usd/opus\n" {
		t.Fatalf("reset: exit %d, %q, %s", code, out, errOut)
	}
	out, _, _ = runCmd(t, "", "budget", "--store", path, "show")
	if !strings.Contains(out, "llm-usd/opus   -") || !strings.Contains(out, "llm-usd/haiku  "+day.Format(time.RFC3339)+"  700") {
		t.Errorf("after the reset, show printed\n%s", out)
	}
	for _, args := range [][]string{{"budget"}, {"budget", "--store", path, "reset"}, {"budget", "--store", path, "drop"}} {
		if _, _, code := runCmd(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestBudgetShowAndResetRedis does the same on a Redis budget store
// (redisbucket.NewBudgetStore), on miniredis.
func TestBudgetShowAndResetRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	b, err := budget.New("llm-usd", 1000, budget.Daily(time.UTC), budget.WithStore(redisbucket.NewBudgetStore(c, "app:")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.For("opus").Acquire(context.Background(), 700); err != nil {
		t.Fatal(err)
	}
	day, _ := budget.Daily(time.UTC).Bounds(time.Now())
	url := "redis://" + mr.Addr() + "/0"
	out, errOut, code := runCmd(t, "", "budget", "--redis", url, "--prefix", "app:")
	if want := "KEY           WINDOW                SPENT\nllm-usd/opus  " + day.Format(time.RFC3339) + "  700\n"; code != 0 || out != want {
		t.Fatalf("show: exit %d: %s\n%s\nwant\n%s", code, errOut, out, want)
	}
	if out, _, _ := runCmd(t, "", "budget", "--redis", url); strings.Contains(out, "opus") {
		t.Errorf("the default prefix shows another store's keys:\n%s", out)
	}
	if out, errOut, code = runCmd(t, "", "budget", "--redis", url, "--prefix", "app:", "reset", "llm-usd/opus"); code != 0 || out != "reset llm-usd/opus\n" {
		t.Fatalf("reset: exit %d, %q, %s", code, out, errOut)
	}
	if left := b.For("opus").Status(nil)[0].Remaining; left != 1000 {
		t.Errorf("after the reset %d left, want 1000", left)
	}
	for _, args := range [][]string{{"budget", "--redis", url, "--store", "x"}, {"budget", "--store", "x", "--prefix", "p"}, {"budget", "--redis", "://"}} {
		if _, _, code := runCmd(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}
