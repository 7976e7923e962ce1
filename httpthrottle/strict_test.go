package httpthrottle_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// TestTransportOptionsRefused: an option outside its documented range
// fails NewTransport with an error matching ErrInvalidOption that names
// the option and the value; the ends of each range are accepted.
func TestTransportOptionsRefused(t *testing.T) {
	lim := must(throttle.NewLimiter(must(throttle.New(1, throttle.Inf, throttle.WithName("requests")))))
	cost := func(*http.Request, throttle.Gate) ([]int64, error) { return []int64{1}, nil }
	for _, tt := range []struct {
		opts []httpthrottle.Option
		want string // "" for accepted
	}{
		{[]httpthrottle.Option{httpthrottle.WithInFlight(0)}, "WithInFlight(0)"},
		{[]httpthrottle.Option{httpthrottle.WithInFlight(-3)}, "WithInFlight(-3)"},
		{[]httpthrottle.Option{httpthrottle.WithInFlight(1)}, ""},
		{[]httpthrottle.Option{httpthrottle.WithRetries(-1)}, "WithRetries(-1)"},
		{[]httpthrottle.Option{httpthrottle.WithRetries(0)}, ""},
		{[]httpthrottle.Option{httpthrottle.WithBackOff(10*time.Second, time.Millisecond)}, "WithBackOff(10s, 1ms)"},
		{[]httpthrottle.Option{httpthrottle.WithBackOff(0, time.Second)}, "WithBackOff(0s, 1s)"},
		{[]httpthrottle.Option{httpthrottle.WithBackOff(time.Millisecond, time.Millisecond)}, ""},
		{[]httpthrottle.Option{httpthrottle.WithMaxPause(0)}, "WithMaxPause(0s)"},
		{[]httpthrottle.Option{httpthrottle.WithMaxPause(-time.Second)}, "WithMaxPause(-1s)"},
		{[]httpthrottle.Option{httpthrottle.WithCost(nil)}, "WithCost(nil)"},
		{[]httpthrottle.Option{httpthrottle.WithCost(cost), httpthrottle.WithAccounting(llm.Config{TokenLimits: []string{"requests"}})}, "both WithAccounting and WithCost"},
		{[]httpthrottle.Option{httpthrottle.WithQuotaHeaders(httpthrottle.WriteIETF)}, "WithQuotaHeaders is an option of Handler, not of NewTransport"},
		{[]httpthrottle.Option{httpthrottle.WithRejected(func(http.ResponseWriter, *http.Request, time.Duration) {})}, "WithRejected is an option of Handler"},
	} {
		tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(lim), tt.opts...)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("an option at the end of its range: %v", err)
		case tt.want != "" && (!errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) || tr != nil):
			t.Errorf("%s: %v, %v; want an ErrInvalidOption naming it", tt.want, tr, err)
		}
	}
}

// TestHandlerRefusesTransportOptions: an option of the Transport only,
// given to Handler, panics with an ErrInvalidOption naming it, rather than
// being ignored; WithCost serves both sides.
func TestHandlerRefusesTransportOptions(t *testing.T) {
	lim := must(throttle.NewLimiter(must(throttle.New(1, throttle.Inf, throttle.WithName("requests")))))
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for name, opt := range map[string]httpthrottle.Option{
		"WithRetries":    httpthrottle.WithRetries(1),
		"WithInFlight":   httpthrottle.WithInFlight(1),
		"WithMaxPause":   httpthrottle.WithMaxPause(time.Second),
		"WithBackOff":    httpthrottle.WithBackOff(time.Second, time.Second),
		"WithSDKRetries": httpthrottle.WithSDKRetries(),
		"WithRoutes":     httpthrottle.WithRoutes(nil),
		"WithAccounting": httpthrottle.WithAccounting(llm.Config{}),
		"":               httpthrottle.WithCost(func(*http.Request, throttle.Gate) ([]int64, error) { return []int64{1}, nil }),
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				switch {
				case name == "" && err != nil:
					t.Errorf("WithCost: %v", err)
				case name != "" && (!errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), name+" is an option of NewTransport, not of Handler")):
					t.Errorf("%s given to Handler: recovered %v, want an ErrInvalidOption naming it", name, err)
				}
			}()
			httpthrottle.Handler(next, httpthrottle.Shared(lim), opt)
		}()
	}
}

