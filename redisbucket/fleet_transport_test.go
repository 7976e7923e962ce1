package redisbucket_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// The fleet's HTTP test: 8 OS processes (this test binary, re-executed),
// each an http.Client through the Transport, WithAccounting, on one
// redisbucket.Limiter of requests and tokens, against a loopback vendor in
// the parent that enforces the same quota and answers with OpenAI's
// headers. Midway the vendor halves its quota and refuses one request with
// 429 and Retry-After: every process must hold off from then on until the
// pause ends, and the fleet goes on at the new quota.
const (
	ftProcs     = 8
	ftCalls     = 40 // per process
	ftWorkers   = 4  // per process
	ftRate      = 50 // requests a second, the capacity too; halved midway
	ftTokens    = 6000
	ftHalveAt   = 3 * time.Second
	ftPause     = time.Second                      // the 429's Retry-After
	envFTChild  = "THROTTLE_TEST_FLEET_HTTP_CHILD" // redis addr,vendor URL,proc
	ftResultFmt = "fleethttp calls=%d failed=%d unexplained=%d probe=%s"
	ftProbeAt   = ftHalveAt + 300*time.Millisecond // inside the pause, in every process
	ftWarmPath  = "/warm"                          // outside the quota: a child's connections opened before the start
)

// ftVendor is the loopback vendor: a continuous bucket of requests (and
// one of tokens, by max_tokens, which never binds here), OpenAI's
// x-ratelimit-* on every answer, a 429 without Retry-After when spent.
type ftVendor struct {
	mu            sync.Mutex
	start         time.Time
	rate, cap     float64 // requests
	level, tokens float64
	last          time.Time
	halved        bool
	refusedAt     time.Time // the halving's 429, with Retry-After
	arrivals      []ftArrival
	refusals      int
}

type ftArrival struct {
	at   time.Duration // since start
	sent time.Time     // when its process handed it to the wire (ftSentAt)
	proc string
	ok   bool
}

// ftSentAt is the header in which a child stamps each request with the
// instant, Unix ns, its Transport handed it to the wire: this machine's
// processes share one clock.
const ftSentAt = "X-Sent-At"

// ftStamp is a child's base RoundTripper: it stamps ftSentAt.
type ftStamp struct{ base http.RoundTripper }

func (s ftStamp) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(ftSentAt, strconv.FormatInt(time.Now().UnixNano(), 10))
	return s.base.RoundTrip(r)
}

func (v *ftVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if r.URL.Path == ftWarmPath {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	v.mu.Lock()
	now := time.Now()
	dt := now.Sub(v.last).Seconds()
	v.last = now
	v.level = math.Min(v.cap, v.level+v.rate*dt)
	v.tokens = math.Min(ftTokens, v.tokens+ftTokens*dt)
	h := w.Header()
	retryAfter := false
	if !v.halved && now.Sub(v.start) >= ftHalveAt {
		v.halved, v.refusedAt = true, now
		v.rate, v.cap = ftRate/2, ftRate/2
		v.level = math.Min(v.level, v.cap)
		retryAfter = true
	}
	ok := !retryAfter && v.level >= 1 && v.tokens >= 104
	if ok {
		v.level--
		v.tokens -= 104
	}
	sent, _ := strconv.ParseInt(r.Header.Get(ftSentAt), 10, 64)
	v.arrivals = append(v.arrivals, ftArrival{at: now.Sub(v.start), sent: time.Unix(0, sent), proc: r.Header.Get("X-Proc"), ok: ok})
	if !ok {
		v.refusals++
	}
	reset := time.Duration((v.cap - v.level) / v.rate * float64(time.Second))
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(int(v.cap*60/1)))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(int(v.level)))
	h.Set("X-Ratelimit-Reset-Requests", reset.String())
	h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(ftTokens*60))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(int(v.tokens)))
	h.Set("X-Ratelimit-Reset-Tokens", time.Duration((ftTokens-v.tokens)/ftTokens*float64(time.Second)).String())
	v.mu.Unlock()
	h.Set("Content-Type", "application/json")
	if !ok {
		if retryAfter {
			h.Set("Retry-After", strconv.Itoa(int(ftPause/time.Second)))
		}
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	io.WriteString(w, `{"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`)
}

