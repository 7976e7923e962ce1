package throttle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestClassTransport(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	defer srv.Close()
	clk := newClock()
	org, _ := NewQuota(10_000, Per(10_000, time.Minute), WithClock(clk))
	team := mustClass(t, org, ClassConfig{Name: "team", Rate: Per(5_000, time.Minute)})
	client := &http.Client{Transport: NewClassTransport(nil, ForClass(team), LLM{})}
	post := func(ctx context.Context) error {
		body := []byte(`{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"abcdefgh"}]}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
		resp, err := client.Do(req)
		if err == nil {
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := post(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := team.Tokens(); got != 5_000-15 {
		t.Fatalf("after a call that used 15: %v", got)
	}
	status = http.StatusBadRequest
	if err := post(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := team.Tokens(); got != 5_000-15 {
		t.Fatalf("a 400 was charged: %v", got)
	}
	// A deadline before the tokens: fails before sending, spends nothing.
	status = http.StatusOK
	mustTry(t, team, 4_985, true)
	mustTry(t, org, 5_000, true) // the org's spare, which the team could borrow
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, time.Millisecond)
	defer cancel()
	var we *WaitError
	if err := post(ctx); !errors.As(err, &we) {
		t.Fatalf("near deadline: %v", err)
	}
	if got := team.Tokens(); got != 0 {
		t.Fatalf("a refused call spent: %v", got)
	}
}