// rpmTPM is a Limiter whose limits are named "rpm" and "tpm", not as the
// vendors' headers name them.
func rpmTPM(fc clockwork.Clock) *throttle.Limiter {
	rpm := must(throttle.New(10, throttle.Per(10, time.Minute), throttle.WithName("rpm"), throttle.WithClock(fc)))
	tpm := must(throttle.New(10_000, throttle.Per(10_000, time.Minute), throttle.WithName("tpm"), throttle.WithClock(fc)))
	return must(throttle.NewLimiter(rpm, tpm))
}

// TestLLMUnfoundLimits: WithAccounting over a Gate none of whose limits counts
// tokens fails loudly, naming the Gate's limits and what it looked for: at
// NewTransport for a Shared Gate, at the request otherwise (which is then
// not sent); so does a name the config gives that the Gate lacks.
func TestLLMUnfoundLimits(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := rpmTPM(fc)
	_, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{}))
	if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), `["rpm" "tpm"]`) || !strings.Contains(err.Error(), `"tokens"`) {
		t.Errorf("Shared rpm/tpm with the default roles: %v; want an error naming the limits and the names expected", err)
	}
	_, err = httpthrottle.NewTransport(nil, httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{TokenLimits: []string{"tmp"}}))
	if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), `"tmp"`) {
		t.Errorf("a misspelt token limit: %v; want an error naming it", err)
	}

	rec := newRecorder(t, fc, script(nil))
	pick := func(*http.Request) (throttle.Gate, error) { return l, nil }
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.PickFunc(pick), httpthrottle.WithAccounting(llm.Config{})))
	_, err = tr.RoundTrip(post(t, rec.srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), `["rpm" "tpm"]`) {
		t.Errorf("a pick's rpm/tpm Gate: %v; want an error naming its limits", err)
	}
	if rec.count() != 0 {
		t.Errorf("%d requests sent, want none", rec.count())
	}
}

// TestLLMRoles: with the roles named, a call reserves and settles its
// tokens on "tpm", 1 on "rpm", and the server's requests and tokens
// quotas lower the limits of those roles; TokenLimits naming "tpm"
// spares the same check without naming "rpm" (a limit in no role counts
// requests).
func TestLLMRoles(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := rpmTPM(fc)
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		respondJSON(w, 200, http.Header{
			"X-Ratelimit-Remaining-Requests": {"4"},
			"X-Ratelimit-Remaining-Tokens":   {"9000"},
		}, `{"usage":{"prompt_tokens":10,"completion_tokens":30}}`)
	})
	cfg := llm.Config{RequestLimits: []string{"rpm"}, TokenLimits: []string{"tpm"}}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(cfg)))
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":500}`
	costs, err := cfg.Cost(post(t, rec.srv.URL, body), l)
	if err != nil || costs[0] != 1 || costs[1] < 500 {
		t.Fatalf("Cost %v, %v; want 1 on rpm and the estimate on tpm", costs, err)
	}
	resp, err := tr.RoundTrip(post(t, rec.srv.URL+"/v1/chat/completions", body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// rpm: 10-1, lowered to the server's 4. tpm: 10000 less the estimate,
	// lowered to the server's 9000, then given back all but the 40 used.
	if rpm := float64(l.Bucket("rpm").Status().Remaining); rpm != 4 {
		t.Errorf("rpm %v, want 4: the server's requests quota lowers the limit of that role", rpm)
	}
	if tpm, want := float64(l.Bucket("tpm").Status().Remaining), float64(9000+costs[1]-40); tpm != want {
		t.Errorf("tpm %v, want %v: lowered to the server's 9000, then settled to the 40 used", tpm, want)
	}
	if _, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{TokenLimits: []string{"tpm"}})); err != nil {
		t.Errorf("TokenLimits naming tpm: %v", err)
	}
}

// TestAbsurdUsageClamped: a server's usage figure of a trillion tokens is
// settled as the limit's capacity, not as reported, and counted in
// Stats().Clamped: the client is not put in debt for a century.
func TestAbsurdUsageClamped(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := twoBuckets(t, fc) // tokens: 1000 a minute
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		respondJSON(w, 200, nil, `{"usage":{"prompt_tokens":10,"completion_tokens":1000000000000}}`)
	})
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{})))
	resp, err := tr.RoundTrip(post(t, rec.srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if tok := float64(l.Bucket("tokens").Status().Remaining); tok != 0 {
		t.Errorf("tokens level %v, want 0: the usage settled as the capacity, 1000", tok)
	}
	if wt, err := l.WaitTime(1, 1); err != nil || wt > time.Second {
		t.Errorf("next call waits %v (%v), want at most a second", wt, err)
	}
	if st := tr.Stats(); st.Clamped != 1 {
		t.Errorf("Stats().Clamped %d, want 1", st.Clamped)
	}
}
