package benchmarks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/pool"
	"github.com/throttlekit/throttle/redisbucket"
)

// envFleetChild makes the benchmark binary run as one process of the
// fleet harness (fleet_test.go); its value is a fleetChildConfig in JSON.
// The test binary re-executes itself, as the delay proxy does, rather than
// building a separate program: no go build at run time, and the child
// links exactly the redisbucket the test was built with.
const envFleetChild = "THROTTLE_BENCH_FLEET_CHILD"

// fleetChildConfig is what the parent tells one child.
type fleetChildConfig struct {
	Redis    string        // address of the redis-server
	Vendor   string        // the vendor's base URL
	Proc     int           // this process's index, sent as X-Proc
	Calls    int           // chat calls to make
	Workers  int           // goroutines making them
	Deadline time.Duration // each call's deadline
	Limit    time.Duration // the child exits by itself this long after the start
	// Keys, above 1, makes the child's Gate a pool.Pool of that many
	// redisbucket.Limiters, one per API key (fleetKey), each with the
	// vendor's quota, under the Transport with WithRoutes (issue 39).
	Keys int
}

// fleetChildResult is the child's one line of JSON on stdout at the end.
type fleetChildResult struct {
	Proc          int
	Err           string         // set when the child could not run (the constructor failed fleetStarts times)
	StartFailures int            // constructor calls that failed with ErrUnavailable
	Calls         int            // calls made
	OK            int            // answered 200
	Failed        int            // an error or a status other than 200
	Status        map[string]int // answers by status ("err" for a transport error)
	FirstErr      string         // the first failure's error or status
	PastDeadline  int            // calls that returned more than fleetLate after their deadline
	MaxLate       time.Duration  // the latest return past a deadline
	Stats         redisbucket.Stats
	// From the observer, in Unix nanoseconds (0: never): the first and last
	// decision the failure policy took, and the first Redis decision after
	// the last failure decision.
	FirstFailure, LastFailure, RedisAfter int64
	// Reached is when a script call of this process reached Redis again
	// after its last that did not (fleetModes), 0 if none failed.
	Reached       int64
	FailureEvents int64
	LastDecision  int64
	LastMode      string
	// Modes counts this process's script calls by the script's mode
	// (fleetModes), so that a run says which calls make its Redis cost.
	Modes map[string]int64
}

// A child whose limiter cannot be built is started again after
// fleetRestart, at most fleetStarts times in all.
const (
	fleetStarts  = 10
	fleetRestart = 200 * time.Millisecond
)

// fleetLate is how late past its deadline a call may return before it
// counts as past its deadline.
const fleetLate = 20 * time.Millisecond

// fleetObserver records when decisions left Redis and came back to it.
type fleetObserver struct {
	mu                                      sync.Mutex
	firstFail, lastFail, redisAfter, lastAt int64
	failures                                int64
	lastMode                                redisbucket.Mode
	log                                     *fleetLog
}

func (o *fleetObserver) Observe(e redisbucket.Event) {
	if e.Kind != throttle.EventGranted && e.Kind != throttle.EventRejected {
		return
	}
	now := time.Now().UnixNano()
	o.log.printf("event %v mode %v wait %v", e.Kind, e.Mode, e.Wait)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lastAt, o.lastMode = now, e.Mode
	if e.Mode.Failure() {
		o.failures++
		if o.firstFail == 0 {
			o.firstFail = now
		}
		o.lastFail, o.redisAfter = now, 0
	} else if e.Mode == redisbucket.ModeRedis && o.lastFail != 0 && o.redisAfter == 0 {
		o.redisAfter = now
	}
}

