package benchmarks

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/redisbucket"
)

// limitHandlerServer is this library's own Handler in front of an
// API: 600 requests a minute, burst 5 (GCRA-like: the burst is a small
// part of the window), IETF fields, Retry-After on 429.
type limitHandlerServer struct {
	h       http.Handler
	refused atomic.Int64
	mu      sync.Mutex
	at      []time.Duration
	start   time.Time
}

func newLimitHandlerServer() *limitHandlerServer {
	b, err := throttle.New(5, throttle.Per(600, time.Minute), throttle.WithName("default"))
	if err != nil {
		panic(err)
	}
	l, err := throttle.NewLimiter(b)
	if err != nil {
		panic(err)
	}
	s := &limitHandlerServer{start: time.Now()}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	s.h = httpthrottle.Handler(api, httpthrottle.Shared(l), httpthrottle.WithRejected(func(w http.ResponseWriter, r *http.Request, wait time.Duration) {
		s.refused.Add(1)
		s.mu.Lock()
		s.at = append(s.at, time.Since(s.start))
		s.mu.Unlock()
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	return s
}

func (s *limitHandlerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.h.ServeHTTP(w, r)
}
func (s *limitHandlerServer) refusedCount() int64 { return s.refused.Load() }
func (s *limitHandlerServer) reset()              { s.start = time.Now() }
func (s *limitHandlerServer) histogram() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.at)
}

// loneShapes are the bursts of the lone-client table, in seconds of the
// vendor's 50/s.
var loneShapes = []struct {
	name  string
	burst int
}{{"0.2 s", 10}, {"1 s", 50}, {"60 s", 3000}}

// TestAutoLoneTable prints the lone-client table of benchmarks/README.md:
// one client, 400 calls by 4 workers, against a vendor of 50/s in each
// dialect with a burst of 0.2 s, 1 s and 60 s of its rate, and against
// Handler at 600 a minute, burst 5. The floor is the calls at the
// server's rate (as in the many-clients table), so a burst larger than
// the calls lets a client beat it. THROTTLE_AUTO_ROWS=0,5 picks rows by
// index.
func TestAutoLoneTable(t *testing.T) {
	if os.Getenv("THROTTLE_AUTO_TABLE") == "" {
		t.Skip("THROTTLE_AUTO_TABLE=1 runs the real-time table (minutes)")
	}
	const calls, workers = 400, 4
	var b strings.Builder
	fmt.Fprintf(&b, "| server | burst | Auto() 429s | failed | time/floor |\n|---|---|---|---|---|\n")
	row := 0
	pick := func() bool {
		only := os.Getenv("THROTTLE_AUTO_ROWS")
		row++
		return only == "" || strings.Contains(","+only+",", ","+strconv.Itoa(row-1)+",")
	}
	for _, d := range []dialect{dialectIETF, dialectOpenAI, dialectRetryAfter, dialectBare} {
		for _, sh := range loneShapes {
			if !pick() {
				continue
			}
			o := runOn(t, newVendorShape(d, vendorRate, sh.burst), autoContender(workers), 1, calls, workers)
			fmt.Fprintf(&b, "| %s, 50/s | %s (%d) | %d | %d | %.2f |\n", d, sh.name, sh.burst, o.refused, o.failed, float64(o.elapsed)/float64(o.floor))
			t.Logf("%s burst %d: %+v", d, sh.burst, o)
		}
	}
	if pick() {
		s := newLimitHandlerServer()
		o := runHandler(t, s, s, 10, autoContender(workers), 1, calls, workers)
		fmt.Fprintf(&b, "| Handler, 600/min | 5 | %d | %d | %.2f |\n", o.refused, o.failed, float64(o.elapsed)/float64(o.floor))
		t.Logf("Handler: %+v", o)
	}
	t.Log("\n" + b.String())
}

// fleetContender is Auto with AutoFleet on one Redis: the clients of a
// run are the processes of one fleet.
func fleetContender(t testing.TB, workers int) (contender, func()) {
	addr := redisAddr(t)
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 4 * workers})
	// A run's own keys: a fresh fleet every run.
	prefix := fmt.Sprintf("bench:fleet:%d:", time.Now().UnixNano())
	return autoContenderWith(workers, "Auto()+AutoFleet", func() []auto.Option {
		return []auto.Option{auto.Fleet(redisbucket.NewAutoStore(c, prefix))}
	}), func() { c.Close() }
}

// TestAutoFleetTable prints the fleet table of benchmarks/README.md: the
// many-clients rows with every client a member of one AutoFleet on Redis
// (THROTTLE_REDIS_ADDR, or a redis-server this binary starts).
// THROTTLE_AUTO_ROWS picks rows by index; THROTTLE_AUTO_ONLY=1 skips
// go-retryablehttp.
func TestAutoFleetTable(t *testing.T) {
	if os.Getenv("THROTTLE_AUTO_TABLE") == "" {
		t.Skip("THROTTLE_AUTO_TABLE=1 runs the real-time table (minutes)")
	}
	const workers = 4
	rows := []struct {
		d      dialect
		n, per int
	}{
		{dialectIETF, 10, 50}, {dialectOpenAI, 10, 50}, {dialectRetryAfter, 10, 50}, {dialectBare, 10, 50},
		{dialectIETF, 50, 10}, {dialectOpenAI, 50, 10}, {dialectRetryAfter, 50, 10}, {dialectBare, 50, 10},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| dialect | N | calls | go-retryablehttp 429s | Auto()+AutoFleet 429s | failed | time/floor | 429s vs retryablehttp |\n|---|---|---|---|---|---|---|---|\n")
	for i, r := range rows {
		if only := os.Getenv("THROTTLE_AUTO_ROWS"); only != "" && !strings.Contains(","+only+",", ","+strconv.Itoa(i)+",") {
			continue
		}
		var base outcome
		if os.Getenv("THROTTLE_AUTO_ONLY") == "" {
			base = runVendor(t, r.d, retryableContender(workers), r.n, r.per, workers)
		}
		fc, stop := fleetContender(t, workers)
		o := runVendor(t, r.d, fc, r.n, r.per, workers)
		stop()
		ratio := 0.0
		if base.refused > 0 {
			ratio = float64(o.refused) / float64(base.refused)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.2f | %.1f%% |\n", r.d, r.n, r.n*r.per, base.refused, o.refused, o.failed, float64(o.elapsed)/float64(o.floor), 100*ratio)
		t.Logf("%s N=%d: base %+v fleet %+v", r.d, r.n, base, o)
	}
	t.Log("\n" + b.String())
}
