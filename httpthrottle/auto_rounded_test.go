package httpthrottle

import (
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
)

// tellTokens passes a 200 reporting Anthropic's output tokens, remaining
// rounded to the thousand as Anthropic rounds it, from a call that cost
// cost of them, to the quota of req.
func tellTokens(t *testing.T, a *AutoLimiter, req *http.Request, trueLeft float64, cost int64) *autoGate {
	t.Helper()
	clk := a.cfg.clock
	h := http.Header{}
	headers.SetAnthropic(h, "output-tokens", 8000, int64(math.Round(trueLeft/1000))*1000, time.Minute, clk.Now())
	var sig headers.Signals
	headers.ParseClock(&sig, h, clk, defaultMaxPause)
	l, err := a.limiterOf(req)
	if err != nil {
		t.Fatal(err)
	}
	costs := make([]int64, len(core.Buckets(l.Limiter)))
	if i := slices.Index(core.Buckets(l.Limiter), l.Bucket("output-tokens")); i >= 0 {
		costs[i] = cost
	}
	autoOf(l).response(req, l.Limiter, costs, 200, &sig, defaultMaxPause)
	l, _ = a.limiterOf(req)
	return l
}

// A client alone spends Anthropic's output tokens at the server's rate
// while the server holds about 400: every count reads 0, which means
// anything up to 499. Read as exact, each 0 drained the bucket and, with
// the server's refill in between, looked like others spending: the share
// was cut again and again. Read as the range it is, the client keeps the
// server's rate and a level up to what the count allows.
func TestAutoRoundedZeroHolds(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.anthropic.com/v1/messages")
	const ceil = 8000.0 / 60
	left := 400.0
	tellTokens(t, a, req, left, 0)
	every := time.Duration(50 / ceil * float64(time.Second))
	var l *autoGate
	for range 40 {
		clk.Advance(every)
		left += ceil*every.Seconds() - 50
		l = tellTokens(t, a, req, left, 50)
	}
	b := l.Bucket("output-tokens")
	if got := perSec(b.Status().Rate); got < 0.9*ceil {
		t.Errorf("output-token rate %.1f/s after 40 counts of 0 while alone at the server's %.1f/s; want about the server's", got, ceil)
	}
	if got := b.Status().Remaining; got <= 0 {
		t.Errorf("level %d after a count of 0; want up to the 499 a rounded 0 may mean", got)
	}
}
