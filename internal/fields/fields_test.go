package fields

import (
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPolicyWindow(t *testing.T) {
	for _, c := range []struct {
		tokens  int64
		period  time.Duration
		quota   int64
		window  time.Duration
		comment string
	}{
		{500, time.Minute, 500, time.Minute, "a whole number of seconds is kept"},
		{1, 100 * time.Millisecond, 10, time.Second, "rounded up to a second, the quota scaled"},
		{3, 1500 * time.Millisecond, 4, 2 * time.Second, "never overstates: 3/1.5 s is 4/2 s"},
		{2, 1500 * time.Millisecond, 2, 2 * time.Second, "2/1.5 s is 2.67/2 s, written 2"},
		{0, time.Second, 0, time.Second, "a rate of nothing"},
		{5, 0, 0, 0, "no period"},
		{math.MaxInt64, time.Nanosecond, math.MaxInt64, time.Second, "saturates"},
	} {
		q, w := PolicyWindow(c.tokens, c.period)
		if q != c.quota || w != c.window {
			t.Errorf("PolicyWindow(%d, %v) = %d, %v; want %d, %v (%s)", c.tokens, c.period, q, w, c.quota, c.window, c.comment)
		}
	}
}

func TestFormat(t *testing.T) {
	for got, want := range map[string]string{
		RetryAfter(1500 * time.Millisecond):                   `2`,
		RetryAfter(-time.Second):                              `0`,
		Quote(`a"b\c` + "\x01é"):                              `"a\"b\\c???"`,
		IETFPolicy(Quote("tokens"), "", 100, time.Minute):     `"tokens";q=100;w=60`,
		IETFPolicy(Quote("b"), "content-bytes", 1e18, 0):      `"b";q=999999999999999;qu="content-bytes"`,
		IETFState(Quote("tokens"), -1, 1500*time.Millisecond): `"tokens";r=0;t=2`,
		PolicyName(""): `default`,
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