// runFleetChild is one process of the fleet: a redisbucket.Limiter built
// as docs/redis.md shows a new user (its go-redis options, the default
// failure policy), under httpthrottle's Transport with an llm.Config. It prints
// "ready", waits for the start instant (Unix nanoseconds) on stdin, makes
// its calls and prints its fleetChildResult. It never returns.
func runFleetChild(v string) {
	var cfg fleetChildConfig
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fleet child:", err)
		os.Exit(2)
	}
	res := fleetChildResult{Proc: cfg.Proc, Status: map[string]int{}}
	out := func(code int) {
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		os.Exit(code)
	}
	ropts := &redis.Options{
		Addr:        cfg.Redis,
		DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
		WriteTimeout: 50 * time.Millisecond, MaxRetries: -1, DialerRetries: 1,
		ContextTimeoutEnabled: true,
	}
	if os.Getenv(envFleetClient) == "redis_rate" {
		// go-redis's defaults, as redis_rate's README uses it: the short
		// timeouts above suit redisbucket's breaker, and under them
		// redis_rate's polling at 64 processes times out, redials and
		// fails nearly every call.
		ropts = &redis.Options{Addr: cfg.Redis}
	}
	rdb := redis.NewClient(ropts)
	flog := openFleetLog(cfg.Proc)
	modes := &fleetModes{n: map[string]int64{}, log: flog}
	rdb.AddHook(modes)
	obs := &fleetObserver{log: flog}
	// A constructor that finds Redis unavailable fails, as the docs tell a
	// new user to handle: the process exits, and its supervisor starts it
	// again. Here it is tried again after fleetRestart, counted, up to
	// fleetStarts times.
	var lims []*redisbucket.Limiter
	var tr interface {
		http.RoundTripper
		CloseIdleConnections()
	}
	if os.Getenv(envFleetClient) == "redis_rate" {
		tr = newRateTransport(rdb)
	} else {
		var err error
		if lims, tr, err = fleetClient(rdb, obs, cfg, &res); err != nil {
			res.Err = err.Error()
			out(3)
		}
	}
	client := &http.Client{Transport: tr}
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		os.Exit(2) // the parent gave up
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet child: start:", err)
		os.Exit(2)
	}
	start := time.Unix(0, ns)
	time.AfterFunc(time.Until(start.Add(cfg.Limit)), func() {
		fmt.Fprintf(os.Stderr, "fleet child %d: not done %v after the start\n", cfg.Proc, cfg.Limit)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(4)
	})
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(5) }() // the parent closed stdin: it gave up
	time.Sleep(time.Until(start))
	var mu sync.Mutex
	next := make(chan struct{})
	go func() {
		for range cfg.Calls {
			next <- struct{}{}
		}
		close(next)
	}()
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for range next {
				status, late, err := fleetCall(client, cfg, flog)
				mu.Lock()
				res.Calls++
				if err != nil {
					res.Status["err"]++
				} else {
					res.Status[strconv.Itoa(status)]++
				}
				if err != nil || status != http.StatusOK {
					res.Failed++
					if res.FirstErr == "" {
						res.FirstErr = fmt.Sprint(status, " ", err)
					}
				} else {
					res.OK++
				}
				if late > fleetLate {
					res.PastDeadline++
				}
				res.MaxLate = max(res.MaxLate, late)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(lims) > 0 {
		res.Stats = lims[0].Stats()
	}
	res.Modes = modes.counts()
	modes.mu.Lock()
	res.Reached = modes.reached
	modes.mu.Unlock()
	obs.mu.Lock()
	res.FirstFailure, res.LastFailure, res.RedisAfter = obs.firstFail, obs.lastFail, obs.redisAfter
	res.FailureEvents, res.LastDecision, res.LastMode = obs.failures, obs.lastAt, obs.lastMode.String()
	obs.mu.Unlock()
	tr.CloseIdleConnections()
	for _, lim := range lims {
		lim.Close()
	}
	rdb.Close()
	out(0)
}

