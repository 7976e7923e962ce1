package httpthrottle_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// TestRefusalPauseSchedule: every 429 that names no usable wait (none,
// zero, negative, a past date, garbage) pauses the limiter on the SDKs'
// schedule at the low end of their jitter, the step being the refused
// call's own: the same body refused again doubles the pause, a burst of
// other calls does not, an SDK's retry count is a step, and a success
// starts the schedule again. On a fake clock with a seeded jitter.
func TestRefusalPauseSchedule(t *testing.T) {
	// The recorder's Date header is the real clock's: the date is an hour
	// before it.
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, ra := range []string{"", "0", "-5", past, "soon, please"} {
		t.Run("Retry-After "+strconv.Quote(ra), func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			ok := false
			rec := newRecorder(t, fc, func(_ int, w http.ResponseWriter, r *http.Request) {
				if ok {
					w.WriteHeader(http.StatusOK)
					return
				}
				if ra != "" {
					w.Header().Set("Retry-After", ra)
				}
				w.WriteHeader(http.StatusTooManyRequests)
			})
			l := newLimiter(t, fc, 1000, throttle.Per(1000, time.Second))
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithRetries(0)))
			httpthrottle.SeedRefusalJitter(tr, 7)
			send := func(body string, sdkRetry int) time.Duration {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, rec.srv.URL, strings.NewReader(body))
				if sdkRetry >= 0 {
					req.Header.Set("X-Stainless-Retry-Count", strconv.Itoa(sdkRetry))
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				until, _ := pausedUntil(bucketsOf(l)[0])
				d := until.Sub(fc.Now())
				// Past the pause, for the next step.
				fc.Advance(max(d, 0) + time.Millisecond)
				return d
			}
			// The pauses the seeded jitter gives, in order, for the steps.
			want := func(steps ...int) []time.Duration {
				var ds []time.Duration
				for i, s := range steps {
					ds = append(ds, httpthrottle.RefusalPauseAt(7, i, s))
				}
				return ds
			}
			var got []time.Duration
			got = append(got, send("a", -1), send("a", -1), send("a", -1)) // one call refused three times
			got = append(got, send("b", -1))                               // another call: its first refusal
			got = append(got, send("c", 2))                                // an SDK's third attempt
			ok = true
			send("d", -1) // a success forgets them all
			ok = false
			got = append(got, send("a", -1))
			w := want(0, 1, 2, 0, 2, 0)
			for i := range w {
				if got[i] != w[i] {
					t.Errorf("pauses %v, want %v", got, w)
					break
				}
			}
			for i, d := range got {
				if d < 300*time.Millisecond {
					t.Errorf("pause %d of %v: less than the SDKs' least back-off's share", i, d)
				}
			}
		})
	}
}

// TestRefusedCallRetryGoesAfterPause: against a vendor that refuses every
// call but the SDK's retry of the first, the retry (its body and
// X-Stainless-Retry-Count: 1) goes once its own pause is over, without
// waiting the pause another call's refusal set nor queuing behind the
// calls that waited for the first pause at the limiter's rate of one a
// minute; those still wait the pause out. On a fake clock.
func TestRefusedCallRetryGoesAfterPause(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Stainless-Retry-Count") == "1" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
	})
	l := newLimiter(t, fc, 1, throttle.Per(1, time.Minute))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	httpthrottle.SeedRefusalJitter(tr, 3)
	call := func(body string, retry int) {
		req, _ := http.NewRequest(http.MethodPost, rec.srv.URL, strings.NewReader(body))
		req.Header.Set("X-Stainless-Retry-Count", strconv.Itoa(retry))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
	call("refused", 0)
	pause := httpthrottle.RefusalPause(3, 0)
	others := make(chan time.Time, 3)
	for i := range 3 {
		go func() {
			call("other "+strconv.Itoa(i), 0)
			others <- fc.Now()
		}()
	}
	waitFor(t, "the other calls to queue", func() bool { return httpthrottle.QueuedFor(l) == 3 })
	// The SDK's own back-off, longer than the pause: the first of the
	// others goes at its end and is refused, pausing the limiter again.
	blockUntil(t, fc, 1)
	fc.Advance(pause * 5 / 4)
	if at := <-others; at.Sub(epoch) < pause {
		t.Errorf("another call went %v after the refusal, within the pause %v", at.Sub(epoch), pause)
	}
	retried := make(chan time.Time, 1)
	go func() {
		call("refused", 1)
		retried <- fc.Now()
	}()
	// Its own pause over, the retry goes at once: neither the pause of the
	// other call's refusal nor the queue holds it.
	if at := <-retried; at.Sub(epoch) != pause*5/4 {
		t.Errorf("the retry went %v after the refusal, want %v", at.Sub(epoch), pause*5/4)
	}
	if n := rec.count(); n != 3 {
		t.Errorf("the vendor saw %d requests before the two calls still queued, want 3", n)
	}
	// End the queued calls.
	fc.Advance(10 * time.Minute)
	<-others
	<-others
}
