package auto

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// autoRand fixes the jitter, for tests.
func autoRand(v float64) Option {
	return func(c *autoConfig) error { c.rand = func() float64 { return v }; return nil }
}

// newAutoFake returns a Limiter on a fake clock with no jitter (the
// random factor is the top of its range).
func newAutoFake(t *testing.T, opts ...Option) (*Limiter, *clockwork.FakeClock) {
	t.Helper()
	clk := newClock()
	a := must(New(append([]Option{Clock(clk), autoRand(0.999999)}, opts...)...))
	return a, clk
}

func get(t *testing.T, url string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// tell passes a response with header h and status to the quota of req, as
// the Transport does after an attempt.
func tell(t *testing.T, a *Limiter, clk clockwork.Clock, req *http.Request, status int, h http.Header) *autoGate {
	t.Helper()
	return tellAs(t, a, clk, req, status, h, false)
}

// tellAs is tell, with the Transport's heed first (the pause on a
// refusal) when heed is set.
func tellAs(t *testing.T, a *Limiter, clk clockwork.Clock, req *http.Request, status int, h http.Header, heed bool) *autoGate {
	t.Helper()
	l, err := a.limiterOf(req)
	if err != nil {
		t.Fatal(err)
	}
	costs := make([]int64, len(l.bs))
	for i := range costs {
		costs[i] = 1
	}
	ans := answerOf(t, clk, req, status, h, l, heed)
	ans.Costs = costs
	l.Learn(ans)
	return l
}

func ietf(q, w, r int64) http.Header {
	h := http.Header{}
	h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, q, w))
	h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=1`, r))
	return h
}

func limitStats(t *testing.T, a *Limiter, key string) []LimitStats {
	t.Helper()
	for _, q := range a.Stats() {
		if q.Key == key {
			return q.Limits
		}
	}
	t.Fatalf("no quota %q in %+v", key, a.Stats())
	return nil
}

func perSec(r throttle.Rate) float64 { return perSecond(r) }

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-3*math.Max(1, math.Abs(want)) }

func TestAutoLearnsIETFPolicy(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.example.com/v1/x")
	tell(t, a, clk, req, 200, ietf(50, 1, 40))
	ls := limitStats(t, a, "api.example.com")
	if len(ls) != 1 {
		t.Fatalf("limits %+v; want one", ls)
	}
	l := ls[0]
	// The policy takes over the congestion-controlled bucket "requests".
	if l.Name != "requests" || !l.Learned || l.Quota != 50 || l.Window != time.Second {
		t.Fatalf("learned %+v", l)
	}
	// First share: 5% of the rate times the fraction of the burst left,
	// the next call spaced by autoSpace times the fraction spent.
	if got, want := perSec(l.Rate), 1/(1/(50*autoShare0*40.0/50)+autoSpace*10.0/50); !near(got, want) {
		t.Errorf("first rate %v/s; want %v/s", got, want)
	}
}

func TestAutoShareTracksRemaining(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.example.com/")
	l := tell(t, a, clk, req, 200, ietf(50, 1, 50))
	ln := autoOf(l).lanes[0]
	start := ln.rate

	// The remaining count stays full while the client spends at its rate:
	// nobody else uses the quota, so the rate grows (at most doubling per
	// measurement, one every 200 ms at 50/s) up to and past the server's
	// rate, the surplus of the count being spent too.
	rate := start
	for range 2 {
		n := int(math.Ceil(rate))
		for range n {
			clk.Advance(time.Second / time.Duration(n))
			tell(t, a, clk, req, 200, ietf(50, 1, 50))
		}
		if ln.rate <= rate || ln.rate > rate*math.Exp2(5) {
			t.Fatalf("rate went %v -> %v in a second with the quota idle", rate, ln.rate)
		}
		rate = ln.rate
	}
	if rate < 50 {
		t.Fatalf("rate %v/s after 2 s alone; want at least the quota's 50/s", rate)
	}

	// Now the count falls by 50 a second more than refill explains while
	// the client spends 1: others take the quota. The client's share of
	// the target falls to almost nothing.
	rem := int64(40)
	// The floor of the cuts is where the increase every client gets
	// (autoFair) balances them: 2/s here.
	for i := 0; ln.rate > 2.1; i++ {
		if i == 20 {
			t.Fatalf("rate %v/s after 20 s of others spending the whole quota; want at most 2.1/s", ln.rate)
		}
		before := ln.rate
		clk.Advance(time.Second)
		rem = max(rem-10, 0)
		tell(t, a, clk, req, 200, ietf(50, 1, rem))
		// Halved at most, averaged with the rate before: 0.75 a step,
		// plus the increase every client gets.
		if ln.rate > 0.75*before+autoFair*50+1e-9 {
			t.Fatalf("rate went %v -> %v/s; want a cut to at most 0.75", before, ln.rate)
		}
	}
	// Its level never exceeds its share of what remains.
	if lvl := ln.b.Status().Level; lvl > float64(rem)*ln.rate/ln.ceil+1 {
		t.Errorf("level %v above the share of %d remaining", lvl, rem)
	}
}

// TestAutoSharesConverge runs several clients on one simulated quota,
// stepped on the fake clock: each spends at its learned rate, and every
// response reports the shared remaining count. Their total converges to
// the quota's rate without the count reaching zero.
func TestAutoSharesConverge(t *testing.T) {
	const n, rate, burst = 8, 50.0, 50.0
	clk := newClock()
	var clients []*Limiter
	var lanes []*lane
	req := get(t, "https://api.example.com/")
	level := burst
	for range n {
		a := must(New(Clock(clk), autoRand(0.5)))
		clients = append(clients, a)
		l := tell(t, a, clk, req, 200, ietf(burst, 1, int64(level)))
		level--
		lanes = append(lanes, autoOf(l).lanes[0])
	}
	const step = 10 * time.Millisecond
	credit := make([]float64, n)
	zero := 0
	var total float64
	for i := range 2000 { // 20 s
		clk.Advance(step)
		level = min(burst, level+rate*step.Seconds())
		for c, a := range clients {
			credit[c] += lanes[c].rate * step.Seconds()
			for credit[c] >= 1 {
				credit[c]--
				level--
				if level < 0 {
					zero++
					level = 0
				}
				tell(t, a, clk, req, 200, ietf(burst, 1, int64(level)))
			}
		}
		if i >= 1500 {
			s := 0.0
			for _, ln := range lanes {
				s += ln.rate
			}
			total += s / 500
		}
	}
	if zero > 0 {
		t.Errorf("the shared count was spent %d times", zero)
	}
	if total < 0.8*rate || total > 1.1*rate {
		t.Errorf("total rate over the last 5 s %.1f/s; want about %v/s", total, rate)
	}
}

func TestAutoCongestionControl(t *testing.T) {
	a, clk := newAutoFake(t, InitialRate(throttle.Per(10, time.Second)))
	req := get(t, "https://api.example.com/")
	l, _ := a.limiterOf(req)
	ln := autoOf(l).lanes[0]
	if ln.learned || perSec(ln.b.Status().Rate) != 10 {
		t.Fatalf("start: %+v, rate %v", ln, ln.b.Status().Rate)
	}
	ok := func(n int, every time.Duration) {
		for range n {
			clk.Advance(every)
			tell(t, a, clk, req, 200, http.Header{})
		}
	}
	// Slow start: doubling every autoStartDouble, by the time each epoch
	// (250ms at least) in which the calls went at the rate lasted.
	ok(4, 100*time.Millisecond) // 300ms from the first call, at 10/s
	want1 := 10 * math.Exp2(0.3/autoStartDouble.Seconds())
	if !near(ln.rate, want1) {
		t.Fatalf("after one busy epoch: %v/s; want %v/s", ln.rate, want1)
	}
	// An idle client does not grow.
	ok(1, 5*time.Second)
	if !near(ln.rate, want1) {
		t.Fatalf("after an idle epoch: %v/s; want %v/s", ln.rate, want1)
	}
	// Calls at 40/s for 0.75 s: the rate doubles every autoStartDouble.
	for range 3 {
		ok(10, 25*time.Millisecond)
	}
	if want := want1 * math.Exp2(0.75/autoStartDouble.Seconds()); math.Abs(ln.rate-want) > 0.03*want {
		t.Fatalf("rate %v after 0.75 s busy; want about %v", ln.rate, want)
	}
	// It stops where the calls go at less than half of it: 80/s.
	for range 40 {
		ok(10, 25*time.Millisecond)
	}
	peak := ln.rate
	if peak < 70 || peak > 80*1.1 {
		t.Fatalf("rate %v after 13 s of calls at 40/s; want about 80", peak)
	}
	// The refusal that ends slow start cuts the rate by autoStartCut
	// (about 0.27), once per epoch.
	clk.Advance(time.Millisecond)
	tell(t, a, clk, req, http.StatusTooManyRequests, http.Header{})
	tell(t, a, clk, req, http.StatusTooManyRequests, http.Header{})
	if want := peak * autoStartCut * 0.9999999; !near(ln.rate, want) {
		t.Fatalf("after the first refusal: %v/s; want %v/s", ln.rate, want)
	}
	if ln.refusals != 1 {
		t.Fatalf("%d cuts for one congestion; want 1", ln.refusals)
	}
	// A later refusal cuts to what the server let through since the
	// last one, here 30 calls in 1 s, within [0.5, 0.8] of the rate.
	before := ln.rate
	ok(30, time.Second/30)
	clk.Advance(time.Millisecond)
	tell(t, a, clk, req, http.StatusTooManyRequests, http.Header{})
	want := min(max(30/1.001, before*autoSlowCut), before*autoCut)
	if math.Abs(ln.rate-want) > 0.05*want {
		t.Fatalf("after the second refusal: %v/s; want about %v/s", ln.rate, want)
	}
	// After the cut, calls at the rate climb back to W, then past it:
	// probing, faster the longer no refusal comes.
	w := ln.wmax
	if ln.rate >= w {
		t.Fatalf("rate %v not below W %v after a cut", ln.rate, w)
	}
	var steps []float64
	for range 40 {
		ok(int(math.Ceil(ln.rate/4)), time.Second/time.Duration(math.Ceil(ln.rate)))
		steps = append(steps, ln.rate)
	}
	if steps[len(steps)-1] <= w*1.05 {
		t.Fatalf("rate %v after 40 epochs unrefused; want it past W %v: %v", steps[len(steps)-1], w, steps)
	}
	n := len(steps)
	if steps[n-1]-steps[n-2] <= steps[n/2]-steps[n/2-1] {
		t.Errorf("probe steps do not grow: %v", steps)
	}
	// Refusals that are not 429s count too: a 503 with Retry-After.
	h := http.Header{}
	h.Set("Retry-After", "1")
	clk.Advance(time.Second)
	tell(t, a, clk, req, http.StatusServiceUnavailable, h)
	if ln.refusals != 3 {
		t.Errorf("a 503 with Retry-After made %d cuts in all; want 3", ln.refusals)
	}
}

// TestAutoCongestionEvents follows the refusals of one congestion: the
// ones that come before the cut could have an effect cut nothing, one too
// soon after the pause to measure the share cuts least, and the probe
// after a cut grows slowly at first, then as fast as slow start.
func TestAutoCongestionEvents(t *testing.T) {
	a, clk := newAutoFake(t, InitialRate(throttle.Per(20, time.Second)))
	req := get(t, "https://api.example.com/")
	l, _ := a.limiterOf(req)
	ln := autoOf(l).lanes[0]
	// busy makes calls at the lane's rate for d.
	busy := func(d time.Duration) {
		end := clk.Now().Add(d)
		for clk.Now().Before(end) {
			clk.Advance(time.Duration(float64(time.Second) / ln.rate))
			tell(t, a, clk, req, 200, http.Header{})
		}
	}
	// refuse is a 429 with Retry-After: 1, as the Transport heeds it: a
	// pause of the Limiter, which Auto lengthens by up to a quarter (here
	// all of it).
	refuse := func() {
		l.PauseUntil(clk.Now().Add(time.Second))
		h := http.Header{}
		h.Set("Retry-After", "1")
		tell(t, a, clk, req, http.StatusTooManyRequests, h)
	}
	busy(time.Second)
	r0 := ln.rate
	refuse()
	r1 := ln.rate
	if want := r0 * autoStartCut * 0.999999; !near(r1, want) || ln.refusals != 1 {
		t.Fatalf("first refusal: %v/s, %d cuts; want %v/s, 1", r1, ln.refusals, want)
	}
	if until, ok := pausedUntil(l.bs[0]); !ok || until.Sub(clk.Now()) < 1249*time.Millisecond {
		t.Fatalf("paused until %v, %v from now; want 1.25 s", until, until.Sub(clk.Now()))
	}
	// Calls sent as the pause ends, refused before the cut shows: the
	// same congestion.
	clk.Advance(1250*time.Millisecond + 100*time.Millisecond)
	refuse()
	if ln.rate != r1 || ln.refusals != 1 {
		t.Fatalf("refused within an epoch after the pause: %v/s, %d cuts; want %v/s, 1", ln.rate, ln.refusals, r1)
	}
	// A refusal after that epoch is new, but too soon after the pause to
	// measure the share: the least cut, not the share the half second
	// after the pause would suggest.
	clk.Advance(150 * time.Millisecond)
	busy(400 * time.Millisecond)
	r2 := ln.rate
	refuse()
	if want := r2 * autoCut * 0.999999; !near(ln.rate, want) || ln.refusals != 2 {
		t.Fatalf("refused 650ms after the pause: %v/s, %d cuts; want %v/s, 2", ln.rate, ln.refusals, want)
	}
	w := ln.wmax
	// Unrefused, the rate climbs back to W, then probes: slowly at first,
	// then doubling every autoDouble.
	clk.Advance(1250 * time.Millisecond)
	busy(time.Second)
	if ln.rate < w || ln.rate > 1.05*w {
		t.Fatalf("a second after the pause: %v/s; want W, %v/s, or a little more", ln.rate, w)
	}
	before := ln.rate
	busy(time.Second)
	early := ln.rate / before
	busy(autoProbeRamp*autoDouble - 2*time.Second)
	before = ln.rate
	busy(2 * time.Second)
	late := ln.rate / before
	// The rate moves at the end of each epoch (250ms here), by the time
	// it lasted: 2 s see the growth of 1.75 s to 2.25 s.
	lo, hi := math.Exp2(1.75/autoDouble.Seconds()), math.Exp2(2.25/autoDouble.Seconds())
	if late < 0.99*lo || late > 1.01*hi {
		t.Errorf("probe growth over 2 s, %v after the cut: x%.3f; want x%.3f-%.3f, slow start's", autoProbeRamp*autoDouble, late, lo, hi)
	}
	if max := math.Exp2(1 / autoDouble.Seconds() * 3.5 / (autoProbeRamp * autoDouble.Seconds())); early > max {
		t.Errorf("probe growth over the first second at W: x%.3f; want at most x%.3f", early, max)
	}
}

func TestAutoFloorAndMax(t *testing.T) {
	a, clk := newAutoFake(t, InitialRate(throttle.Per(4, time.Second)), Range(throttle.Per(1, time.Second), throttle.Per(20, time.Second)))
	req := get(t, "https://api.example.com/")
	l, _ := a.limiterOf(req)
	ln := autoOf(l).lanes[0]
	for range 20 {
		clk.Advance(time.Second)
		tell(t, a, clk, req, http.StatusTooManyRequests, http.Header{})
	}
	if ln.rate != 1 {
		t.Errorf("rate %v after refusals; want the floor 1/s", ln.rate)
	}
	// A learned limit above the maximum is capped.
	tell(t, a, clk, req, 200, ietf(1000, 1, 1000))
	for range 20 {
		clk.Advance(time.Second)
		tell(t, a, clk, req, 200, ietf(1000, 1, 1000))
	}
	if got := perSec(ln.b.Status().Rate); got > 20 {
		t.Errorf("rate %v/s; want at most the maximum 20/s", got)
	}
}

func TestAutoKeyHashesCredential(t *testing.T) {
	a, clk := newAutoFake(t)
	secret := "sk-very-secret-0123456789"
	r1 := get(t, "https://api.example.com/", "Authorization", "Bearer "+secret)
	r2 := get(t, "https://api.example.com/", "Authorization", "Bearer sk-other")
	r3 := get(t, "https://api.example.com/other", "Authorization", "Bearer "+secret)
	l1, _ := a.limiterOf(r1)
	l2, _ := a.limiterOf(r2)
	l3, _ := a.limiterOf(r3)
	if autoOf(l1) == autoOf(l2) {
		t.Error("two credentials share one quota")
	}
	if autoOf(l1) != autoOf(l3) {
		t.Error("one credential has two quotas on one host")
	}
	tell(t, a, clk, r1, 200, ietf(50, 1, 10))
	for _, q := range a.Stats() {
		if strings.Contains(q.Key, "secret") || strings.Contains(fmt.Sprint(q), secret) {
			t.Errorf("the secret shows in Stats: %+v", q)
		}
		if !strings.HasPrefix(q.Key, "api.example.com#") {
			t.Errorf("key %q; want the host and a hash", q.Key)
		}
	}
	// A custom key is used as given.
	b := must(New(Key(func(*http.Request) string { return "tenant" })))
	lb, _ := b.limiterOf(r1)
	if autoOf(lb).key.String() != "tenant" {
		t.Errorf("custom key %q", autoOf(lb).key)
	}
}

// TestAutoWithinNamesApart: Within's buckets are joined to the learned
// ones by name, so a Limiter with two buckets of one name is refused at the
// request, with an error that says so, rather than joined wrongly.
func TestAutoWithinNamesApart(t *testing.T) {
	clk := newClock()
	var bs []*throttle.Bucket
	for range 2 {
		b, err := throttle.New(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("same"))
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	user, err := throttle.NewLimiter(bs...)
	if err != nil {
		t.Fatal(err)
	}
	a := must(New(Clock(clk), Within(httpthrottle.Shared(user))))
	_, err = a.Pick(get(t, "https://api.example.com/"))
	if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), `"same"`) {
		t.Fatalf("Limiter = %v; want ErrInvalidOption naming the limit", err)
	}
}

func TestAutoWithinStaysTheCeiling(t *testing.T) {
	clk := newClock()
	mine, err := throttle.New(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("mine"))
	if err != nil {
		t.Fatal(err)
	}
	user, _ := throttle.NewLimiter(mine)
	a := must(New(Clock(clk), Within(httpthrottle.Shared(user))))
	req := get(t, "https://api.example.com/")
	l := tell(t, a, clk, req, 200, ietf(1000, 1, 1000))
	if l.bs[0] != mine || len(l.bs) != 2 || l.Bucket("mine") != mine || len(l.Limits()) != 2 || l.Limits()[0].Name != "mine" {
		t.Fatalf("limiter over %v (limits %v); want the configured bucket first, then the learned one", l.bs, l.Limits())
	}
	l2, _ := a.limiterOf(req)
	if l2 != l {
		t.Error("the joined Limiter is made again for every request")
	}
	// However generous the server, a request must pass the configured
	// bucket: 5 at once, then none.
	for range 20 {
		clk.Advance(time.Second)
		tell(t, a, clk, req, 200, ietf(1000, 1, 1000))
	}
	n := 0
	for {
		ok, _ := l.TryAcquire(1, 1)
		if !ok {
			break
		}
		n++
	}
	learned := l.bs[1].Status().Capacity
	if n != int(min(5, learned)) {
		t.Errorf("%d granted at once; want the least of the configured 5 and the learned %d", n, learned)
	}
	if got := mine.Status().Level; got != float64(5-n) {
		t.Errorf("configured bucket holds %v; want %d", got, 5-n)
	}
}

func TestAutoLearnsVendorFamilies(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.openai.com/v1/chat/completions")
	h := http.Header{}
	headers.SetOpenAI(h, "requests", 600, 590, time.Second)
	headers.SetOpenAI(h, "tokens", 150000, 140000, 4*time.Second)
	tell(t, a, clk, req, 200, h)
	ls := limitStats(t, a, "api.openai.com")
	if len(ls) != 2 || ls[0].Name != "requests" || ls[1].Name != "tokens" {
		t.Fatalf("limits %+v; want requests and tokens", ls)
	}
	if ls[0].Quota != 600 || ls[0].Window != time.Minute || ls[1].Quota != 150000 {
		t.Errorf("learned %+v", ls)
	}
	// A token bucket holds its share of the server's burst, so that a
	// prompt's cost is not capped at a quarter second of the rate.
	if rate, c := perSec(ls[1].Rate), ls[1].Capacity; float64(c) < 140000*rate/2500-1 || float64(c) <= rate*autoBurstTime {
		t.Errorf("tokens capacity %d at %v/s; want the share of the 140000 remaining", c, rate)
	}

	req = get(t, "https://api.anthropic.com/v1/messages")
	h = http.Header{}
	for _, kind := range []string{"requests", "input-tokens", "output-tokens"} {
		headers.SetAnthropic(h, kind, 4000, 3000, time.Second, clk.Now())
	}
	tell(t, a, clk, req, 200, h)
	ls = limitStats(t, a, "api.anthropic.com")
	if len(ls) != 3 || ls[1].Name != "input-tokens" || ls[2].Name != "output-tokens" {
		t.Fatalf("limits %+v", ls)
	}

	// GitHub: each resource is a quota, and requests of a path go to the
	// resource their responses named.
	search := get(t, "https://api.github.com/search/code")
	h = http.Header{}
	headers.SetXRateLimit(h, 30, 29, time.Minute, true, clk.Now())
	h.Set("X-Ratelimit-Resource", "search")
	tell(t, a, clk, search, 200, h)
	l, _ := a.limiterOf(get(t, "https://api.github.com/search/issues"))
	if got := autoOf(l).key.resource; got != "search" {
		t.Fatalf("a search request went to resource %q", got)
	}
	if ln := autoOf(l).lanes[0]; !ln.learned || ln.limit != 30 || ln.window != time.Minute {
		t.Errorf("search quota %+v", ln)
	}
	core, _ := a.limiterOf(get(t, "https://api.github.com/repos/x/y"))
	if autoOf(core) == autoOf(l) {
		t.Error("a core request went to the search quota")
	}

	// Unnamed X-RateLimit-* carry no window: nothing is learned.
	req = get(t, "https://other.example.com/")
	h = http.Header{}
	headers.SetXRateLimit(h, 100, 50, time.Minute, false, clk.Now())
	tell(t, a, clk, req, 200, h)
	if ls := limitStats(t, a, "other.example.com"); ls[0].Learned {
		t.Errorf("learned %+v from a quota without window", ls)
	}
}

type tunedLog struct {
	mu sync.Mutex
	ev []throttle.Event
}

func (o *tunedLog) Observe(e throttle.Event) {
	if e.Kind == throttle.EventTuned {
		o.mu.Lock()
		o.ev = append(o.ev, e)
		o.mu.Unlock()
	}
}

func TestAutoObserverAndEviction(t *testing.T) {
	var log tunedLog
	a, clk := newAutoFake(t, Observer(&log), Idle(time.Minute))
	req := get(t, "https://api.example.com/")
	tell(t, a, clk, req, 200, ietf(50, 1, 50))
	if len(log.ev) == 0 {
		t.Fatal("no EventTuned")
	}
	e := log.ev[len(log.ev)-1]
	if e.Limit != "requests" || perSec(e.Rate) <= 0 || e.Cost < 1 {
		t.Errorf("event %+v", e)
	}
	for i := range 10 {
		a.limiterOf(get(t, "https://h"+strconv.Itoa(i)+".example.com/"))
	}
	if a.quotaCount() != 11 {
		t.Fatalf("Len %d; want 11", a.quotaCount())
	}
	clk.Advance(2 * time.Minute)
	for range 30 {
		a.limiterOf(get(t, "https://fresh.example.com/"))
	}
	if a.quotaCount() != 1 {
		t.Errorf("Len %d after every other quota went unused for 2 minutes; want 1", a.quotaCount())
	}
}

// fakeVendor answers with IETF fields for a quota of 50 per second.
type fakeVendor struct {
	clk   clockwork.Clock
	mu    sync.Mutex
	level int64
	calls int
}

func (v *fakeVendor) RoundTrip(r *http.Request) (*http.Response, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	h := http.Header{}
	status := 200
	if v.level > 0 {
		v.level--
	} else {
		status = http.StatusTooManyRequests
		h.Set("Retry-After", "1")
	}
	headers.SetIETF(h, "default", 50, time.Second, v.level, time.Second)
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

func TestAutoThroughTransport(t *testing.T) {
	clk := newClock()
	a := must(New(Clock(clk)))
	v := &fakeVendor{clk: clk, level: 10}
	c := &http.Client{Transport: must(httpthrottle.NewTransport(v, a))}
	resp, err := c.Get("https://api.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ls := limitStats(t, a, "api.example.com")
	if !ls[0].Learned || ls[0].Quota != 50 {
		t.Fatalf("after one call through the Transport: %+v", ls)
	}
}

// TestAutoTwoFamiliesOnOneResponse: a gateway that sends two header
// families at once, or two IETF policies of which the second is named
// "requests", reports two limits. Each is learned on a bucket of its own;
// before, the second was given the congestion-controlled bucket the first
// had taken over, and joining the two panicked inside RoundTrip.
func TestAutoTwoFamiliesOnOneResponse(t *testing.T) {
	ietfAnd := func(kv ...string) http.Header {
		h := http.Header{}
		h.Set("RateLimit-Policy", `"p";q=10;w=1`)
		h.Set("RateLimit", `"p";r=9;t=1`)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	twoPolicies := http.Header{}
	twoPolicies.Set("RateLimit-Policy", `"a";q=10;w=1, "requests";q=100;w=60`)
	cases := []struct {
		name   string
		url    string
		key    string // the quota learned on
		h      http.Header
		limits []LimitStats // Name, Quota, Window
	}{
		{"two IETF policies", "https://two.example.com/", "two.example.com", twoPolicies,
			[]LimitStats{{Name: "requests", Quota: 10, Window: time.Second}, {Name: "requests#2", Quota: 100, Window: time.Minute}}},
		{"IETF and OpenAI", "https://openai.example.com/", "openai.example.com",
			ietfAnd("X-Ratelimit-Limit-Requests", "600", "X-Ratelimit-Remaining-Requests", "599", "X-Ratelimit-Reset-Requests", "100ms"),
			[]LimitStats{{Name: "requests", Quota: 10, Window: time.Second}, {Name: "requests#2", Quota: 600, Window: time.Minute}}},
		{"IETF and GitHub", "https://github.example.com/repos/x", "github.example.com/core",
			ietfAnd("X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "4999", "X-Ratelimit-Reset", "3600", "X-Ratelimit-Resource", "core"),
			[]LimitStats{{Name: "requests", Quota: 10, Window: time.Second}, {Name: "requests#2", Quota: 5000, Window: time.Hour}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, clk := newAutoFake(t)
			req := get(t, c.url)
			for range 3 { // the same response again reuses the lanes
				tell(t, a, clk, req, 200, c.h)
			}
			var got []LimitStats
			for _, ls := range limitStats(t, a, c.key) {
				got = append(got, LimitStats{Name: ls.Name, Quota: ls.Quota, Window: ls.Window})
			}
			if fmt.Sprint(got) != fmt.Sprint(c.limits) {
				t.Errorf("learned %+v, want %+v", got, c.limits)
			}
			l, err := a.limiterOf(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.TryAcquire(1, 1); err != nil {
				t.Errorf("a call on the learned limits: %v", err)
			}
		})
	}
}

// TestAutoStartCut drives N independent clients in slow start, each at its
// learned rate, against a server of 50/s with a burst of one second of it
// (0.2 s for the lone client's second case), on the fake clock: the cut
// that ends slow start lands their sum at or under the quota (the case it
// is sized for), after one 429 each, however many they are.
func TestAutoStartCut(t *testing.T) {
	for _, tc := range []struct {
		n      int
		burst  float64
		lo, hi float64 // the sum of the cut rates, as a part of the quota
	}{
		{1, 50, 0.8, 1}, {10, 50, 0.75, 1}, {1, 10, 0.35, 0.7},
	} {
		clk := newClock()
		const quota = 50.0
		level, at := tc.burst, clk.Now()
		type client struct {
			a    *Limiter
			ln   *lane
			next time.Time
			cut  float64
		}
		req := get(t, "https://api.example.com/")
		rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
		cs := make([]*client, tc.n)
		for i := range cs {
			a := must(New(Clock(clk), autoRand(0.999999)))
			l, _ := a.limiterOf(req)
			// Clients start apart, and send apart: not in lockstep.
			cs[i] = &client{a: a, ln: autoOf(l).lanes[0], next: clk.Now().Add(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))}
		}
		left := tc.n
		for step := 0; left > 0 && step < 1e6; step++ {
			c := cs[0]
			for _, d := range cs[1:] {
				if d.next.Before(c.next) {
					c = d
				}
			}
			clk.Advance(c.next.Sub(clk.Now()))
			now := clk.Now()
			level = min(tc.burst, level+quota*now.Sub(at).Seconds())
			at = now
			c.next = now.Add(time.Duration((0.9 + 0.2*rng.Float64()) * float64(time.Second) / c.ln.rate))
			if level >= 1 {
				level--
				tell(t, c.a, clk, req, 200, http.Header{})
				continue
			}
			tell(t, c.a, clk, req, http.StatusTooManyRequests, http.Header{})
			if c.cut == 0 {
				c.cut = c.ln.rate
				left--
			}
			// The Transport's pause on a bare 429.
			c.next = now.Add(500 * time.Millisecond)
		}
		sum, most := 0.0, int64(0)
		for _, c := range cs {
			sum += c.cut
			most = max(most, c.ln.refusals)
		}
		t.Logf("N=%d, burst %v: the cut rates sum to %.1f/s", tc.n, tc.burst, sum)
		if sum < tc.lo*quota || sum > tc.hi*quota || most != 1 {
			t.Errorf("N=%d, burst %v: the cut rates sum to %.1f/s (want %.0f-%.0f), most cuts %d (want 1)", tc.n, tc.burst, sum, tc.lo*quota, tc.hi*quota, most)
		}
	}
}
