package httpthrottle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"
)

// answer is what a client sees of a response: its status and every header.
func answer(w *httptest.ResponseRecorder) string {
	var b strings.Builder
	fmt.Fprint(&b, w.Code)
	keys := make([]string, 0, len(w.Header()))
	for k := range w.Header() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, w.Header()[k])
	}
	return b.String()
}

func apiRequest(key string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/", nil)
	r.Header.Set("X-Api-Key", key)
	return r
}

// TestLimitHandlerUnderAttack is the differential test of issue 16: the
// legitimate clients (100; 10 in -short and race runs), each using its key
// about once a second, well within its refill time, and two hot ones far
// beyond their quota, get exactly the same answers, status and every
// header, whether or not an attacker sends a new made-up key on every
// other request (99 in 100; 19 in 20 in -short), with the Keyed capped at a tenth of the
// attack's keys; Len never exceeds the cap, and the attack does fill it.
func TestLimitHandlerUnderAttack(t *testing.T) {
	total, maxKeys, clients, every, dt := 200_000, 20_000, 100, 100, 50*time.Microsecond
	if testing.Short() || raceEnabled {
		total, maxKeys, clients, every, dt = 20_000, 2_000, 10, 20, 500*time.Microsecond
	}
	limits := []throttle.Limit{{Name: "requests", Capacity: 20, Rate: throttle.Per(600, time.Minute)}} // refill from empty: 2s
	run := func(withAttack bool) (answers []string, peak int) {
		clk := clockwork.NewFakeClockAt(t0)
		k := throttle.NewKeyed(func(uint64) []throttle.Limit { return limits }, throttle.WithClock(clk), throttle.WithMaxKeys(maxKeys))
		h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if RequestPermit(w) == nil {
				t.Error("an admitted request has no Permit")
			}
		}), PerKey(k, HashedHeaderKey("X-Api-Key")))
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range total {
			clk.Advance(dt)
			if i%every != 0 {
				if withAttack {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, apiRequest("attacker-"+strconv.Itoa(i)))
				}
				continue
			}
			// Legitimate, one request in every: half of them every client
			// in turn, the other half one of two hot clients.
			j := i / every
			key := (j / 2) % clients
			if j%2 == 1 {
				key = rng.IntN(2)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, apiRequest("client-"+strconv.Itoa(key)))
			answers = append(answers, answer(w))
			n := k.Len()
			if n > maxKeys {
				t.Fatalf("request %d: Len %d above the cap %d", i, n, maxKeys)
			}
			peak = max(peak, n)
		}
		return answers, peak
	}
	quiet, _ := run(false)
	loud, peak := run(true)
	if peak != maxKeys {
		t.Errorf("the attack held at most %d keys, never the cap %d: nothing was tested", peak, maxKeys)
	}
	refused := 0
	for i := range quiet {
		if quiet[i] != loud[i] {
			t.Fatalf("legitimate request %d: without the attack %s, with it %s", i, quiet[i], loud[i])
		}
		if strings.HasPrefix(quiet[i], "429") {
			refused++
		}
	}
	t.Logf("%d legitimate requests, %d refused, the same with the attack; peak %d keys held", len(quiet), refused, peak)
	if refused == 0 || refused > len(quiet)/2 {
		t.Errorf("%d of %d legitimate requests refused: the decisions test too little", refused, len(quiet))
	}
}

