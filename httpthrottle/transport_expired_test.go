package httpthrottle_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// endsAtGrant is a Limiter whose Take ends the caller's context just as it
// grants the costs: a grant that comes at the call's deadline.
type endsAtGrant struct {
	*throttle.Limiter
	clk    clockwork.Clock
	cancel context.CancelFunc
}

func (g endsAtGrant) Clock() clockwork.Clock { return g.clk }

func (g endsAtGrant) Take(ctx context.Context, costs ...int64) (time.Duration, error) {
	d, err := g.Limiter.Take(ctx, costs...)
	g.cancel()
	return d, err
}

// TestGrantedAtDeadlineNotSent: a request whose context ends as its costs
// are granted is not sent, and its costs go back, since no server counted
// it (a pool at overload, whose calls are granted at the end of their
// deadline, would otherwise spend quota on requests never sent).
func TestGrantedAtDeadlineNotSent(t *testing.T) {
	clk := clockwork.NewFakeClock()
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer srv.Close()
	b := must(throttle.New(2, throttle.Per(1, time.Hour), throttle.WithClock(clk), throttle.WithName("requests")))
	ctx, cancel := context.WithCancel(context.Background())
	g := endsAtGrant{Limiter: must(throttle.NewLimiter(b)), clk: clk, cancel: cancel}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(g)))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip: %v, want the context's end", err)
	}
	if n := got.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
	if left := b.Status().Remaining; left != 2 {
		t.Errorf("%d tokens left, want the 2 given back", left)
	}
}
