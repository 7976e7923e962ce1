package httpthrottle

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// twinLimiters builds the same random set of buckets twice on clk: one to
// serve through the memos, one through the formatting path.
func twinLimiters(t *testing.T, rng *rand.Rand, clk clockwork.Clock) (a, b *throttle.Limiter, abs, bbs []*throttle.Bucket) {
	t.Helper()
	names := []string{"", "requests", "tokens", `quo"te\d`, "caf\u00e9", "a-b", "a+b"} // the last two alike to the memos' hash
	n := 1 + rng.IntN(3)
	var as, bs []*throttle.Bucket
	for i := range n {
		name := names[rng.IntN(len(names))]
		if i > 0 && rng.IntN(2) == 0 {
			name = fmt.Sprintf("b%d", i) // names may repeat, or not
		}
		capacity, rate := memoCapacity(rng), memoRate(rng)
		for _, list := range []*[]*throttle.Bucket{&as, &bs} {
			bk, err := throttle.New(capacity, rate, throttle.WithName(name), throttle.WithClock(clk))
			if err != nil {
				t.Fatalf("New(%d, %v): %v", capacity, rate, err)
			}
			*list = append(*list, bk)
		}
	}
	la, err := throttle.NewLimiter(as...)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := throttle.NewLimiter(bs...)
	if err != nil {
		t.Fatal(err)
	}
	return la, lb, as, bs
}

// twinBuckets is twinLimiters for one bucket of name, capacity and rate.
func twinBuckets(t *testing.T, clk clockwork.Clock, name string, capacity int64, rate throttle.Rate) (a, b *throttle.Limiter, abs, bbs []*throttle.Bucket) {
	t.Helper()
	var ls [2]*throttle.Limiter
	var bks [2]*throttle.Bucket
	for i := range ls {
		bk, err := throttle.New(capacity, rate, throttle.WithName(name), throttle.WithClock(clk))
		if err != nil {
			t.Fatalf("New(%d, %v): %v", capacity, rate, err)
		}
		if ls[i], err = throttle.NewLimiter(bk); err != nil {
			t.Fatal(err)
		}
		bks[i] = bk
	}
	return ls[0], ls[1], bks[:1], bks[1:]
}

func memoCapacity(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return 1 + rng.Int64N(4)
	case 1:
		return 1 + rng.Int64N(300) // past the table's rows
	case 2:
		return 1 + rng.Int64N(1e6)
	default:
		return 1<<62 - rng.Int64N(1000)
	}
}

func memoRate(rng *rand.Rand) throttle.Rate {
	periods := []time.Duration{time.Millisecond, 100 * time.Millisecond, 700 * time.Millisecond, time.Second, 1500 * time.Millisecond, time.Minute, time.Hour}
	switch rng.IntN(8) {
	case 0:
		return throttle.Inf
	case 1:
		return throttle.Per(0, time.Second) // never refills: resets and waits of -1
	case 2:
		return throttle.Per(1, time.Duration(1+rng.Int64N(int64(3*time.Second))))
	default:
		return throttle.Per(1+rng.Int64N(1000), periods[rng.IntN(len(periods))])
	}
}