// TestLimitHandlerCompactMatchesLimiter checks that PerKey under
// Handler, which decides on compact keys, answers exactly as a
// Handler over real per-key Limiters made from the same config:
// statuses, RateLimit headers, Retry-After, with a custom cost and settled
// permits (which give keys a Limiter mid-run), on several limits.
func TestLimitHandlerCompactMatchesLimiter(t *testing.T) {
	config := func(key string) []throttle.Limit {
		n, _ := strconv.Atoi(strings.TrimPrefix(key, "k"))
		switch n % 3 {
		case 0:
			return []throttle.Limit{{Name: "requests", Capacity: 3, Rate: throttle.Per(2, time.Second)}}
		case 1:
			return []throttle.Limit{
				{Name: "requests", Capacity: 5, Rate: throttle.Per(5, 7*time.Second)},
				{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Minute)},
			}
		default:
			return []throttle.Limit{{Name: "once", Capacity: 2, Rate: throttle.Rate{}}} // never refills
		}
	}
	for _, custom := range []bool{false, true} {
		t.Run(fmt.Sprint("custom=", custom), func(t *testing.T) {
			clk := clockwork.NewFakeClockAt(t0)
			rng := rand.New(rand.NewPCG(3, 4))
			k := throttle.NewKeyed(config, throttle.WithClock(clk))
			ref := map[string]*throttle.Limiter{}
			refPick := func(r *http.Request) (throttle.Gate, error) {
				key := r.Header.Get("X-Api-Key")
				if l, ok := ref[key]; ok {
					return l, nil
				}
				var bs []*throttle.Bucket
				for _, l := range config(key) {
					b, err := throttle.New(l.Capacity, l.Rate, throttle.WithName(l.Name), throttle.WithClock(clk))
					if err != nil {
						return nil, err
					}
					bs = append(bs, b)
				}
				l, err := throttle.NewLimiter(bs...)
				ref[key] = l
				return l, err
			}
			var settle []int64
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if settle != nil {
					// A settlement past one capacity of debt is cut there and
					// reported, on either side alike.
					if err := RequestPermit(w).Settle(settle...); err != nil && !errors.Is(err, throttle.ErrCostExceedsCapacity) {
						t.Errorf("Settle: %v", err)
					}
				}
			})
			var opts []Option
			if custom {
				opts = append(opts, WithCost(func(r *http.Request, g throttle.Gate) ([]int64, error) {
					limits := g.Limits()
					costs := make([]int64, len(limits))
					for i, lim := range limits {
						if lim.Name == "tokens" {
							costs[i], _ = strconv.ParseInt(r.Header.Get("X-Tokens"), 10, 64)
						} else {
							costs[i] = 1
						}
					}
					return costs, nil
				}))
			}
			got := Handler(next, PerKey(k, HeaderKey("X-Api-Key")), opts...)
			want := Handler(next, PickFunc(refPick), opts...)
			for op := range 5000 {
				clk.Advance(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
				key := "k" + strconv.Itoa(rng.IntN(12))
				tokens := strconv.Itoa(rng.IntN(130))
				settle = nil
				if rng.IntN(8) == 0 && len(config(key)) == 2 {
					settle = []int64{1, rng.Int64N(150)}
				}
				var answers [2]string
				for i, h := range []http.Handler{got, want} {
					r := apiRequest(key)
					r.Header.Set("X-Tokens", tokens)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					answers[i] = answer(w)
				}
				if answers[0] != answers[1] {
					t.Fatalf("op %d, key %s, tokens %s: keyed %s, limiters %s", op, key, tokens, answers[0], answers[1])
				}
			}
		})
	}
}

// TestPerKeyWrapped: a pick that wraps PerKey's Picker gets the key's
// Gate, and one that chooses another Limiter is obeyed.
func TestPerKeyWrapped(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "r", Capacity: 1, Rate: throttle.Per(1, time.Hour)}}
	}, throttle.WithClock(clk))
	other, _ := throttle.New(5, throttle.Per(5, time.Hour), throttle.WithClock(clk))
	ol, _ := throttle.NewLimiter(other)
	perKey := PerKey(k, HeaderKey("X-Api-Key"))
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PickFunc(func(r *http.Request) (throttle.Gate, error) {
		if r.Header.Get("X-Api-Key") == "admin" {
			return ol, nil
		}
		return perKey.Pick(r)
	}))
	for _, c := range []struct {
		key  string
		want int
	}{{"a", 200}, {"a", 429}, {"admin", 200}, {"admin", 200}, {"b", 200}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, apiRequest(c.key))
		if w.Code != c.want {
			t.Errorf("key %s: %d, want %d", c.key, w.Code, c.want)
		}
	}
	if g, _ := perKey.Pick(apiRequest("a")); g != k.Gate("a") {
		t.Errorf("PerKey gave %v, not the key's Gate, which decides on its compact record", g)
	}
	if n := k.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
	if tok := other.Status().Level; tok != 3 {
		t.Errorf("the admin limiter has %v tokens, want 3", tok)
	}
}

