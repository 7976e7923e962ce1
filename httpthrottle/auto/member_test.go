package auto

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/pool"
)

// keyVendor answers every call 200 with OpenAI's x-ratelimit-* headers of
// the key its Authorization names: its limits, and what is left once each
// call is counted (no refill: the tests' calls are few). It counts the
// calls of each key.
type keyVendor struct {
	mu     sync.Mutex
	limits map[string][2]int64 // requests and tokens a minute
	used   map[string][2]int64
	calls  map[string]int
	quiet  bool // sends no token headers
}

func newKeyVendor(limits map[string][2]int64) *keyVendor {
	return &keyVendor{limits: limits, used: map[string][2]int64{}, calls: map[string]int{}}
}

func (v *keyVendor) RoundTrip(r *http.Request) (*http.Response, error) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	tokens, _ := strconv.ParseInt(r.Header.Get("X-Tokens"), 10, 64)
	v.mu.Lock()
	lim := v.limits[key]
	u := v.used[key]
	u[0]++
	u[1] += tokens
	v.used[key] = u
	v.calls[key]++
	quiet := v.quiet
	v.mu.Unlock()
	h := http.Header{}
	h.Set("X-Ratelimit-Limit-Requests", strconv.FormatInt(lim[0], 10))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(lim[0]-u[0], 10))
	h.Set("X-Ratelimit-Reset-Requests", "1s")
	if !quiet {
		h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatInt(lim[1], 10))
		h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(lim[1]-u[1], 10))
		h.Set("X-Ratelimit-Reset-Tokens", "1s")
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

func (v *keyVendor) callsOf(key string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls[key]
}

// memberPool is a pool of Quotas, one per key, under a Transport whose
// routes send each member's calls with its key, and whose calls cost one
// request and the tokens in X-Tokens.
func memberPool(t *testing.T, a *Limiter, v http.RoundTripper, keys ...string) (*http.Client, *pool.Pool) {
	t.Helper()
	var ms []pool.Member
	routes := map[string]func(*http.Request){}
	for _, k := range keys {
		ms = append(ms, pool.Member{Name: k, Gate: must(a.Quota(k, "requests", "tokens"))})
		routes[k] = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+k) }
	}
	p := must(pool.New(ms))
	tr := must(httpthrottle.NewTransport(v, httpthrottle.Shared(p), httpthrottle.WithRoutes(routes),
		httpthrottle.WithCost(func(r *http.Request, _ throttle.Gate) ([]int64, error) {
			n, err := strconv.ParseInt(r.Header.Get("X-Tokens"), 10, 64)
			return []int64{1, n}, err
		})))
	return &http.Client{Transport: tr}, p
}