// fleetClient builds a child's limiters, as docs/redis.md shows a new user
// (a constructor that finds Redis unavailable fails: the process would exit
// and its supervisor start it again; here it is tried again after
// fleetRestart, counted, up to fleetStarts times), and its Transport: over
// the one Limiter, or over a pool of cfg.Keys of them routed to their keys.
func fleetClient(rdb *redis.Client, obs redisbucket.Observer, cfg fleetChildConfig, res *fleetChildResult) ([]*redisbucket.Limiter, *fleetTransport, error) {
	opts := []redisbucket.Option{redisbucket.WithObserver(obs)}
	switch os.Getenv("THROTTLE_FLEET_RESERVE") {
	case "1": // reservations, the default since issue 38, said outright
		opts = append(opts, redisbucket.WithReservations())
	case "0": // deciding step by step, the default before
		opts = append(opts, redisbucket.WithoutReservations())
	}
	if h := os.Getenv("THROTTLE_FLEET_HEADROOM"); h != "" { // a reservation's headroom for the wire, as a Go duration
		d, err := time.ParseDuration(h)
		if err != nil {
			return nil, nil, fmt.Errorf("THROTTLE_FLEET_HEADROOM: %w", err)
		}
		opts = append(opts, redisbucket.WithWireHeadroom(d))
	}
	limits := []redisbucket.Limit{
		{Name: "requests", Capacity: fleetBurst, Rate: throttle.Per(fleetRPM, time.Minute)},
		{Name: "tokens", Capacity: fleetTPM, Rate: throttle.Per(fleetTPM, time.Minute)},
	}
	keys := max(cfg.Keys, 1)
	lims := make([]*redisbucket.Limiter, keys)
	for k := range keys {
		id := "openai:fleet38"
		if keys > 1 {
			id += ":" + fleetKey(k)
		}
		var err error
		for range fleetStarts {
			if lims[k], err = redisbucket.NewLimiter(rdb, id, limits, opts...); !errors.Is(err, redisbucket.ErrUnavailable) {
				break
			}
			res.StartFailures++
			res.FirstErr = "NewLimiter: " + err.Error()
			time.Sleep(fleetRestart)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("NewLimiter: %w", err)
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = cfg.Workers
	var pick httpthrottle.Picker = httpthrottle.Shared(lims[0])
	topts := []httpthrottle.Option{httpthrottle.WithAccounting(llm.Config{})}
	if keys > 1 {
		members := make([]pool.Member, keys)
		routes := map[string]func(*http.Request){}
		for k, lim := range lims {
			members[k] = pool.Member{Name: fleetKey(k), Gate: lim}
			key := fleetKey(k)
			routes[key] = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }
		}
		p, err := pool.New(members)
		if err != nil {
			return nil, nil, fmt.Errorf("pool.New: %w", err)
		}
		pick = httpthrottle.Shared(p)
		topts = append(topts, httpthrottle.WithRoutes(routes))
	}
	tr, err := httpthrottle.NewTransport(base, pick, topts...)
	if err != nil {
		return nil, nil, fmt.Errorf("NewTransport: %w", err)
	}
	return lims, &fleetTransport{Transport: tr, base: base}, nil
}

// fleetTransport is a child's Transport with the base it closes.
type fleetTransport struct {
	*httpthrottle.Transport
	base *http.Transport
}

func (t *fleetTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// fleetKey is the API key of pool member k.
func fleetKey(k int) string { return "sk-fleet38-" + strconv.Itoa(k) }

// fleetCall makes one small chat completion with max_tokens set; late is
// how long after its deadline it returned (negative if before).
func fleetCall(c *http.Client, cfg fleetChildConfig, flog *fleetLog) (status int, late time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Deadline)
	defer cancel()
	dl, _ := ctx.Deadline()
	defer func() { late = time.Since(dl) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Vendor+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","max_tokens":100,"messages":[{"role":"user","content":"Say ok."}]}`))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+fleetKey(0))
	req.Header.Set(fleetProcHeader, strconv.Itoa(cfg.Proc))
	flog.printf("call")
	resp, err := c.Do(req)
	if resp != nil {
		flog.printf("status %d", resp.StatusCode)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, 0, fmt.Errorf("deadline: %w", err)
		}
		return 0, 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, 0, nil
}

// fleetModes is a go-redis hook that counts script calls by the decision
// script's mode: its first argument when it is a letter (lua/bucket.lua's
// general path), "fast" for the one-limit fast path (five or six
// arguments), "batch" for a batch (a number first).
type fleetModes struct {
	mu sync.Mutex
	n  map[string]int64
	// reached is the first script call Redis answered (a reply or a Redis
	// error such as NOSCRIPT) after the last one that did not reach it, in
	// Unix nanoseconds; 0 while the last one failed or none did.
	failedAt, reached int64
	log               *fleetLog
}

func (m *fleetModes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *fleetModes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		script := m.count(cmd.Args())
		err := next(ctx, cmd)
		if script {
			m.outcome(err)
			if m.log != nil {
				m.log.printf("script %v -> %v", fleetArgv(cmd.Args()), cmd)
			}
		}
		return err
	}
}

func (m *fleetModes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var script bool
		for _, c := range cmds {
			script = m.count(c.Args()) || script
		}
		err := next(ctx, cmds)
		if script {
			m.outcome(err)
		}
		return err
	}
}

// outcome records whether a script call reached Redis: a reply, or an
// error Redis sent.
func (m *fleetModes) outcome(err error) {
	var re redis.Error
	ok := err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re)
	now := time.Now().UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !ok:
		m.failedAt, m.reached = now, 0
	case m.failedAt != 0 && m.reached == 0:
		m.reached = now
	}
}

// count counts a script call by mode and reports whether args are one.
func (m *fleetModes) count(args []any) bool {
	if len(args) < 3 {
		return false
	}
	name, _ := args[0].(string)
	if name = strings.ToLower(name); name != "evalsha" && name != "eval" {
		return false
	}
	nk, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || len(args) <= 3+nk {
		return true
	}
	argv := args[3+nk:]
	mode := "fast"
	if len(argv) > 6 {
		mode = "batch"
		if s, ok := argv[0].(string); ok && s != "" && s[0] >= 'a' {
			mode = s
		}
	}
	m.mu.Lock()
	m.n[name+":"+mode]++
	m.mu.Unlock()
	return true
}

func (m *fleetModes) counts() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.n)
}

// fleetLog, with THROTTLE_FLEET_LOG set to a directory, writes a child's
// script calls, decisions and vendor calls there, one line each with the
// wall clock in µs (for reading a run's trace); nil logs nothing.
type fleetLog struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func openFleetLog(proc int) *fleetLog {
	dir := os.Getenv("THROTTLE_FLEET_LOG")
	if dir == "" {
		return nil
	}
	f, err := os.Create(fmt.Sprintf("%s/proc-%d.log", dir, proc))
	if err != nil {
		return nil
	}
	l := &fleetLog{w: bufio.NewWriter(f)}
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			l.mu.Lock()
			l.w.Flush()
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *fleetLog) printf(format string, args ...any) {
	if l == nil {
		return
	}
	now := time.Now().UnixMicro()
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%d ", now)
	fmt.Fprintf(l.w, format, args...)
	l.w.WriteByte('\n')
}

// fleetArgv is a script call's arguments after its keys.
func fleetArgv(args []any) []any {
	if len(args) < 3 {
		return nil
	}
	nk, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || len(args) <= 3+nk {
		return nil
	}
	return args[3+nk:]
}