func TestHashedHeaderKey(t *testing.T) {
	hk := HashedHeaderKey("x-api-key")
	a, b := apiRequest("sk-secret-a"), apiRequest("sk-secret-b")
	if hk(a) != hk(apiRequest("sk-secret-a")) {
		t.Error("one value, two keys")
	}
	if hk(a) == hk(b) {
		t.Error("two values, one key")
	}
	if HashedHeaderKey("X-Api-Key")(a) == hk(a) {
		t.Error("two HashedHeaderKey functions share a seed")
	}
	none := httptest.NewRequest(http.MethodGet, "/", nil)
	if hk(none) != hk(apiRequest("")) {
		t.Error("a request without the header is not keyed as the empty value")
	}
}

// TestLimitHandlerNewClientsUnderAttack is the guarantee of the overflow
// buckets (see WithMaxKeys): with the Keyed at its cap and an attack of
// 100,000 new keys a second (the attack fills the cap and holds it, its
// keys held for their refill time of a minute), legitimate clients first
// seen during the attack, each within its quota (100 a minute; one request
// a second), are admitted at least 90% of the time, and the answers to the
// clients held before the attack, status and every header, are exactly
// those without it.
func TestLimitHandlerNewClientsUnderAttack(t *testing.T) {
	seconds, maxKeys, newClients := 20, 10_000, 200
	if testing.Short() || raceEnabled {
		seconds, maxKeys, newClients = 4, 2_000, 50
	}
	const (
		attackPerSecond = 100_000
		dt              = time.Second / attackPerSecond
		established     = 20
	)
	limits := []throttle.Limit{{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Minute)}}
	run := func(withAttack bool) (old []string, admitted, asked int) {
		clk := clockwork.NewFakeClockAt(t0)
		k := throttle.NewKeyed(func(uint64) []throttle.Limit { return limits }, throttle.WithClock(clk), throttle.WithMaxKeys(maxKeys))
		h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PerKey(k, HashedHeaderKey("X-Api-Key")))
		serve := func(key string) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, apiRequest(key))
			return w
		}
		for c := range established {
			serve("old-" + strconv.Itoa(c))
		}
		for i := range seconds * attackPerSecond {
			clk.Advance(dt)
			switch {
			case i%5000 == 0:
				// An established client, one of them every 50 ms: each
				// twice a second, over its quota of 100 a minute.
				old = append(old, answer(serve("old-"+strconv.Itoa(i/5000%established))))
			case i%(attackPerSecond/newClients) == 1 && i > attackPerSecond/2:
				// A new client in turn, each once a second, first seen half
				// a second into the attack.
				w := serve("new-" + strconv.Itoa(i/(attackPerSecond/newClients)%newClients))
				asked++
				if w.Code == http.StatusOK {
					admitted++
				}
			case withAttack:
				serve("attack-" + strconv.Itoa(i))
			}
		}
		if withAttack && k.Len() != maxKeys {
			t.Errorf("the attack left %d keys held, not the cap %d: nothing was tested", k.Len(), maxKeys)
		}
		return old, admitted, asked
	}
	quiet, alone, asked := run(false)
	loud, admitted, _ := run(true)
	for i := range quiet {
		if quiet[i] != loud[i] {
			t.Fatalf("established client, request %d: without the attack %s, with it %s", i, quiet[i], loud[i])
		}
	}
	t.Logf("new clients: %d of %d admitted under the attack, %d alone; established: %d answers unchanged", admitted, asked, alone, len(quiet))
	if alone != asked {
		t.Errorf("new clients alone: %d of %d admitted, want all: the test's clients are over their quota", alone, asked)
	}
	if admitted*10 < asked*9 {
		t.Errorf("new clients under the attack: %d of %d admitted, want at least 90%%", admitted, asked)
	}
}