// send makes one call of tokens through c.
func send(t *testing.T, c *http.Client, tokens int64) {
	t.Helper()
	req := must(http.NewRequest(http.MethodPost, "https://api.example/v1/chat/completions", http.NoBody))
	req.Header.Set("X-Tokens", strconv.FormatInt(tokens, 10))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// learnedOf returns the quota and window learned for each of the
// declared limits of the Quota named key, zero for one not learned.
func learnedOf(t *testing.T, a *Limiter, key string) (req, tok int64, stats QuotaStats) {
	t.Helper()
	for _, q := range a.Stats() {
		if q.Key != key {
			continue
		}
		for _, l := range q.Limits {
			if !l.Learned || l.Window != time.Minute {
				continue
			}
			switch l.Name {
			case "requests":
				req = l.Quota
			case "tokens":
				tok = l.Quota
			}
		}
		return req, tok, q
	}
	t.Fatalf("no quota %q in %+v", key, a.Stats())
	return 0, 0, QuotaStats{}
}

// TestQuotaPoolLearnsEachMember: a pool of Quotas, configured with
// nothing, learns each member's limits (its own, not another's) from
// the first answer to a call sent through it, the first call of
// thousands of tokens passing a token limit not learned yet; a member
// whose server raises its limit is seen at the next answer.
func TestQuotaPoolLearnsEachMember(t *testing.T) {
	clk := newClock()
	a := must(New(Clock(clk)))
	limits := map[string][2]int64{"key0": {500, 200_000}, "key1": {50, 20_000}, "key2": {5000, 2_000_000}}
	v := newKeyVendor(limits)
	c, _ := memberPool(t, a, v, "key0", "key1", "key2")
	learnedAt := map[string]int{}
	for range 30 {
		send(t, c, 3000)
		clk.Advance(time.Second)
		for k, want := range limits {
			req, tok, st := learnedOf(t, a, k)
			n := v.callsOf(k)
			switch {
			case req == want[0] && tok == want[1]:
				if _, ok := learnedAt[k]; !ok {
					learnedAt[k] = n
				}
			case req != 0 || tok != 0:
				t.Fatalf("%s learned %d requests, %d tokens; its limits are %v: %+v", k, req, tok, want, st)
			case n > 0:
				t.Fatalf("%s answered %d calls and nothing is learned: %+v", k, n, st)
			}
		}
	}
	for k := range limits {
		if n, ok := learnedAt[k]; !ok || n != 1 {
			t.Errorf("%s: learned at its call %d (learned: %v); want its first", k, n, ok)
		}
	}
	v.mu.Lock()
	v.limits["key1"] = [2]int64{80, 30_000}
	v.mu.Unlock()
	before := v.callsOf("key1")
	for v.callsOf("key1") == before {
		send(t, c, 300)
		clk.Advance(time.Second)
	}
	if req, tok, st := learnedOf(t, a, "key1"); req != 80 || tok != 30_000 {
		t.Errorf("key1 raised to 80 requests, 30k tokens: learned %d, %d: %+v", req, tok, st)
	}
}

// TestQuotaTokensUnreported: a declared token limit that the server never
// reports holds nothing back: calls of any size keep going, at the
// requests' learned pace, and the limit stays unlearned.
func TestQuotaTokensUnreported(t *testing.T) {
	clk := newClock()
	a := must(New(Clock(clk)))
	v := newKeyVendor(map[string][2]int64{"key0": {600, 0}})
	v.quiet = true
	c, _ := memberPool(t, a, v, "key0")
	for range 20 {
		send(t, c, 1_000_000)
		clk.Advance(time.Second)
	}
	req, tok, st := learnedOf(t, a, "key0")
	if req != 600 || tok != 0 || len(st.Limits) != 2 || st.Limits[1].Name != "tokens" || st.Limits[1].Learned {
		t.Fatalf("learned %d requests, %d tokens: %+v; want 600 requests and the token limit unlearned", req, tok, st)
	}
}

// TestQuotaKeepsItsLimits: a limit the server reports beyond a Quota's
// declared ones (Anthropic's input and output tokens beside its tokens)
// is not kept: the Gate's limits, which a pool's costs follow, stay as
// declared.
func TestQuotaKeepsItsLimits(t *testing.T) {
	clk := newClock()
	a := must(New(Clock(clk)))
	g := must(a.Quota("anthropic", "requests", "tokens"))
	h := http.Header{}
	reset := t0.Add(time.Minute).Format(time.RFC3339)
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		h.Set("Anthropic-Ratelimit-"+kind+"-Limit", "1000")
		h.Set("Anthropic-Ratelimit-"+kind+"-Remaining", "900")
		h.Set("Anthropic-Ratelimit-"+kind+"-Reset", reset)
	}
	tr := must(httpthrottle.NewTransport(answered{http.StatusOK, h}, httpthrottle.Shared(g)))
	req := must(http.NewRequest(http.MethodPost, "https://api.anthropic.example/v1/messages", http.NoBody))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var names []string
	for _, l := range g.Limits() {
		names = append(names, l.Name)
	}
	if strings.Join(names, ",") != "requests,tokens" {
		t.Fatalf("the Quota's limits are %v after a response naming four; want requests, tokens", names)
	}
	st := a.Stats()
	if len(st) != 1 || len(st[0].Limits) != 2 || !st[0].Limits[0].Learned || !st[0].Limits[1].Learned {
		t.Fatalf("stats %+v; want requests and tokens learned, nothing else", st)
	}
}

