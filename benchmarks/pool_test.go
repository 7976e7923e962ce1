package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/pool"
)

// poolSpec is the first goal of issue 39: keys of rpm requests and tpm
// tokens a minute each, and calls of 200 to 600 tokens arriving at demand
// times the keys' summed rate, each with a scaled minute to be served.
type poolSpec struct {
	keys     int
	rpm, tpm int64
	demand   float64
	minutes  int
	minute   time.Duration // one scaled minute of real time
	// tiered makes key0 the first tier (a provisioned deployment) and the
	// others the second; demand is then relative to key0 alone.
	tiered bool
	// exhausted makes key0 answer every call insufficient_quota.
	exhausted bool
	// div, if set, divides key i's limits by div[i] (uneven keys).
	div []int64
}

// limitsOf returns key i's requests and tokens a minute.
func (s poolSpec) limitsOf(i int) (rpm, tpm int64) {
	if i < len(s.div) {
		return s.rpm / s.div[i], s.tpm / s.div[i]
	}
	return s.rpm, s.tpm
}

// sum returns the keys' summed requests and tokens a minute.
func (s poolSpec) sum() (rpm, tpm int64) {
	for i := range s.keys {
		r, t := s.limitsOf(i)
		rpm, tpm = rpm+r, tpm+t
	}
	return rpm, tpm
}

// poolCaller makes one call through a contender: nil when served; a call
// shed (refused by the client before it was sent, for its deadline) or
// whose deadline came first returns an error matching errShed or
// context.DeadlineExceeded; any other error is a failed call (a final 429).
type poolCaller func(ctx context.Context, tokens int64) error

var errShed = errors.New("shed before sending")

type poolResult struct {
	name                 string
	served, shed, failed int64
	steady, steadyTok    int64 // served by the last arrival
	minutes              float64
	demandTok            int64 // tokens of every call of the trace
	vendor               *poolVendor
	atEnd                map[string][2]int64 // per key, served and tokens at the last arrival
	start                time.Time
	attempts, refused    int64
	quotaReq, quotaTok   float64
}

func (r poolResult) String() string {
	return fmt.Sprintf("%-22s quota used %6.2f%% (%4.0f RPM, %4.0fk TPM)  served %6d  shed %5d  failed %4d  attempts %6d  429s %5d (%.3f%%)",
		r.name, 100*r.used(), float64(r.steady)/r.minutes, float64(r.steadyTok)/r.minutes/1000,
		r.served, r.shed, r.failed, r.attempts, r.refused, 100*float64(r.refused)/float64(max(r.attempts, 1)))
}

// used is the share of the binding quota served by the last arrival.
func (r poolResult) used() float64 {
	return max(float64(r.steady)/r.quotaReq, float64(r.steadyTok)/r.quotaTok)
}

// runPool drives one contender, made for the vendor's URL and key names,
// through spec's trace.
func runPool(t testing.TB, spec poolSpec, name string, make func(url string, keys []string) poolCaller) poolResult {
	return runPoolWith(t, spec, name, make, nil)
}

// runPoolWith is runPool that shows the contender's maker the vendor, if
// seen is not nil, before the first call.
func runPoolWith(t testing.TB, spec poolSpec, name string, make func(url string, keys []string) poolCaller, seen func(*poolVendor)) poolResult {
	limits := map[string][2]int64{}
	var keys []string
	for i := range spec.keys {
		k := "key" + strconv.Itoa(i)
		keys = append(keys, k)
		r, tk := spec.limitsOf(i)
		limits[k] = [2]int64{r, tk}
	}
	v := newPoolVendor(spec.minute, limits)
	if spec.exhausted {
		v.keys["key0"].out = true
	}
	if seen != nil {
		seen(v)
	}
	srv := httptest.NewServer(v)
	defer srv.Close()
	call := make(srv.URL, keys)
	sumReq, sumTok := spec.sum()
	rate := spec.demand * float64(sumReq) // calls a scaled minute
	if spec.tiered {
		rate = spec.demand * float64(spec.rpm)
	}
	n := int(rate * float64(spec.minutes))
	interval := time.Duration(float64(spec.minute) / rate)
	rng := rand.New(rand.NewPCG(39, 39))
	var served, shed, failed, steady, steadyTok, demandTok atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	// The quota of the trace is the buckets' initial fill and their
	// refill until the last arrival: what is served by then counts.
	to := start.Add(time.Duration(spec.minutes) * spec.minute)
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			tm := time.NewTimer(d)
			<-tm.C
		}
		tok := 200 + rng.Int64N(401)
		demandTok.Add(tok)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), spec.minute)
			defer cancel()
			switch err := call(ctx, tok); {
			case err == nil:
				served.Add(1)
				if now := time.Now(); now.Before(to) {
					steady.Add(1)
					steadyTok.Add(tok)
				}
			case errors.Is(err, errShed), errors.Is(err, context.DeadlineExceeded):
				shed.Add(1)
			default:
				failed.Add(1)
			}
		}()
	}
	atEnd := v.snapshot()
	wg.Wait()
	span := float64(spec.minutes)
	return poolResult{
		name: name, served: served.Load(), shed: shed.Load(), failed: failed.Load(),
		steady: steady.Load(), steadyTok: steadyTok.Load(), demandTok: demandTok.Load(),
		vendor: v, atEnd: atEnd, start: start,
		attempts: v.attempts.Load(), refused: v.refused.Load(),
		quotaReq: float64(sumReq) * (1 + span), quotaTok: float64(sumTok) * (1 + span), minutes: span,
	}
}

