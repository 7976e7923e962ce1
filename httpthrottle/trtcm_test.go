package httpthrottle

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/trtcm"

	"github.com/jonboulle/clockwork"
)

// TestTransportOverMarker: a Transport over a Marker sends green
// requests, yellow ones only when their context allows best effort, and
// never red ones; a request it does not send fails before sending with a
// *MarkError matching ErrYellow or ErrRed through a plain http.Client,
// spends nothing, has its body closed and is left as it was.
func TestTransportOverMarker(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(t0)
	// 2 committed, 4 peak, refilling slowly.
	m, err := trtcm.New(throttle.Per(1, time.Minute), 2, throttle.Per(2, time.Minute), 4, throttle.WithClock(clk), throttle.WithName("org"))
	if err != nil {
		t.Fatal(err)
	}
	tr := must(NewTransport(nil, Shared(m)))
	client := &http.Client{Transport: tr}
	get := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	ctx, best := context.Background(), trtcm.AllowBestEffort(context.Background())
	for i := range 2 {
		if err := get(ctx); err != nil {
			t.Fatalf("green request %d: %v", i, err)
		}
	}
	// Yellow, best effort not allowed: refused and spends nothing.
	if err := get(ctx); !errors.Is(err, trtcm.ErrYellow) {
		t.Fatalf("yellow without best effort: %v", err)
	}
	if _, p := m.Tokens(); p != 2 {
		t.Fatalf("a refused yellow request spent peak tokens: %v left", p)
	}
	// Refused with a body: the Transport closes it, as a RoundTripper must
	// for a request it does not send, and leaves the request alone.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	body := &closedBody{Reader: strings.NewReader("payload")}
	req.Body = body
	if _, err := tr.RoundTrip(req); !errors.Is(err, trtcm.ErrYellow) {
		t.Fatalf("yellow with a body: %v", err)
	}
	if !body.closed.Load() || len(req.Header) != 0 {
		t.Fatalf("refused request: body closed %v, header %v; want closed and untouched", body.closed.Load(), req.Header)
	}
	for i := range 2 {
		if err := get(best); err != nil {
			t.Fatalf("yellow best-effort request %d: %v", i, err)
		}
	}
	var me *trtcm.MarkError
	if err := get(best); !errors.Is(err, trtcm.ErrRed) || !errors.As(err, &me) || *me != (trtcm.MarkError{Color: trtcm.Red, Cost: 1, Marker: "org"}) {
		t.Fatalf("red request: %v", err)
	}
	if n := sent.Load(); n != 4 {
		t.Errorf("server got %d requests, want 4", n)
	}
	// 2 green and 2 yellow sent; 2 yellow refused and 1 red failed.
	if st := tr.Stats(); st.Requests != 7 || st.Sent != 4 || st.Failed != 3 || st.Retried != 0 {
		t.Errorf("stats %+v", st)
	}
}