// TestLimitHandlerIETFMemoExact: over random limiters, of one to three
// buckets of random names, capacities and rates, some changed live with
// SetRate and SetCapacity between requests, each of random cost, and one
// handler answering for several limiters in turn, every answer of the
// default headers is byte for byte what the formatting path writes
// (WithQuotaHeaders with WriteIETF, on a twin limiter given the same requests
// at the same instants), Retry-After is the exact wait rounded up, and the
// statuses agree.
func TestLimitHandlerIETFMemoExact(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 28))
		clk := clockwork.NewFakeClockAt(t0)
		const limiters = 3
		var memo, format [limiters]*throttle.Limiter
		var memoBs, formatBs [limiters][]*throttle.Bucket // their buckets, in cost order
		for i := range limiters {
			memo[i], format[i], memoBs[i], formatBs[i] = twinLimiters(t, rng, clk)
		}
		if seed%3 == 0 {
			// Two limiters alike but for names alike to the memos' hash.
			c, r := memoCapacity(rng), memoRate(rng)
			memo[0], format[0], memoBs[0], formatBs[0] = twinBuckets(t, clk, "a-b", c, r)
			memo[1], format[1], memoBs[1], formatBs[1] = twinBuckets(t, clk, "a+b", c, r)
		}
		var pickAt int
		costOf := func(r *http.Request, g throttle.Gate) ([]int64, error) {
			costs := make([]int64, len(g.Limits()))
			for i := range costs {
				costs[i], _ = strconv.ParseInt(r.Header.Get("Cost-"+strconv.Itoa(i)), 10, 64)
			}
			return costs, nil
		}
		next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		hm := Handler(next, PickFunc(func(*http.Request) (throttle.Gate, error) { return memo[pickAt], nil }), WithCost(costOf))
		hf := Handler(next, PickFunc(func(*http.Request) (throttle.Gate, error) { return format[pickAt], nil }), WithCost(costOf),
			WithQuotaHeaders(func(h http.Header, s []throttle.LimitStatus) { WriteIETF(h, s) }))
		for step := range 600 {
			pickAt = rng.IntN(limiters)
			if rng.IntN(3) == 0 {
				pickAt = 0 // mostly one limiter, so that memos are used
			}
			switch rng.IntN(12) {
			case 0:
				i, r := rng.IntN(len(memoBs[pickAt])), memoRate(rng)
				if rng.IntN(2) == 0 {
					r = memoBs[pickAt][i].Status().Rate // back and forth between rates
				}
				e1, e2 := memoBs[pickAt][i].SetRate(r), formatBs[pickAt][i].SetRate(r)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("SetRate: %v and %v", e1, e2)
				}
			case 1:
				i, c := rng.IntN(len(memoBs[pickAt])), memoCapacity(rng)
				memoBs[pickAt][i].SetCapacity(c)
				formatBs[pickAt][i].SetCapacity(c)
			}
			clk.Advance(time.Duration(rng.Int64N(int64(2 * time.Second))))
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			costs := make([]int64, len(memoBs[pickAt]))
			for i, bk := range memoBs[pickAt] {
				switch rng.IntN(4) {
				case 0:
					costs[i] = 0
				case 1:
					costs[i] = 1 + rng.Int64N(max(bk.Status().Capacity, 1)) // often more than there is
				default:
					costs[i] = 1
				}
				req.Header.Set("Cost-"+strconv.Itoa(i), strconv.FormatInt(costs[i], 10))
			}
			wm, wf := &headerWriter{h: http.Header{}}, &headerWriter{h: http.Header{}}
			hm.ServeHTTP(wm, req)
			hf.ServeHTTP(wf, req)
			if wm.code != wf.code || !reflect.DeepEqual(wm.h, wf.h) {
				t.Fatalf("seed %d step %d: memo %d %q, formatting path %d %q", seed, step, wm.code, wm.h, wf.code, wf.h)
			}
			// The formatting path itself, against the twin's state now.
			want := http.Header{}
			WriteIETF(want, format[pickAt].Status(nil))
			if wf.code == http.StatusTooManyRequests {
				wait, err := format[pickAt].WaitTime(costs...)
				if err != nil {
					wait = -1
				}
				if wait < 0 {
					headers.SetShouldRetry(want, false)
				} else {
					headers.SetRetryAfter(want, wait)
				}
			}
			if !costsFree(costs) && (wf.code == http.StatusOK || wf.code == http.StatusTooManyRequests) {
				for _, f := range []string{"Ratelimit-Policy", "Ratelimit", "Retry-After", "X-Should-Retry"} {
					if !reflect.DeepEqual(wm.h[f], want[f]) {
						t.Fatalf("seed %d step %d: %s is %q, want %q", seed, step, f, wm.h[f], want[f])
					}
				}
			}
		}
	}
}

