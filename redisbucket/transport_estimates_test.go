package redisbucket_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/redisbucket"
)

// TestTransportWaitsOnEstimates: under the Transport with an llm.Config, a
// redisbucket Limiter gets the in-process Limiter's rule for deadlines
// (issue 37): a call whose wait rests only on a reservation in flight,
// which will settle to what the call used, queues instead of failing at
// once, and is served when the reservation settles; a call whose wait is
// certain (the settled level at the configured rate) still fails at once,
// naming the limit.
func TestTransportWaitsOnEstimates(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{
		{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Second)},
		{Name: "tokens", Capacity: 1000, Rate: throttle.Per(1000, time.Minute)},
	}
	lim := r.limiter("estimates", limits)
	release := make(chan struct{})
	v := newVendor(t, func(n int, _ string, w http.ResponseWriter) {
		if n == 1 {
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"usage":{"prompt_tokens":10,"completion_tokens":50,"total_tokens":60}}`)
	})
	var once sync.Once
	letFirstGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letFirstGo) // on a failure, before the vendor closes
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(llm.Config{})))
	call := func(ctx context.Context, maxTokens string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.srv.URL,
			strings.NewReader(`{"model":"m","max_tokens":`+maxTokens+`,"messages":[{"role":"user","content":"Say ok."}]}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	first := make(chan error, 1)
	go func() { first <- call(context.Background(), "900") }()
	waitFor(t, "the first call at the vendor", 10*time.Second, func() bool { return v.count() == 1 })

	// Its reservation of about 910 tokens leaves about 90: the second
	// call's 910 are 49 s away at the configured rate, far past its
	// deadline, but only because of an estimate still in flight.
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, 2*time.Second)
	defer cancel()
	second := make(chan error, 1)
	go func() { second <- call(ctx, "900") }()
	select {
	case err := <-second:
		t.Fatalf("the second call ended before the first settled: %v; want it queued", err)
	case <-time.After(300 * time.Millisecond):
	}
	letFirstGo()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Settled at 60, the first call gave back about 850 tokens. The
	// second, queued in redisbucket's Acquire, is not refused for the
	// estimate: it is served, or ends with its context at the deadline.
	for done := false; !done; {
		select {
		case err := <-second:
			var wait *throttle.WaitError
			if errors.As(err, &wait) {
				t.Fatalf("the second call refused on an estimate: %v", err)
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the second call: %v", err)
			}
			done = true
		case <-time.After(20 * time.Millisecond):
			r.advance(100 * time.Millisecond)
		}
	}
	r.advance(time.Minute) // a full bucket again
	waitFor(t, "the first call settled", 10*time.Second, func() bool { return levels(t, lim)[1] == 1000 })

	// Now nothing is in flight: a call that needs more than the settled
	// level refills in time fails at once, naming the limit.
	// (Settled at once: a permit held unsettled would make every wait an
	// estimate.)
	p, err := lim.Acquire(context.Background(), 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(0, 500); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel2()
	err = call(ctx2, "900")
	var wait *throttle.WaitError
	if !errors.As(err, &wait) || wait.Limit != "tokens" {
		t.Fatalf("a call on settled state past its deadline: %v; want a *WaitError naming tokens", err)
	}
	if n := v.count(); n > 2 {
		t.Fatalf("%d calls reached the vendor, want at most 2", n)
	}
}
