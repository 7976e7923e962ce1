package httpthrottle_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/throttletest"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newLimiter returns a one-bucket limiter named "requests".
func newLimiter(t testing.TB, c clockwork.Clock, capacity int64, r throttle.Rate) *throttle.Limiter {
	t.Helper()
	opts := []throttle.Option{throttle.WithName("requests")}
	if c != nil {
		opts = append(opts, throttle.WithClock(c))
	}
	b, err := throttle.New(capacity, r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(b)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newBase returns a base transport of the test's own, whose idle
// connections are closed when the test ends.
func newBase(t testing.TB) *http.Transport {
	base := &http.Transport{MaxIdleConnsPerHost: 512}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// waitFor yields until cond holds. Goroutines reach a limiter's queue with
// no event on the fake clock, so the test yields the processor rather than
// sleeping; the real-time limit only turns a hang into a failure.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// blockUntil waits until n timers are pending on fc.
func blockUntil(t testing.TB, fc *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fc.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("waiting for %d timers: %v", n, err)
	}
}

// drive advances fc by step whenever each of n goroutines has either
// finished or queued in l, so that no request is in flight while time
// moves, until all have finished. Each step must bring the instant of the
// head of the queue.
func drive(t testing.TB, fc *clockwork.FakeClock, l *throttle.Limiter, n int64, finished *atomic.Int64, step time.Duration) {
	t.Helper()
	for {
		waitFor(t, "every goroutine to finish or queue", func() bool {
			return finished.Load()+int64(httpthrottle.QueuedFor(l)) == n
		})
		if finished.Load() == n {
			return
		}
		q := httpthrottle.QueuedFor(l)
		blockUntil(t, fc, 1)
		fc.Advance(step)
		waitFor(t, "the head of the queue to be served", func() bool { return httpthrottle.QueuedFor(l) < q })
	}
}

// get sends a GET through c and returns the status, reading and closing
// the body.
func get(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestTransportKeepsUnderQuota sends 200 concurrent requests to a vendor
// allowing 10 per second, burst 10: an unthrottled client gets 429s for
// most of them, a throttled one none, and finishes in exactly the 19 s the
// quota needs for the 190 requests beyond the burst.
func TestTransportKeepsUnderQuota(t *testing.T) {
	const n = 200
	cfg := throttletest.Config{Requests: throttle.Per(10, time.Second), RequestBurst: 10}

	t.Run("unthrottled", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		cfg := cfg
		cfg.Clock = fc
		vendor := throttletest.NewServer(cfg)
		defer vendor.Close()
		client := &http.Client{Transport: newBase(t)}
		var wg sync.WaitGroup
		var n429 atomic.Int64
		for range n {
			wg.Go(func() {
				code, err := get(client, vendor.URL+"/v1/items")
				if err != nil {
					t.Error(err)
				}
				if code == http.StatusTooManyRequests {
					n429.Add(1)
				}
			})
		}
		wg.Wait()
		if got := n429.Load(); got != n-10 {
			t.Errorf("unthrottled client got %d 429s, want %d", got, n-10)
		}
	})

	t.Run("throttled", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		cfg := cfg
		cfg.Clock = fc
		vendor := throttletest.NewServer(cfg)
		defer vendor.Close()
		l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		client := &http.Client{Transport: tr}
		var finished atomic.Int64
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				defer finished.Add(1)
				code, err := get(client, vendor.URL+"/v1/items")
				if err != nil {
					t.Error(err)
				}
				if code != http.StatusOK {
					t.Errorf("status %d, want 200", code)
				}
			})
		}
		drive(t, fc, l, n, &finished, 100*time.Millisecond)
		wg.Wait()
		st := vendor.Stats()
		if st.Throttled != 0 || st.Admitted != n {
			t.Errorf("vendor stats %+v, want %d admitted and no 429", st, n)
		}
		if got := fc.Since(epoch); got != 19*time.Second {
			t.Errorf("took %v on the fake clock, want 19s", got)
		}
		if ts := tr.Stats(); ts.Requests != n || ts.Sent != n || ts.Throttled != 0 || ts.Retried != 0 {
			t.Errorf("transport stats %+v", ts)
		}
	})
}

