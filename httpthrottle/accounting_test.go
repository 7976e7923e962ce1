package httpthrottle_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// bytesAccounting is an Accounting of the project's users' own, not
// package llm's: a request reserves its body's bytes on the limit named
// "bytes", which a server's "tokens" quota describes, and settles to the
// bytes the response's X-Bytes says the server processed.
type bytesAccounting struct{}

func (bytesAccounting) Cost(r *http.Request, g throttle.Gate) ([]int64, error) {
	return []int64{r.ContentLength}, nil
}

func (bytesAccounting) Check(limits []throttle.Limit) error {
	if len(limits) != 1 || limits[0].Name != "bytes" {
		return fmt.Errorf("%w: want one limit named bytes", throttle.ErrInvalidOption)
	}
	return nil
}

func (bytesAccounting) Counts(limit, quota string) bool { return limit == "bytes" && quota == "tokens" }

func (bytesAccounting) Settle(resp *http.Response, a httpthrottle.Attempt) (bool, func()) {
	n, err := strconv.ParseInt(resp.Header.Get("X-Bytes"), 10, 64)
	if err != nil {
		a.Keep()
		return false, nil
	}
	a.Settle(n)
	return false, nil
}

// TestAccountingSeam: an Accounting other than llm's is checked against a
// Shared Gate, costs each request, matches the server's quota to the limit
// it Counts, and settles each attempt; a settlement above the limit's
// capacity is settled as the capacity and counted in Stats().Clamped.
func TestAccountingSeam(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	other := must(throttle.NewLimiter(must(throttle.New(1000, throttle.Per(1, time.Hour), throttle.WithName("other"), throttle.WithClock(fc)))))
	if _, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(other), httpthrottle.WithAccounting(bytesAccounting{})); !errors.Is(err, throttle.ErrInvalidOption) {
		t.Fatalf("a Gate the accounting's Check refuses: %v, want ErrInvalidOption", err)
	}
	if _, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(other), httpthrottle.WithAccounting(nil)); !errors.Is(err, throttle.ErrInvalidOption) {
		t.Fatalf("WithAccounting(nil): %v, want ErrInvalidOption", err)
	}

	var processed, remaining string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Bytes", processed)
		if remaining != "" {
			w.Header().Set("X-Ratelimit-Limit-Tokens", "1000")
			w.Header().Set("X-Ratelimit-Remaining-Tokens", remaining)
		}
	}))
	defer srv.Close()
	b := must(throttle.New(1000, throttle.Per(1, time.Hour), throttle.WithName("bytes"), throttle.WithClock(fc)))
	l := must(throttle.NewLimiter(b))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(bytesAccounting{})))
	send := func() {
		t.Helper()
		resp, err := tr.RoundTrip(post(t, srv.URL, strings.Repeat("x", 100)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	level := func() float64 { return b.Status().Level }

	processed = "40"
	send()
	if got := level(); got != 960 {
		t.Fatalf("after a call reserving 100 settled to 40: level %v, want 960", got)
	}
	// The server's "tokens" quota describes the "bytes" limit (Counts).
	remaining = "300"
	send()
	if got := level(); got != 300 {
		t.Fatalf("after the server reported 300 tokens left: level %v, want 300", got)
	}
	remaining, processed = "", "5000"
	send()
	// Taken 100, settled as the capacity 1000: 900 more.
	if got, clamped := level(), tr.Stats().Clamped; got != 300-1000 || clamped != 1 {
		t.Fatalf("after a settlement of 5000 on a capacity of 1000: level %v, Clamped %d; want -700 and 1", got, clamped)
	}
}