// TestLimitHandlerSharedAllocs: over one shared Limiter, an admitted
// request whose handler does not ask for its permit allocates nothing once
// its header values were seen, at most 2 being the bound; nor does
// a refused one; and a rate or capacity changed live is in the next
// answer's headers.
func TestLimitHandlerSharedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clk := clockwork.NewFakeClockAt(t0)
	bk, _ := throttle.New(4000, throttle.Per(4000, time.Second), throttle.WithName("requests"), throttle.WithClock(clk))
	l, _ := throttle.NewLimiter(bk)
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), Shared(l))
	w := &headerWriter{h: http.Header{}}
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	for range 3 {
		h.ServeHTTP(w, r)
	}
	if n := testing.AllocsPerRun(2000, func() { clk.Advance(250 * time.Microsecond); clear(w.h); h.ServeHTTP(w, r) }); n > 0 {
		t.Errorf("admitted: %v allocations a request, want 0", n)
	}
	if w.code != http.StatusOK {
		t.Fatalf("the last answer was %d", w.code)
	}
	if got, want := w.h.Get("Ratelimit-Policy"), `"requests";q=4000;w=1`; got != want {
		t.Errorf("RateLimit-Policy: %q, want %q", got, want)
	}
	l.Bucket("requests").SetRate(throttle.Per(100, time.Minute))
	l.Bucket("requests").SetCapacity(100)
	clear(w.h)
	h.ServeHTTP(w, r)
	if got, want := w.h.Get("Ratelimit-Policy"), `"requests";q=100;w=60`; got != want {
		t.Errorf("after SetRate, RateLimit-Policy: %q, want %q", got, want)
	}
	if got, want := w.h.Get("Ratelimit"), `"requests";r=99;t=1`; got != want {
		t.Errorf("after SetCapacity, RateLimit: %q, want %q", got, want)
	}
	for range 100 {
		h.ServeHTTP(w, r)
	}
	if w.code != http.StatusTooManyRequests {
		t.Fatalf("the spent limiter answered %d", w.code)
	}
	if n := testing.AllocsPerRun(2000, func() { clear(w.h); h.ServeHTTP(w, r) }); n > 0 {
		t.Errorf("refused: %v allocations a request, want 0", n)
	}
	if got, want := w.h.Get("Retry-After"), "1"; got != want {
		t.Errorf("Retry-After: %q, want %q", got, want)
	}
}

// TestLimitHandlerPerKeyHeldAllocs: under PerKey, a key that has a Limiter
// of its own (Keyed.Limiter made it) is decided on that
// Limiter, with the same memos and the request's storage for its status:
// one allocation a request, admitted or refused, the key's Gate as an
// interface value (the bound is 2).
func TestLimitHandlerPerKeyHeldAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clk := clockwork.NewFakeClockAt(t0)
	k := throttle.NewKeyed(func(key string) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 4000, Rate: throttle.Per(4000, time.Second)}}
	}, throttle.WithClock(clk))
	ask := true
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if ask {
			RequestPermit(w)
		}
		w.WriteHeader(http.StatusOK)
	}), PerKey(k, HeaderKey("X-Api-Key")))
	w := &headerWriter{h: http.Header{}}
	r := apiRequest("a")
	h.ServeHTTP(w, r)
	ask = false
	if k.Limiter("a") == nil {
		t.Fatal("the key has no Limiter")
	}
	for range 3 {
		h.ServeHTTP(w, r)
	}
	n := testing.AllocsPerRun(2000, func() { clk.Advance(250 * time.Microsecond); clear(w.h); h.ServeHTTP(w, r) })
	if w.code != http.StatusOK {
		t.Fatalf("the last answer was %d", w.code)
	}
	if n > 1 {
		t.Errorf("admitted: %v allocations a request, want 1", n)
	}
	l := k.Limiter("a")
	l.Bucket("requests").SetRate(throttle.Per(1, time.Hour))
	l.Bucket("requests").SetCapacity(1)
	for range 2 {
		h.ServeHTTP(w, r)
	}
	if w.code != http.StatusTooManyRequests {
		t.Fatalf("the spent key answered %d", w.code)
	}
	n = testing.AllocsPerRun(2000, func() { clear(w.h); h.ServeHTTP(w, r) })
	if n > 1 {
		t.Errorf("refused: %v allocations a request, want 1", n)
	}
	if got, want := w.h.Get("Ratelimit-Policy"), `"requests";q=1;w=3600`; got != want {
		t.Errorf("RateLimit-Policy: %q, want %q", got, want)
	}
}