// TestFleetTransport runs the fleet and checks: no failed call; before the
// halving, at least 90% of what the vendor's quota admits was admitted,
// and at most 1% of the calls refused; no request of any process reaching
// the vendor in the pause was sent more than 20 ms after the fleet could
// hear of it (ftHearPause: a request granted before the pause was stored
// may still be on its way); and the
// fleet learns the halved quota: the 429's x-ratelimit-limit-requests
// (1500 a minute, under the configured 3000) lowers the shared limit in
// Redis (Limiter.Tune), so that at most 1% of all calls are refused
// besides the halving's and the run takes at most 1.05x the floor.
func TestFleetTransport(t *testing.T) {
	if os.Getenv(envFTChild) != "" {
		t.Skip("a child of the fleet test")
	}
	if testing.Short() {
		t.Skip("real time: about 10 s")
	}
	srv := redistest.StartServer(t)
	redistest.Announce(t, fmt.Sprintf("redis-server started by the test at %s, shared by %d child processes", srv.Addr, ftProcs))
	v := &ftVendor{rate: ftRate, cap: ftRate, level: ftRate, tokens: ftTokens}
	hs := httptest.NewServer(v)
	defer hs.Close()
	children := startFleet(t, ftProcs, "TestFleetTransportChild", envFTChild, func(i int) string {
		return srv.Addr + "," + hs.URL + "," + strconv.Itoa(i)
	})
	// A Redis round trip here, for the report.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
	defer rdb.Close()
	var rtts []time.Duration
	for range 20 {
		s := time.Now()
		rdb.Ping(context.Background())
		rtts = append(rtts, time.Since(s))
	}
	heard := ftHearPause(t, rdb)
	t0 := time.Now().Add(200 * time.Millisecond)
	v.mu.Lock()
	v.start, v.last = t0, t0
	v.mu.Unlock()
	goAt(children, t0)
	var calls, failed, unexplained int
	var probes []string
	for i, c := range children {
		var n, f, u int
		var probe string
		c.result(t, i, ftResultFmt, &n, &f, &u, &probe)
		calls += n
		failed += f
		unexplained += u
		probes = append(probes, probe)
	}
	ftCheckExplained(t, unexplained, probes)
	v.mu.Lock()
	defer v.mu.Unlock()
	last := v.arrivals[len(v.arrivals)-1].at
	pauseFrom := v.refusedAt.Sub(v.start)
	pauseTo := pauseFrom + ftPause
	var latest time.Duration // the last arrival in the pause, after the 429
	pausedAt, published := heard()
	var latestSent time.Duration // the last send in the pause, after the fleet could hear of it
	procsAfter := map[string]bool{}
	done := map[string]int{}                 // calls answered before the pause's end, per process
	var before, after, okBefore, okAfter int // refusals before the halving and after the pause, admissions before and after
	for _, a := range v.arrivals {
		switch {
		case a.at < pauseFrom && a.ok:
			okBefore++
		case a.at < pauseFrom:
			before++
		case a.at >= pauseTo && !a.ok:
			after++
		case a.at >= pauseTo:
			okAfter++
		}
		if a.at > pauseFrom && a.at < pauseTo {
			latest = max(latest, a.at-pauseFrom)
			if published {
				latestSent = max(latestSent, a.sent.Sub(pausedAt))
			}
		}
		if a.at >= pauseTo {
			procsAfter[a.proc] = true
		} else if a.ok {
			done[a.proc]++
		}
	}
	// Every process with calls left after the pause sends again; one that
	// was answered all its calls before it has nothing to send (one or two
	// of eight in some runs, with the race detector or without: the Redis
	// queue is first come, first served across processes, not fair
	// between them).
	var waiting []string
	for i := range ftProcs {
		if p := strconv.Itoa(i); done[p] < ftCalls && !procsAfter[p] {
			waiting = append(waiting, p)
		}
	}
	quotaBefore := math.Min(float64(calls), ftRate+ftRate*pauseFrom.Seconds())
	floor := ftFloor(calls, pauseFrom)
	others := v.refusals - 1
	medianRTT := medianDuration(rtts)
	t.Logf("fleet of %d: %d calls, %d failed, %d refusals besides the halving's (%.2f%%), in %v against a floor of %v (%.3fx)",
		ftProcs, calls, failed, others, 100*float64(others)/float64(calls), last.Round(time.Millisecond), floor.Round(time.Millisecond), last.Seconds()/floor.Seconds())
	t.Logf("before the halving: %d admitted of the %.0f the quota allows (%.1f%%), %d refused; after the pause: %d refused, %d admitted in %v, %.1f/s beyond the %d the quota banked in the pause (the halved quota: %d/s)",
		okBefore, quotaBefore, 100*float64(okBefore)/quotaBefore, before, after, okAfter, (last - pauseTo).Round(time.Millisecond),
		float64(okAfter-ftRate/2)/(last-pauseTo).Seconds(), ftRate/2, ftRate/2)
	t.Logf("the halving's 429 at +%v: the last arrival in the %v pause came %v after it (Redis round trip: median %v); %d processes sent after the pause",
		pauseFrom.Round(time.Millisecond), ftPause, latest, medianRTT, len(procsAfter))
	if calls != ftProcs*ftCalls || failed != 0 {
		t.Errorf("%d calls, %d failed; want %d, none failed", calls, failed, ftProcs*ftCalls)
	}
	if float64(okBefore) < 0.9*quotaBefore {
		t.Errorf("before the halving the fleet was admitted %d, under 90%% of the %.0f the quota allows", okBefore, quotaBefore)
	}
	if float64(before) > 0.01*float64(calls) {
		t.Errorf("%d refusals before the halving, more than 1%% of %d calls", before, calls)
	}
	switch {
	case !published:
		t.Errorf("the 429's pause was never published to the fleet")
	case latestSent > 20*time.Millisecond:
		t.Errorf("a request was sent %v after the pause was published, and reached the vendor %v into it: the fleet did not hold off", latestSent, latest)
	default:
		t.Logf("the pause was published %v after the 429; the last request sent in the pause left %v after that", pausedAt.Sub(v.refusedAt), latestSent)
	}
	if len(procsAfter) < ftProcs {
		t.Logf("calls answered before the pause's end, per process: %v", done)
	}
	if len(waiting) > 0 {
		t.Errorf("processes %v had calls left and sent none after the pause (%d processes sent after it)", waiting, len(procsAfter))
	}
	if float64(others) > 0.01*float64(calls) {
		t.Errorf("%d refusals besides the halving's, more than 1%% of %d calls: the fleet did not settle at the halved quota", others, calls)
	}
	// Under the race detector, 8 instrumented children on a small machine
	// lose more of the quota to latency before the halving, which costs
	// twice as much time after it (1.029-1.118x in ten runs on 2 cores):
	// the bound is the goal's in a normal build only, and the refusals
	// (checked above) are what tells a fleet that did not learn the
	// halved quota (12-14% refused) under it.
	maxRatio := 1.05
	if raceEnabled {
		maxRatio = 1.25
	}
	if ratio := last.Seconds() / floor.Seconds(); ratio > maxRatio {
		t.Errorf("the fleet took %.3fx the floor, more than %.2fx", ratio, maxRatio)
	}
}

