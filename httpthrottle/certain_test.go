package httpthrottle_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// TestTransportQueuesOnEstimates: 40 calls at once on a token bucket that
// holds 13 estimates; each uses a fifth of its estimate. The calls deep in
// the queue have waits, counted in estimates, far past their deadline, but
// those waits rest on reservations not yet settled: they queue, and once
// the 13 in flight settle, all 40 are served at the same instant. (Counted
// with what the 13 in flight alone give back, the last 11 failed at once.)
func TestTransportQueuesOnEstimates(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	const body = `{"model":"m","max_tokens":400,"messages":[{"role":"user","content":"Summarise the rate-limit headers."}]}`
	cfg := llm.Config{}
	in, out, _ := cfg.Estimate([]byte(body))
	estimate := in + out
	used := estimate / 5
	release := make(chan struct{})
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 13 {
			<-release
		}
		respondJSON(w, http.StatusOK, nil, `{"usage":{"prompt_tokens":`+strconv.FormatInt(used, 10)+`,"completion_tokens":0}}`)
	})
	b := must(throttle.New(13*estimate, throttle.Per(13*estimate, time.Minute), throttle.WithName("tokens"), throttle.WithClock(fc)))
	l := must(throttle.NewLimiter(b))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(cfg)))
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var finished, failed atomic.Int64
	for range 40 {
		wg.Go(func() {
			defer finished.Add(1)
			ctx, cancel := clockwork.WithTimeout(context.Background(), fc, 15*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rec.srv.URL, strings.NewReader(body))
			resp, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				t.Errorf("call failed: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	waitFor(t, "13 calls in flight and the others queued or failed", func() bool {
		return rec.count() == 13 && int64(httpthrottle.QueuedFor(l))+failed.Load() == 27
	})
	close(release)
	waitFor(t, "every call to finish", func() bool { return finished.Load() == 40 })
	wg.Wait()
	if got := fc.Since(epoch); got != 0 {
		t.Errorf("took %v on the fake clock, want 0: the settlements serve the queue", got)
	}
	if st := tr.Stats(); st.Failed != 0 || st.Sent != 40 {
		t.Errorf("stats %+v, want 40 sent, none failed", st)
	}
}

// slowTaker is a Limiter whose Take, on a context marked with slowKey,
// takes the costs and then waits for release before it returns: a Gate
// whose levels show a take before its caller knows of it (redisbucket's
// Limiter, between Redis's reply and the caller's return, is one).
type slowTaker struct {
	*throttle.Limiter
	took, release chan struct{}
}

type slowKey struct{}

func (s *slowTaker) Take(ctx context.Context, costs ...int64) (time.Duration, error) {
	d, err := s.Limiter.Take(ctx, costs...)
	if ctx.Value(slowKey{}) != nil {
		close(s.took)
		<-s.release
	}
	return d, err
}

// TestTransportCountsTakesUnderWay: a call refused while another call's
// take shows in the levels but has not returned counts that take among
// what may be given back, as it would once the call is in flight: the
// bucket holds one estimate, the first call has taken it, and the second,
// whose wait past its deadline rests on that estimate, queues and is
// served when the first settles, where it failed at once (in 2% of the
// runs of redisbucket's TestTransportLLMBurstOnEstimates).
func TestTransportCountsTakesUnderWay(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	const body = `{"model":"m","max_tokens":400,"messages":[{"role":"user","content":"Say ok."}]}`
	cfg := llm.Config{}
	in, out, _ := cfg.Estimate([]byte(body))
	estimate := in + out
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		respondJSON(w, http.StatusOK, nil, `{"usage":{"prompt_tokens":0,"completion_tokens":0}}`)
	})
	b := must(throttle.New(estimate, throttle.Per(estimate, 10*time.Minute), throttle.WithName("tokens"), throttle.WithClock(fc)))
	g := &slowTaker{Limiter: must(throttle.NewLimiter(b)), took: make(chan struct{}), release: make(chan struct{})}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(g), httpthrottle.WithAccounting(cfg)))
	call := func(ctx context.Context) error {
		ctx, cancel := clockwork.WithTimeout(ctx, fc, 15*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rec.srv.URL, strings.NewReader(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	first := make(chan error, 1)
	go func() { first <- call(context.WithValue(context.Background(), slowKey{}, true)) }()
	<-g.took
	second := make(chan error, 1)
	go func() { second <- call(context.Background()) }()
	waitFor(t, "the second call to queue or fail", func() bool {
		return httpthrottle.QueuedFor(g.Limiter) == 1 || len(second) == 1
	})
	if len(second) == 1 {
		t.Fatalf("the second call ended while the first one's take was under way: %v", <-second)
	}
	close(g.release)
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if got := fc.Since(epoch); got != 0 {
		t.Errorf("took %v on the fake clock, want 0: the first call's settlement serves the second", got)
	}
}

// TestTransportRefusesCertainWaits: a wait that no settlement can shorten
// still fails at once, naming the limit and the wait: a settled token
// bucket that needs longer than the deadline to refill the estimate, and a
// server's pause that outlasts the deadline, with or without an llm.Config.
func TestTransportRefusesCertainWaits(t *testing.T) {
	const body = `{"model":"m","max_tokens":400,"messages":[{"role":"user","content":"Say ok."}]}`
	cfg := llm.Config{}
	in, out, _ := cfg.Estimate([]byte(body))
	estimate := in + out
	for _, tt := range []struct {
		name  string
		llm   bool
		setup func(fc clockwork.Clock, l *throttle.Limiter)
		limit string
		wait  time.Duration
	}{
		{"settled bucket, llm.Config", true, func(fc clockwork.Clock, l *throttle.Limiter) { drain(l.Bucket("tokens"), 0) },
			// The estimate at 1,000 a minute.
			"tokens", time.Duration(estimate) * time.Minute / 1000},
		{"pause, llm.Config", true, func(fc clockwork.Clock, l *throttle.Limiter) { l.PauseUntil(fc.Now().Add(30 * time.Second)) },
			"requests", 30 * time.Second},
		{"pause", false, func(fc clockwork.Clock, l *throttle.Limiter) { l.PauseUntil(fc.Now().Add(30 * time.Second)) },
			"requests", 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			rec := newRecorder(t, fc, script(nil))
			l := twoBuckets(t, fc)
			tt.setup(fc, l)
			var opts []httpthrottle.Option
			if tt.llm {
				opts = append(opts, httpthrottle.WithAccounting(cfg))
			}
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), opts...))
			ctx, cancel := clockwork.WithTimeout(context.Background(), fc, 15*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rec.srv.URL, strings.NewReader(body))
			_, err := tr.RoundTrip(req)
			var we *throttle.WaitError
			if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || we.Limit != tt.limit || we.Wait != tt.wait {
				t.Fatalf("error %v, want a *WaitError naming %q and a wait of %v", err, tt.limit, tt.wait)
			}
			if !strings.Contains(err.Error(), tt.limit) {
				t.Errorf("the message %q does not name the limit", err)
			}
			if rec.count() != 0 || httpthrottle.QueuedFor(l) != 0 {
				t.Errorf("%d sent, %d queued; want none", rec.count(), httpthrottle.QueuedFor(l))
			}
		})
	}
}