// recorder is a test server that records when each request arrived on the
// fake clock and answers with respond.
type recorder struct {
	mu       sync.Mutex
	arrivals []time.Time
	bodies   []string
	srv      *httptest.Server
}

func newRecorder(t testing.TB, fc clockwork.Clock, respond func(n int, w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.arrivals = append(rec.arrivals, fc.Now())
		rec.bodies = append(rec.bodies, string(body))
		n := len(rec.arrivals)
		rec.mu.Unlock()
		respond(n, w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.arrivals)
}

// TestTransportPauseStopsEveryone: a 429 with Retry-After: 2 pauses the
// whole limiter, so that no goroutine sends anything for 2 s, and then
// releases the waiters at the configured rate, not in a burst.
func TestTransportPauseStopsEveryone(t *testing.T) {
	const n = 20
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	l := newLimiter(t, fc, 100, throttle.Per(100, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	client := &http.Client{Transport: tr}

	var finished atomic.Int64
	var wg sync.WaitGroup
	send := func() {
		defer finished.Add(1)
		if code, err := get(client, rec.srv.URL); err != nil || code != http.StatusOK {
			t.Errorf("status %d, error %v; want 200", code, err)
		}
	}
	wg.Go(send)
	// The first request got its 429 and sleeps on its back-off timer.
	blockUntil(t, fc, 1)
	if until, ok := pausedUntil(bucketsOf(l)[0]); !ok || !until.Equal(epoch.Add(2*time.Second)) {
		t.Fatalf("paused until %v (%v), want %v", until, ok, epoch.Add(2*time.Second))
	}
	for range n {
		wg.Go(send)
	}
	waitFor(t, "every goroutine to queue", func() bool { return httpthrottle.QueuedFor(l) == n })
	blockUntil(t, fc, 2) // the back-off, and the head of the queue
	fc.Advance(2*time.Second - time.Nanosecond)
	if got := rec.count(); got != 1 {
		t.Fatalf("%d requests reached the server during the pause, want none", got-1)
	}
	// At 2s the pause ends: the head of the queue goes at once, on the
	// token of the refused call's cost left in the bucket, and the first
	// request's back-off ends and it queues behind the others; from then on
	// one request goes every 10ms.
	fc.Advance(time.Nanosecond)
	drive(t, fc, l, n+1, &finished, 10*time.Millisecond)
	wg.Wait()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.arrivals) != n+2 {
		t.Fatalf("server saw %d requests, want %d", len(rec.arrivals), n+2)
	}
	for i, at := range rec.arrivals[1:] {
		want := epoch.Add(2*time.Second + time.Duration(i)*10*time.Millisecond)
		if !at.Equal(want) {
			t.Errorf("request %d arrived at +%v, want +%v", i+1, at.Sub(epoch), want.Sub(epoch))
		}
	}
	if ts := tr.Stats(); ts.Throttled != 1 || ts.Retried != 1 || ts.Sent != n+2 {
		t.Errorf("transport stats %+v", ts)
	}
}

// TestTransportInFlight: WithInFlight(2) keeps at most 2 requests in flight,
// a slot being held until the response body is closed.
func TestTransportInFlight(t *testing.T) {
	const n = 6
	var cur, peak, arrived atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cur.Add(1)
		for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
		}
		arrived.Add(1)
		<-release
		cur.Add(-1)
		io.WriteString(w, "done")
	}))
	defer srv.Close()
	l := newLimiter(t, clockwork.NewFakeClockAt(epoch), 100, throttle.Per(100, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithInFlight(2)))
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if code, err := get(client, srv.URL); err != nil || code != 200 {
				t.Errorf("status %d, error %v", code, err)
			}
		})
	}
	for i := range n {
		want := min(int64(i)+2, n)
		waitFor(t, "the next request to arrive", func() bool { return arrived.Load() == want })
		release <- struct{}{}
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("%d requests in flight at once, want 2", p)
	}
}
