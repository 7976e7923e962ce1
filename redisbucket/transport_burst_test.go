package redisbucket_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/redisbucket"
)

// TestTransportBurstCheckFromAnOldView: the Transport asks, before a call
// that could open a burst, whether a limit it takes from is at capacity. A
// view older than StatusFresh that, refilled since, still shows every such
// limit below capacity answers it without a Redis call: the call costs its
// take alone. A view whose refill could have filled a limit is read again.
func TestTransportBurstCheckFromAnOldView(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{
		{Name: "requests", Capacity: 10, Rate: throttle.Per(1, time.Second)},
		{Name: "tokens", Capacity: 10000, Rate: throttle.Per(100, time.Second)},
	}
	lim := r.limiter("burstview", limits)
	other := r.limiter("burstview", limits)
	v := newVendor(t, func(n int, proc string, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	})
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(llm.Config{})))
	// Another process drains the shared limits well below capacity.
	if _, err := other.Take(context.Background(), 6, 6000); err != nil {
		t.Fatal(err)
	}
	send := func() int64 {
		t.Helper()
		calls := lim.Stats().Calls
		if code, err := post(tr, v.srv.URL, "a"); err != nil || code != http.StatusOK {
			t.Fatalf("call: %d %v", code, err)
		}
		return lim.Stats().Calls - calls
	}
	send() // the first, without a view, reads the levels
	r.advance(redisbucket.StatusFresh + time.Second)
	// The view: 3 requests and about 3,900 tokens, 3 s ago; at most 6 and
	// 4,200 now.
	if n := send(); n != 1 {
		t.Errorf("a call under a view that cannot be full made %d Redis calls, want 1 (its take)", n)
	}
	r.advance(5 * time.Second) // the view's refill could fill the requests
	if n := send(); n != 2 {
		t.Errorf("a call under a view whose refill could fill a limit made %d Redis calls, want 2 (a read, then its take)", n)
	}
}

// TestStatusBoundCostsNoCall: StatusBound reports the last view refilled
// since, however old, without a call; without a view, every limit at its
// capacity.
func TestStatusBoundCostsNoCall(t *testing.T) {
	r := newRig(t)
	l := r.limiter("bound", rpmTPM)
	if st := l.StatusBound(nil); st[0].Remaining != st[0].Capacity || st[1].Remaining != st[1].Capacity || l.Stats().Calls != 0 {
		t.Fatalf("StatusBound without a view: %+v after %d calls, want every limit at capacity and no call", st, l.Stats().Calls)
	}
	if _, err := l.Take(context.Background(), 1, 40); err != nil {
		t.Fatal(err)
	}
	calls := l.Stats().Calls
	r.advance(3 * redisbucket.StatusFresh) // 0.3 requests and 10 tokens back
	st := l.StatusBound(nil)
	if n := l.Stats().Calls - calls; n != 0 || st[0].Remaining != 2 || st[1].Remaining != 70 {
		t.Fatalf("StatusBound %+v with %d calls, want 2 requests and 70 tokens, no call", st, n)
	}
}