// TestAutoQueuesOnGuessedRate: before a server has said anything, Auto's
// rate is a guess, so a wait computed from it is no grounds to refuse: of
// five calls at once with 1 s deadlines at the starting 2 a second, the
// ones whose turn comes after 1 s queue rather than fail at once.
func TestAutoQueuesOnGuessedRate(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, script(nil))
	a := must(auto.New(auto.Clock(fc)))
	tr := must(httpthrottle.NewTransport(newBase(t), a))
	probe, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
	l, err := a.Pick(probe)
	if err != nil {
		t.Fatal(err)
	}
	parent, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var refused, finished atomic.Int64
	for range 5 {
		wg.Go(func() {
			defer finished.Add(1)
			ctx, cancel := clockwork.WithTimeout(parent, fc, time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rec.srv.URL, nil)
			resp, err := tr.RoundTrip(req)
			var we *throttle.WaitError
			switch {
			case errors.As(err, &we):
				refused.Add(1)
				t.Errorf("refused at once on a guessed rate: %v", err)
			case err == nil:
				resp.Body.Close()
			}
		})
	}
	waitFor(t, "one call sent and the others queued or refused", func() bool {
		return rec.count() == 1 && int64(httpthrottle.QueuedFor(l))+refused.Load() == 4
	})
	stop()
	waitFor(t, "every call to finish", func() bool { return finished.Load() == 5 })
	wg.Wait()
}