// ftHearPause subscribes to every pause the fleet publishes, and returns
// when the first was heard. A request the fleet sends after that was
// decided, as near as one can tell from outside, after the pause was in
// Redis: the 429's process stores it, then publishes it. The instant of
// the 429's arrival is no such line: on a loaded machine (CI runs the
// modules' tests side by side) a request reached the vendor 60 ms after
// it, and the 429's process reading it late, or that request waiting for
// a core between its grant and the vendor, each explains that without a
// grant made after the pause was stored.
func ftHearPause(t *testing.T, rdb *redis.Client) func() (time.Time, bool) {
	t.Helper()
	ps := rdb.PSubscribe(context.Background(), "*:pause")
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := make(chan time.Time, 1)
	go func() {
		defer close(first)
		if _, ok := <-ps.Channel(); ok {
			first <- time.Now()
		}
	}()
	return func() (time.Time, bool) {
		ps.Close()
		at, ok := <-first
		return at, ok
	}
}

// ftFloor is how long the vendor's quota takes to admit n requests when
// the fleet keeps it busy: the full bucket at once, ftRate a second until
// the halving at halveAt, nothing during the pause, then half the rate
// from the level the pause lets the bucket refill to.
func ftFloor(n int, halveAt time.Duration) time.Duration {
	before := math.Min(float64(n), ftRate+ftRate*halveAt.Seconds())
	if float64(n) <= before {
		return time.Duration((float64(n) - ftRate) / ftRate * float64(time.Second))
	}
	left := float64(n) - before
	half := float64(ftRate / 2)
	atPauseEnd := math.Min(half, half*ftPause.Seconds())
	rest := math.Max(left-atPauseEnd, 0) / half
	return halveAt + ftPause + time.Duration(rest*float64(time.Second))
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestFleetTransportChild is one process of TestFleetTransport; it runs
// only when that test starts it.
func TestFleetTransportChild(t *testing.T) {
	env := os.Getenv(envFTChild)
	if env == "" {
		t.Skip("run by TestFleetTransport as a separate process")
	}
	parts := strings.Split(env, ",")
	rdb := redis.NewClient(&redis.Options{Addr: parts[0], DisableIdentity: true, ContextTimeoutEnabled: true})
	defer rdb.Close()
	lim, err := redisbucket.NewLimiter(rdb, "fleet-http", []redisbucket.Limit{
		{Name: "requests", Capacity: ftRate, Rate: throttle.Per(ftRate*60, time.Minute)},
		{Name: "tokens", Capacity: ftTokens, Rate: throttle.Per(ftTokens*60, time.Minute)},
	}, redisbucket.WithPrefix("fleethttp:"), redisbucket.WithCallTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	base := &http.Transport{MaxIdleConnsPerHost: ftWorkers}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: must(httpthrottle.NewTransport(ftStamp{base}, httpthrottle.Shared(lim),
		httpthrottle.WithAccounting(llm.Config{})))}
	// Warm up before the start: the connection to Redis and the script
	// loaded (a read of the levels), and the workers' connections to the
	// vendor opened, outside its quota. The floor counts the vendor's full
	// bucket from the start; a fleet whose first requests dial, on a small
	// machine with 8 processes waking at once, arrived up to 0.25 s late
	// and left 5-12 of the quota unspent (1.04-1.09x the floor).
	if _, err := lim.Tokens(context.Background()); err != nil {
		t.Fatal(err)
	}
	var warm sync.WaitGroup
	for range ftWorkers {
		warm.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, parts[1]+ftWarmPath, nil)
			if resp, err := base.RoundTrip(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	warm.Wait()
	fmt.Println(fleetReady) // readyBuffer waits for it
	var ns int64
	if _, err := fmt.Fscanln(os.Stdin, &ns); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(time.Unix(0, ns)))
	probe := make(chan string, 1)
	go func() { probe <- ftProbe(client, parts[1], time.Unix(0, ns).Add(ftProbeAt)) }()
	var mu sync.Mutex
	calls, failed, unexplained := 0, 0, 0
	next := make(chan int)
	go func() {
		for i := range ftCalls {
			next <- i
		}
		close(next)
	}()
	var wg sync.WaitGroup
	for range ftWorkers {
		wg.Go(func() {
			for range next {
				ok, err := ftCall(client, parts[1], parts[2])
				var we *throttle.WaitError
				mu.Lock()
				calls++
				if !ok {
					failed++
				}
				if errors.As(err, &we) && we.Limit == "" {
					unexplained++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf(ftResultFmt+"\n", calls, failed, unexplained, <-probe)
}

// ftCheckExplained checks that every wait the fleet refused is explained
// by the limit that binds, and that a call of any process with a deadline
// inside the pause is refused with the pause that holds it.
func ftCheckExplained(t *testing.T, unexplained int, probes []string) {
	t.Helper()
	if unexplained > 0 {
		t.Errorf("%d calls refused with a WaitError naming no limit", unexplained)
	}
	for i, p := range probes {
		if p != ftProbeExplained {
			t.Errorf("process %d's call inside the pause: %s, want a WaitError naming the limit and the pause", i, p)
		}
	}
}

// ftProbeExplained is what ftProbe returns for a call refused with a
// WaitError that names its limit and the pause in force.
const ftProbeExplained = "explained"

// ftProbe makes, at at, a call with a deadline 100 ms away (to the
// vendor's path outside its quota, should it be sent) and says how it was
// refused: ftProbeExplained, or what was missing.
func ftProbe(c *http.Client, url string, at time.Time) string {
	time.Sleep(time.Until(at))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+ftWarmPath, nil)
	resp, err := c.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return "sent"
	}
	var we *throttle.WaitError
	switch {
	case !errors.As(err, &we):
		return "unexplained"
	case we.Limit == "":
		return "unnamed"
	case we.Paused.IsZero():
		return "no-pause"
	}
	return ftProbeExplained
}

// ftCall makes one chat completion with a 30 s deadline: whether it was
// answered 200, and the error if it was not sent.
func ftCall(c *http.Client, url, proc string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Say ok."}]}`))
	req.Header.Set("X-Proc", proc)
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}