// TestLimitHandlerMemoConcurrent: requests answered from several
// goroutines while the rate changes back and forth share the memos safely
// (run with -race), and every answer's RateLimit-Policy is that of one of
// the two rates.
func TestLimitHandlerMemoConcurrent(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	bk, _ := throttle.New(1<<40, throttle.Per(1000, time.Second), throttle.WithName("requests"), throttle.WithClock(clk))
	l, _ := throttle.NewLimiter(bk)
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), Shared(l))
	valid := map[string]bool{`"requests";q=1000;w=1`: true, `"requests";q=5;w=60`: true}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 500 {
			r := throttle.Per(1000, time.Second)
			if i%2 == 0 {
				r = throttle.Per(5, time.Minute)
			}
			l.Bucket("requests").SetRate(r)
		}
	}()
	errs := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			for range 500 {
				w := &headerWriter{h: http.Header{}}
				h.ServeHTTP(w, req)
				if p := w.h["Ratelimit-Policy"]; len(p) != 1 || !valid[p[0]] || len(w.h["Ratelimit"]) != 1 {
					errs <- fmt.Sprintf("%d %q", w.code, w.h)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error("answer:", e)
	}
}

// TestLimitHandlerRoutesAllocs: one handler over two Limiters of other
// limits, one a route, answered in turn, keeps each one's header values:
// no allocation a request once they were seen.
func TestLimitHandlerRoutesAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clk := clockwork.NewFakeClockAt(t0)
	search, _ := throttle.New(1000, throttle.Per(1000, time.Second), throttle.WithName("search"), throttle.WithClock(clk))
	upload, _ := throttle.New(1<<40, throttle.Per(1e6, time.Minute), throttle.WithName("upload"), throttle.WithClock(clk))
	ls, _ := throttle.NewLimiter(search)
	lu, _ := throttle.NewLimiter(upload)
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
		PickFunc(func(r *http.Request) (throttle.Gate, error) {
			if r.URL.Path == "/upload" {
				return lu, nil
			}
			return ls, nil
		}))
	w := &headerWriter{h: http.Header{}}
	rs, _ := http.NewRequest(http.MethodGet, "/search", nil)
	ru, _ := http.NewRequest(http.MethodGet, "/upload", nil)
	for range 3 {
		h.ServeHTTP(w, rs)
		h.ServeHTTP(w, ru)
	}
	n := testing.AllocsPerRun(2000, func() {
		clk.Advance(time.Millisecond)
		clear(w.h)
		h.ServeHTTP(w, rs)
		if got := w.h.Get("Ratelimit-Policy"); got != `"search";q=1000;w=1` {
			t.Fatalf("search: RateLimit-Policy %q", got)
		}
		clear(w.h)
		h.ServeHTTP(w, ru)
		if got := w.h.Get("Ratelimit-Policy"); got != `"upload";q=1000000;w=60` {
			t.Fatalf("upload: RateLimit-Policy %q", got)
		}
	})
	if n > 0 {
		t.Errorf("%v allocations a pair of requests, want 0", n)
	}
}