// TestQuotaOptions: Quota's rules for names and limits, and the same
// Gate for the same name.
func TestQuotaOptions(t *testing.T) {
	a := must(New(Clock(clockwork.NewFakeClockAt(t0))))
	g := must(a.Quota("k", "requests", "tokens"))
	if again := must(a.Quota("k", "requests", "tokens")); again != g {
		t.Error("Quota of the same name and limits gave another Gate")
	}
	if d := must(a.Quota("plain")); len(d.Limits()) != 1 || d.Limits()[0].Name != "requests" {
		t.Errorf("Quota without limits has %v; want requests alone", d.Limits())
	}
	for _, c := range []struct {
		name   string
		limits []string
	}{
		{"", nil},
		{"k", []string{"requests"}},
		{"x", []string{"tokens", "requests"}},
		{"x", []string{"requests", "bytes"}},
		{"x", []string{"requests", "tokens", "tokens"}},
		{"x", []string{"requests", "requests"}},
	} {
		if _, err := a.Quota(c.name, c.limits...); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("Quota(%q, %v): %v; want ErrInvalidOption", c.name, c.limits, err)
		}
	}
}

// TestQuotaNeverForgotten: a Quota stays through the idle time and past
// MaxQuotas quotas found by Pick, which are forgotten as before.
func TestQuotaNeverForgotten(t *testing.T) {
	clk := newClock()
	a := must(New(Clock(clk), MaxQuotas(2), Idle(time.Minute)))
	g := must(a.Quota("kept", "requests", "tokens"))
	for i := range 5 {
		clk.Advance(2 * time.Minute)
		req := must(http.NewRequest(http.MethodGet, "https://h"+strconv.Itoa(i)+".example/", http.NoBody))
		if _, err := a.Pick(req); err != nil {
			t.Fatal(err)
		}
	}
	if again := must(a.Quota("kept", "requests", "tokens")); again != g {
		t.Fatal("the Quota was forgotten: asking again made another Gate")
	}
	if n := a.quotaCount(); n > 3 {
		t.Errorf("%d quotas kept; want the Quota and at most MaxQuotas(2) others", n)
	}
}

// TestQuotaFleet: under Fleet, the processes of a fleet learn a Quota of
// one name together: a process whose Quota has answered nothing knows,
// before its first call is sent, the limits another learned, its token
// limit included.
func TestQuotaFleet(t *testing.T) {
	clk := newClock()
	store := newMemStore(clk)
	a := must(New(Clock(clk), Fleet(store)))
	b := must(New(Clock(clk), Fleet(store)))
	v := newKeyVendor(map[string][2]int64{"key0": {500, 200_000}})
	c, _ := memberPool(t, a, v, "key0")
	send(t, c, 300)
	clk.Advance(time.Second)
	send(t, c, 300)
	g := must(b.Quota("key0", "requests", "tokens"))
	if req, tok, _ := learnedOf(t, b, "key0"); req != 0 || tok != 0 {
		t.Fatalf("b's Quota learned %d, %d before any sync", req, tok)
	}
	clk.Advance(time.Second)
	g.(httpthrottle.Learner).BeforeSend()
	if req, tok, st := learnedOf(t, b, "key0"); req != 500 || tok != 200_000 {
		t.Fatalf("b's Quota after its first sync: %d requests, %d tokens: %+v; want a's 500 and 200k", req, tok, st)
	}
	if _, ok := store.state["throttle:auto:quota:key0"]; !ok {
		t.Errorf("store keys %v; want the Quota's under quota:key0", slices.Collect(maps.Keys(store.state)))
	}
}