// TestLimitHandlerPerKeyAllocs: an admitted request on a key held, whose
// handler does not ask for its permit, allocates nothing: the Handler
// decides on the key itself and makes no Gate. Nor does a refused one. The clock moves a token's
// refill per request, so that the answers repeat, as in steady use: each
// header value is made on its first use only.
func TestLimitHandlerPerKeyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clk := clockwork.NewFakeClockAt(t0)
	k := throttle.NewKeyed(func(key string) []throttle.Limit {
		if key == "spent" {
			return []throttle.Limit{{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Minute)}}
		}
		return []throttle.Limit{{Name: "requests", Capacity: 4000, Rate: throttle.Per(4000, time.Second)}} // its header values cached
	}, throttle.WithClock(clk))
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), PerKey(k, HeaderKey("X-Api-Key")))
	w := &headerWriter{h: http.Header{}}
	r := apiRequest("a")
	for range 3 {
		h.ServeHTTP(w, r)
	}
	for _, key := range []string{"a", "b"} {
		r.Header.Set("X-Api-Key", key)
		if n := testing.AllocsPerRun(2000, func() { clk.Advance(250 * time.Microsecond); clear(w.h); h.ServeHTTP(w, r) }); n > 0 {
			t.Errorf("key %s: %v allocations a request, want none", key, n)
		}
	}
	if w.code != http.StatusOK {
		t.Fatalf("the last answer was %d", w.code)
	}
	r.Header.Set("X-Api-Key", "spent")
	for range 101 {
		h.ServeHTTP(w, r)
	}
	if w.code != http.StatusTooManyRequests {
		t.Fatalf("the spent key got %d", w.code)
	}
	if n := testing.AllocsPerRun(2000, func() { clear(w.h); h.ServeHTTP(w, r) }); n > 0 {
		t.Errorf("refused: %v allocations a request, want none", n)
	}
}

// headerWriter keeps its header and status only.
type headerWriter struct {
	h    http.Header
	code int
}

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerWriter) WriteHeader(code int)        { w.code = code }

// unwrapper is a middleware's ResponseWriter that wraps another, with or
// without an Unwrap method.
type unwrapper struct{ http.ResponseWriter }

type opaque struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestRequestPermitThroughWrappers: RequestPermit finds the Permit through a
// ResponseWriter that unwraps to Handler's, not through one that does
// not; the writer flushes the server's; the Permit outlives the request and
// is the same on a second call.
func TestRequestPermitThroughWrappers(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := throttle.NewKeyed(oneLimit, throttle.WithClock(clk))
	var kept throttle.Permit
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := RequestPermit(w)
		switch r.URL.Path {
		case "/unwrap":
			if p == nil || RequestPermit(w) != p {
				t.Errorf("through Unwrap: %p, then %p", p, RequestPermit(w))
			}
			kept = p
		case "/opaque":
			if p != nil {
				t.Error("a Permit through a writer that does not unwrap")
			}
		}
		_ = http.NewResponseController(w).Flush() // fails through opaque
	})
	wrap := func(next http.Handler, opaqueW bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if opaqueW {
				next.ServeHTTP(opaque{w}, r)
			} else {
				next.ServeHTTP(unwrapper{w}, r)
			}
		})
	}
	pk := PerKey(k, func(*http.Request) int { return 1 })
	h1 := Handler(wrap(inner, false), pk)
	h2 := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrap(inner, true).ServeHTTP(w, r)
	}), pk)
	for i := range 3 {
		w := httptest.NewRecorder()
		h1.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/unwrap", nil))
		if w.Code != http.StatusOK || !w.Flushed {
			t.Fatalf("request %d: %d, flushed %v", i, w.Code, w.Flushed)
		}
	}
	w := httptest.NewRecorder()
	h2.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/opaque", nil))
	// Directly under Handler, the writer is a Flusher.
	h3 := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.(http.Flusher).Flush() }),
		PerKey(throttle.NewKeyed(oneLimit, throttle.WithClock(clk)), func(*http.Request) int { return 1 }))
	w3 := httptest.NewRecorder()
	if h3.ServeHTTP(w3, httptest.NewRequest(http.MethodGet, "/", nil)); !w3.Flushed {
		t.Error("Flush through Handler's writer did not flush the server's")
	}
	// Three taken, one settled to 4 after its request: 10-3-3 = 4 left.
	if err := kept.Settle(4); err != nil {
		t.Fatal(err)
	}
	if tok := buckets(k.Limiter(1))[0].Status().Level; tok != 3 {
		t.Errorf("%v tokens left, want 3: 4 requests and one settled to 4", tok)
	}
}

