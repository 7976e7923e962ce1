package httpthrottle_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/pool"
)

// grants passes the tokens bucket's grants to a channel.
type grants chan throttle.Event

func (g grants) Observe(e throttle.Event) {
	if e.Kind == throttle.EventGranted {
		g <- e
	}
}

// heldServer is a base transport standing for a server that counts a call
// when it answers it: each request is announced on arrived and answered
// when the test sends on release, with a usage equal to its estimate, so
// that settling it changes no level.
type heldServer struct {
	arrived chan string
	release chan struct{}
}

func (s heldServer) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	s.arrived <- string(b)
	<-s.release
	in, out, _ := llm.Config{}.Estimate(b)
	body := fmt.Sprintf(`{"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, in, out)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// TestBurstFromFullWaitsForTheServer: two calls taken from a full tokens
// bucket empty it; the client's bucket refills while the server, which has
// not answered either, is still full and refills nothing. A third call
// admitted on that refill is not sent until the first answer, which lowers
// the bucket to its capacity less the burst's reservations (a debt of the
// third call's cost), and then not before the refill of that debt.
func TestBurstFromFullWaitsForTheServer(t *testing.T) {
	testBurstFromFull(t, false)
}

// TestBurstFromFullThroughPool: the same through a pool whose member is
// that Limiter: the burst opens on the member that served the calls.
func TestBurstFromFullThroughPool(t *testing.T) {
	testBurstFromFull(t, true)
}

func testBurstFromFull(t *testing.T, viaPool bool) {
	fc := clockwork.NewFakeClock()
	body := func(call string, maxTokens int) string {
		return fmt.Sprintf(`{"model":"m","max_tokens":%d,"messages":[{"role":"user","content":"call %s"}]}`, maxTokens, call)
	}
	cost := func(b string) int64 {
		in, out, _ := llm.Config{}.Estimate([]byte(b))
		return in + out
	}
	a1, a2, c := body("a", 90), body("b", 90), body("c", 20)
	capacity := cost(a1) + cost(a2)
	granted := make(grants, 8)
	// A token a millisecond: every refill below is exact.
	tok := must(throttle.New(capacity, throttle.Per(capacity, time.Duration(capacity)*time.Millisecond), throttle.WithName("tokens"),
		throttle.WithClock(fc), throttle.WithObserver(granted)))
	req := must(throttle.New(100, throttle.Per(100, time.Second), throttle.WithName("requests"), throttle.WithClock(fc)))
	l := must(throttle.NewLimiter(req, tok))
	srv := heldServer{arrived: make(chan string, 3), release: make(chan struct{})}
	var g throttle.Gate = l
	if viaPool {
		g = must(pool.New([]pool.Member{{Name: "a", Gate: l}}))
	}
	tr := must(httpthrottle.NewTransport(srv, httpthrottle.Shared(g), httpthrottle.WithAccounting(llm.Config{})))
	hc := &http.Client{Transport: tr}
	done := make(chan error, 3)
	call := func(b string) {
		go func() {
			resp, err := hc.Post("http://vendor.test/v1/chat/completions", "application/json", strings.NewReader(b))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
	}
	level := func() float64 { return tok.Status().Level }
	refill := time.Duration(cost(c)) * time.Millisecond // c's cost

	// At the same instant: through a pool too, where the member is known
	// only once a call has its permit, the calls open the burst from what
	// the members held before either took.
	call(a1)
	call(a2)
	<-srv.arrived
	<-srv.arrived
	<-granted
	<-granted
	if got := level(); got != 0 {
		t.Fatalf("level %v after the burst, want 0", got)
	}
	// The client counts a refill the server, full until it sees the calls,
	// never had; a call is admitted on it.
	fc.Advance(refill)
	call(c)
	<-granted
	// The call joins the burst once granted.
	for deadline := time.Now().Add(10 * time.Second); httpthrottle.BurstTaken(tr, l, 1) != capacity+cost(c); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the third call never joined the burst: it reserved %d", httpthrottle.BurstTaken(tr, l, 1))
		}
	}
	if got := level(); got != 0 {
		t.Fatalf("level %v after the third call, want 0", got)
	}
	select {
	case b := <-srv.arrived:
		t.Fatalf("%s sent before the server answered any call of the burst", b)
	default:
	}

	// The first answer takes the uncounted refill back: the third call's
	// cost is a debt, and the call waits for its refill.
	srv.release <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := level(), -float64(cost(c)); got != want {
		t.Fatalf("level %v after the first answer, want %v", got, want)
	}
	select {
	case b := <-srv.arrived:
		t.Fatalf("%s sent before the refill of its debt", b)
	default:
	}
	fc.Advance(refill)
	if b := <-srv.arrived; b != c {
		t.Fatalf("%s arrived, want the third call", b)
	}
	srv.release <- struct{}{}
	srv.release <- struct{}{}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The burst is over: later answers lower nothing.
	if got := level(); got != 0 {
		t.Fatalf("level %v at the end, want 0", got)
	}
}