// poolRequest is a call of tokens to url with key, or without one.
func poolRequest(ctx context.Context, url, key string, tokens int64) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", http.NoBody)
	req.Header.Set("X-Tokens", strconv.FormatInt(tokens, 10))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// status sends req on c and returns its status, or 0 and the error.
func status(c *http.Client, req *http.Request) (int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// poolTransport is this library: a pool.Pool of one Limiter per key under
// the Transport, routed by each key's credential.
func poolTransport(spec poolSpec) func(url string, keys []string) poolCaller {
	return func(url string, keys []string) poolCaller {
		var ms []pool.Member
		routes := map[string]func(*http.Request){}
		for i, k := range keys {
			rpm, tpm := spec.limitsOf(i)
			req := must(throttle.New(rpm, throttle.Per(rpm, spec.minute), throttle.WithName("requests")))
			tok := must(throttle.New(tpm, throttle.Per(tpm, spec.minute), throttle.WithName("tokens")))
			m := pool.Member{Name: k, Gate: must(throttle.NewLimiter(req, tok))}
			if spec.tiered && k != "key0" {
				m.Tier = 1
			}
			ms = append(ms, m)
			routes[k] = must(httpthrottle.RouteTo(url, url, http.Header{"Authorization": {"Bearer " + k}}))
		}
		return poolCall(spec, url, ms, routes, nil)
	}
}

// poolCall is a caller through a pool of ms under the Transport, with
// routes, whose calls cost one request and their tokens; after, if not
// nil, runs after every call.
func poolCall(spec poolSpec, url string, ms []pool.Member, routes map[string]func(*http.Request), after func()) poolCaller {
	p := must(pool.New(ms))
	tr := must(httpthrottle.NewTransport(baseTransport(64), httpthrottle.Shared(p),
		httpthrottle.WithRoutes(routes), httpthrottle.WithMaxPause(spec.minute),
		httpthrottle.WithCost(func(req *http.Request, _ throttle.Gate) ([]int64, error) {
			n, err := strconv.ParseInt(req.Header.Get("X-Tokens"), 10, 64)
			return []int64{1, n}, err
		})))
	c := &http.Client{Transport: tr}
	return func(ctx context.Context, tokens int64) error {
		s, err := status(c, poolRequest(ctx, url, "", tokens))
		if after != nil {
			after()
		}
		switch {
		case err != nil:
			return err
		case s != http.StatusOK:
			return fmt.Errorf("status %d", s)
		}
		return nil
	}
}

// poolFirstGoal is issue 39's first goal: 4 keys x 500 RPM / 200k TPM at
// 120% demand for 10 minutes, THROTTLE_POOL_MINUTE of real time a minute
// (default 3s).
func poolFirstGoal(t testing.TB, minutes int) poolSpec {
	minute := 3 * time.Second
	if s := os.Getenv("THROTTLE_POOL_MINUTE"); s != "" {
		minute = must(time.ParseDuration(s))
	}
	return poolSpec{keys: 4, rpm: 500, tpm: 200_000, demand: 1.2, minutes: minutes, minute: minute}
}

// TestPoolSmoke runs the pool for two scaled minutes of a second each, at
// a demand above the quota with the buckets' initial fill. Its bounds are
// loose: on a machine loaded several times over, requests are delayed and
// reordered between their permits and the vendor, which then refuses a
// few; a pool that spreads badly or ignores the quotas (round robin draws
// 25-77% 429s at this demand) still fails it.
func TestPoolSmoke(t *testing.T) {
	spec := poolSpec{keys: 4, rpm: 100, tpm: 40_000, demand: 2.5, minutes: 2, minute: time.Second}
	r := runPool(t, spec, "pool", poolTransport(spec))
	t.Log(r)
	if raceDetector {
		// Run for the detector, which watches the pool and the Transport
		// under load; the README's test command, without it, checks the
		// figures, which the detector's slowdown at a process's start
		// takes below the bounds.
		return
	}
	if r.used() < 0.9 || float64(r.refused) > 0.05*float64(r.attempts) || float64(r.failed) > 0.01*float64(r.served) {
		t.Errorf("pool: %v", r)
	}
}

// TestPoolTable prints the first goal's rows of benchmarks/README.md.
// THROTTLE_POOL_TABLE=1 runs it (3 x 10 scaled minutes).
func TestPoolTable(t *testing.T) {
	if os.Getenv("THROTTLE_POOL_TABLE") == "" {
		t.Skip("THROTTLE_POOL_TABLE=1 runs the real-time table")
	}
	minutes := 10
	if s := os.Getenv("THROTTLE_POOL_MINUTES"); s != "" {
		minutes = must(strconv.Atoi(s))
	}
	spec := poolFirstGoal(t, minutes)
	for _, c := range []struct {
		name string
		make func(poolSpec) func(string, []string) poolCaller
	}{{"pool (this library)", poolTransport}, {"round robin + retries", poolRoundRobin}, {"LiteLLM usage-based", poolLiteLLM}} {
		r := runPool(t, spec, c.name, c.make(spec))
		t.Log(r)
	}
}