// TestPerKeyGivenAnotherRequest: a pick that gives PerKey a copy of the
// request rather than the request (r.WithContext) is decided as one that
// gives it the request.
func TestPerKeyGivenAnotherRequest(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := throttle.NewKeyed(func(string) []throttle.Limit { return oneLimit(0) }, throttle.WithClock(clk))
	pk := PerKey(k, HeaderKey("X-Api-Key"))
	copying := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PickFunc(func(r *http.Request) (throttle.Gate, error) {
		return pk.Pick(r.WithContext(context.Background()))
	}))
	k2 := throttle.NewKeyed(func(string) []throttle.Limit { return oneLimit(0) }, throttle.WithClock(clk))
	direct := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PerKey(k2, HeaderKey("X-Api-Key")))
	for i := range 30 {
		clk.Advance(37 * time.Millisecond)
		var answers [2]string
		for j, h := range []http.Handler{copying, direct} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, apiRequest("a"))
			answers[j] = answer(w)
		}
		if answers[0] != answers[1] {
			t.Fatalf("request %d: given a copy %s, given the request %s", i, answers[0], answers[1])
		}
	}
}

// TestLimitHandlerPickPanics: after a pick that panics, the next requests
// are still decided on their keys.
func TestLimitHandlerPickPanics(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "r", Capacity: 1, Rate: throttle.Per(1, time.Hour)}}
	}, throttle.WithClock(clk))
	pk := PerKey(k, HeaderKey("X-Api-Key"))
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PickFunc(func(r *http.Request) (throttle.Gate, error) {
		if r.Header.Get("X-Panic") != "" {
			panic("pick")
		}
		return pk.Pick(r)
	}))
	serve := func(r *http.Request) (code int, panicked bool) {
		defer func() { panicked = recover() != nil }()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, false
	}
	for i := range 200 {
		r := apiRequest("a")
		if i%2 == 1 {
			r.Header.Set("X-Panic", "1")
		}
		code, panicked := serve(r)
		switch {
		case i%2 == 1 && !panicked:
			t.Fatalf("request %d: pick did not panic", i)
		case i == 0 && code != http.StatusOK, i > 0 && i%2 == 0 && code != http.StatusTooManyRequests:
			t.Fatalf("request %d: %d", i, code)
		}
	}
}

// TestPerKeyReachedLate: a handler whose pick reaches PerKey only after
// many requests went elsewhere answers exactly as one over PerKey from the
// start.
func TestPerKeyReachedLate(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	config := func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "r", Capacity: 3, Rate: throttle.Per(2, time.Second)}}
	}
	shared, _ := throttle.New(1<<40, throttle.Per(1<<40, time.Second), throttle.WithClock(clk))
	sl, _ := throttle.NewLimiter(shared)
	late := PerKey(throttle.NewKeyed(config, throttle.WithClock(clk)), HeaderKey("X-Api-Key"))
	const warm = 192
	n := 0
	got := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PickFunc(func(r *http.Request) (throttle.Gate, error) {
		if n++; n <= warm {
			return sl, nil
		}
		return late.Pick(r)
	}))
	want := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), PerKey(throttle.NewKeyed(config, throttle.WithClock(clk)), HeaderKey("X-Api-Key")))
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range warm {
		got.ServeHTTP(httptest.NewRecorder(), apiRequest("warm-"+strconv.Itoa(i)))
	}
	for op := range 4000 {
		clk.Advance(time.Duration(rng.Int64N(int64(200 * time.Millisecond))))
		key := "k" + strconv.Itoa(rng.IntN(20))
		var answers [2]string
		for i, h := range []http.Handler{got, want} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, apiRequest(key))
			answers[i] = answer(w)
		}
		if answers[0] != answers[1] {
			t.Fatalf("op %d, key %s: reached late %s, from the start %s", op, key, answers[0], answers[1])
		}
	}
}
