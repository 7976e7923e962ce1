package auto

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
func tellTokens(t *testing.T, a *Limiter, req *http.Request, trueLeft float64, cost int64) *autoGate {
	t.Helper()
	clk := a.cfg.clock
	h := http.Header{}
	headers.SetAnthropic(h, "output-tokens", 8000, int64(math.Round(trueLeft/1000))*1000, time.Minute, clk.Now())
	l, err := a.limiterOf(req)
	if err != nil {
		t.Fatal(err)
	}
	costs := make([]int64, len(l.bs))
	if i := slices.Index(l.bs, l.Bucket("output-tokens")); i >= 0 {
		costs[i] = cost
	}
	ans := answerOf(t, clk, req, 200, h, l, false)
	ans.Costs = costs
	l.Learn(ans)
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

// A client that has spent its bucket while Anthropic's rounded count stood
// at 1,000 hears it step to 0: the server's count crossed 500 since the
// response before, so it holds about that, not nothing. The client's level
// comes back to its share of that above the reserve, as a first count's
// grant would give, instead of creeping up at the rate while the server
// holds hundreds.
func TestAutoRoundedStepPins(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.anthropic.com/v1/messages")
	const ceil = 8000.0 / 60
	left := 1000.0
	l := tellTokens(t, a, req, left, 0)
	for left+ceil*0.066-50 >= 500 {
		clk.Advance(66 * time.Millisecond)
		left += ceil*0.066 - 50
		l = tellTokens(t, a, req, left, 100)
	}
	b := l.Bucket("output-tokens")
	for {
		ok, err := b.TryAcquire(1)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	clk.Advance(66 * time.Millisecond)
	left += ceil*0.066 - 50
	if math.Round(left/1000) != 0 {
		t.Fatalf("the count did not step: %v left", left)
	}
	tellTokens(t, a, req, left, 100)
	st := b.Status()
	share := min(1, perSec(st.Rate)/ceil)
	// The step pins at least the 500 the count before proved, less the
	// 100 of the call answered since; the reserve is a second of the rate,
	// less than half the burst.
	reserve := ceil
	if want := int64(share * (500 - 100 - reserve)); st.Remaining < want {
		t.Errorf("level %d after the count stepped from 1,000 to 0 (%.0f left); want %d, the share of what the step pins above the reserve", st.Remaining, left, want)
	}
}
