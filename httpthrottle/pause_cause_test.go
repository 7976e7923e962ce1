package httpthrottle_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

// TestPauseCauseFromResponse checks that a refusal's pause carries its
// cause (status, host, the header that gave the wait) to the Limiter's
// Status and Explain, and never the path or query, which may hold a key.
func TestPauseCauseFromResponse(t *testing.T) {
	for _, c := range []struct {
		name   string
		header http.Header
		want   string
	}{
		{"Retry-After", http.Header{"Retry-After": {"20"}}, "429 from 127.0.0.1: Retry-After 20s"},
		{"OpenAI reset", http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"6s"}, "X-Ratelimit-Limit-Requests": {"10"}}, `429 from 127.0.0.1: openai "requests" exhausted, next unit in 600ms`},
		{"none", http.Header{}, "429 from 127.0.0.1: no usable wait, back-off "},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			rec := newRecorder(t, fc, func(_ int, w http.ResponseWriter, r *http.Request) {
				for k, v := range c.header {
					w.Header()[k] = v
				}
				w.WriteHeader(http.StatusTooManyRequests)
			})
			l := newLimiter(t, fc, 1000, throttle.Per(1000, time.Second))
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithRetries(0)))
			req, _ := http.NewRequest(http.MethodGet, rec.srv.URL+"/v1/chat?key=sk-secret", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			st := l.Status(nil)[0]
			if st.Paused.IsZero() || !strings.HasPrefix(st.Cause, c.want) || strings.Contains(st.Cause, "sk-secret") {
				t.Fatalf("Status %+v, want a pause caused by %q", st, c.want)
			}
			why, err := l.Explain(1)
			if err != nil {
				t.Fatal(err)
			}
			if why.Cause != st.Cause || !why.Paused.Equal(st.Paused) || why.Limit != "requests" {
				t.Fatalf("Explain %+v, Status %+v", why, st)
			}
		})
	}
}

// TestPauseCauseUnderAuto: Auto's learned limits carry a refusal's cause
// too, as a configured Limiter's do.
func TestPauseCauseUnderAuto(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	a := must(auto.New(auto.Clock(fc)))
	tr := must(httpthrottle.NewTransport(newBase(t), a, httpthrottle.WithRetries(0)))
	req, _ := http.NewRequest(http.MethodGet, rec.srv.URL+"/v1/chat?key=sk-secret", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	g, err := a.Pick(req)
	if err != nil {
		t.Fatal(err)
	}
	var paused bool
	for _, st := range g.(throttle.Meter).Status(nil) {
		if st.Paused.IsZero() {
			continue
		}
		paused = true
		if !strings.HasPrefix(st.Cause, "429 from 127.0.0.1: Retry-After 20s") || strings.Contains(st.Cause, "sk-secret") {
			t.Errorf("limit %q paused by %q, want the 429's Retry-After", st.Name, st.Cause)
		}
	}
	if !paused {
		t.Fatalf("no limit paused: %+v", g.(throttle.Meter).Status(nil))
	}
}
