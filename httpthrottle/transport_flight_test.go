package httpthrottle

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// wrongCount is an Accounting whose settlement gives the wrong number of
// costs: a bug of the accounting, which the Attempt reports.
type wrongCount struct{ err *error }

func (wrongCount) Cost(*http.Request, throttle.Gate) ([]int64, error) { return []int64{100}, nil }
func (wrongCount) Check([]throttle.Limit) error                       { return nil }
func (wrongCount) Counts(string, string) bool                         { return false }
func (w wrongCount) Settle(_ *http.Response, a Attempt) (bool, func()) {
	*w.err = a.Settle(1, 2)
	return false, nil
}

// TestFlightBookForgetsFailedSettlement: an attempt whose settlement fails
// (the wrong number of costs) is over all the same, and leaves the book of
// attempts in flight, which would otherwise count its reservation as in
// flight for good (bursts from full never opened again on the Gate).
func TestFlightBookForgetsFailedSettlement(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	l := must(throttle.NewLimiter(must(throttle.New(1000, throttle.Per(1000, time.Minute), throttle.WithName("tokens"), throttle.WithClock(clk)))))
	var settleErr error
	base := transportFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	tr := must(NewTransport(base, Shared(l), WithAccounting(wrongCount{&settleErr})))
	req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !errors.Is(settleErr, throttle.ErrInvalidCost) {
		t.Fatalf("Settle(1, 2) of one cost: %v, want ErrInvalidCost", settleErr)
	}
	if !tr.inFlight.Idle(l, 1) {
		t.Error("the attempt whose settlement failed is still booked in flight")
	}
}
