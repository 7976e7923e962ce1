package auto

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// defaultMaxPause is the Transport's MaxPause when none is set.
const defaultMaxPause = 60 * time.Second

// t0 is when the tests' fake clocks start.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(t0) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// limiterOf is Limiter as the Gate it is, for the tests that look inside
// the learned buckets.
func (a *Limiter) limiterOf(r *http.Request) (*autoGate, error) {
	g, err := a.Pick(r)
	l, _ := g.(*autoGate)
	return l, err
}

// autoOf returns the quota Auto learns for on g, nil for a Gate that is
// not Auto's.
func autoOf(g throttle.Gate) *autoQuota {
	if a, ok := g.(*autoGate); ok && a != nil {
		return a.q
	}
	return nil
}

func pausedUntil(b *throttle.Bucket) (time.Time, bool) {
	u := b.Status().Paused
	return u, !u.IsZero()
}

// spy is a Gate that records what a Transport tells a Learner: the
// Answer the Transport makes of a response, its Quotas and verdict. It
// takes nothing: the Transport heeds the response on its Limiter (levels,
// pause) as if the call's costs had been taken, the state Auto learns in.
type spy struct {
	*throttle.Limiter
	got *httpthrottle.Answer
}

func (s *spy) BeforeSend() bool                      { return false }
func (s *spy) ServerRate(int) (int64, time.Duration) { return 0, 0 }
func (s *spy) Learn(a *httpthrottle.Answer) {
	c := *a
	c.Quotas = append([]httpthrottle.Quota(nil), a.Quotas...)
	s.got = &c
}
func (s *spy) Take(context.Context, ...int64) (time.Duration, error) { return 0, nil }
func (s *spy) Settle(_, _ []int64) error                             { return nil }
func (s *spy) Limits() []throttle.Limit                              { return s.Limiter.Limits() }
func (s *spy) pick(*http.Request) (throttle.Gate, error)             { return s, nil }

// answered is a RoundTripper that answers status with header h.
type answered struct {
	status int
	h      http.Header
}

func (v answered) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: v.status, Header: v.h.Clone(), Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// answerOf sends req once through a Transport to a server answering
// status and h, and returns what the Transport tells a Learner of the
// answer. With heed, the Transport's Gate is l's Limiter, which it heeds
// as it heeds Auto's (the levels, the pause on a refusal); else a Limiter
// of its own on clk.
func answerOf(t *testing.T, clk clockwork.Clock, req *http.Request, status int, h http.Header, l *autoGate, heed bool) *httpthrottle.Answer {
	t.Helper()
	s := &spy{Limiter: l.Limiter}
	if !heed {
		s.Limiter = must(throttle.NewLimiter(must(throttle.New(1, throttle.Inf, throttle.WithClock(clk)))))
	}
	tr := must(httpthrottle.NewTransport(answered{status, h}, httpthrottle.PickFunc(s.pick), httpthrottle.WithRetries(0)))
	resp, err := tr.RoundTrip(req.Clone(req.Context()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s.got == nil {
		t.Fatal("the Transport told the Learner nothing")
	}
	s.got.Request = req
	return s.got
}
