package httpthrottle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/maphash"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// AutoLimiter keeps one learned Limiter per quota: by default per host and
// credential (see AutoKey). Its Limiter method is a LimiterFunc that needs
// no configuration: it learns each quota from what the server says, and
// finds it by congestion control when the server says nothing but 429.
//
//	auto, err := httpthrottle.NewAuto()
//	if err != nil {
//		return err
//	}
//	tr, err := httpthrottle.NewTransport(http.DefaultTransport, auto.Limiter)
//	if err != nil {
//		return err
//	}
//	client := &http.Client{Transport: tr}
//
// Keep the AutoLimiter to read its Stats. It learns only through a Transport, which tells
// the Limiter of every response; a Limiter used elsewhere stays as it is.
//
// # What it learns from headers
//
// Each limit a response reports with its size is learned, and re-tuned on
// every response that reports it:
//   - IETF RateLimit-Policy: q requests per w seconds, exactly; one limit
//     per policy that counts requests (policies counting another unit are
//     not learned).
//   - OpenAI x-ratelimit-limit-{requests,tokens} and Anthropic
//     anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-limit:
//     per minute, by the vendors' convention.
//   - GitHub x-ratelimit-limit with x-ratelimit-resource: per hour (per
//     minute for the "search" and "code_search" resources), each resource a
//     quota of its own; requests are assigned to a resource by the first
//     segment of their path, as its responses report it.
//
// GitHub's counts are exact until x-ratelimit-reset: r left with the
// window ending at T is r more calls until T, then the whole limit. Its
// bucket holds the limit and is raised to r by the first count of a window
// (the window lets the r go at once), lowered by each later count, paused
// to T when a count says none is left, and given the whole limit at T; a
// count of a window already over is ignored, and a reset past the
// Transport's MaxPause is not waited for (the server's refusal will say).
// A refusal under such a count (a secondary limit while the count holds)
// pauses the quota for the wait the server asked and cuts nothing. The
// calls queued on the host's quota before a response named their resource
// are of that resource: the host's quota learns the same limit for them.
//
// A limit is its name and its window, whatever family reports it: an IETF
// policy "requests" over 60 seconds and OpenAI's per-minute requests are
// one limit. When several families report one limit on a response, the
// first in the order IETF, GitHub's X-RateLimit, OpenAI, Anthropic
// teaches it, and the others are ignored for it. Each limit is a bucket of
// the quota's Limiter, named "requests" (the first limit on requests,
// which takes over the congestion-controlled bucket) or "requests#2",
// "requests#3", … for the others, and "tokens", "input-tokens",
// "output-tokens" for token limits: bucket names, which observers report
// (Event.Limit), come from a bounded set whatever the server names its
// policies; Stats gives the server's name.
//
// What is learned is bounded: at most 64 limits a quota (a 65th makes the
// quota forget the limit reported least recently), policy names cut to 64
// bytes, 16 GitHub resources per host and credential (the one used least
// recently forgotten first) and AutoMaxQuotas quotas (default 4096, the
// one used least recently forgotten first).
//
// The server's rate is the limit over its window. Its burst is the most
// its bucket was seen to hold (a remaining count plus the cost of the
// response), at most the limit: a server's burst is often far shorter than
// its window (a GCRA server, LimitHandler at 600 a minute with a burst of
// 5); before anything is seen, the limit for IETF and GitHub and one
// second of the rate for the per-minute vendors. Other families (legacy
// RateLimit-*, unnamed X-RateLimit-*) carry no window and are not learned;
// their remaining counts still lower the levels, as on any Transport. A
// limit reported without a remaining count is found by congestion control
// (below), never above its rate.
//
// # Sharing a quota with others
//
// A remaining count is the quota's, not the client's: other clients spend
// it too. The client's rate R for a learned limit is its share of a target.
// Every interval of at least max(50ms, min(1s, 10/rate)) between two
// responses reporting remaining counts r0 and r1, it measures the quota's
// consumption C = rate*dt + r0 - r1 (at least its own), and its own
// spending s, and computes s*T/C + 1% of the rate per second of dt, where
// the target T = rate + (r1 - r*)/1s spends the surplus over the reserve
// r* = min(burst/2, 1s of rate) within a second (and is at least 5% of the
// rate). When the remaining count is the burst (r1 plus the response's
// cost), the server's refill was thrown away and C cannot be told: C is
// the client's own spending. Bounded to [R/2, 2R], that is the new R; a
// decrease is averaged with the old R (not on the count after a spaced
// first one, below, that others have spent). Clients that do this converge together on a total of the
// server's rate while the remaining count hovers at the reserve, whatever
// their number; the small equal increase evens their shares out. Before it
// has measured, a client takes 5% of the rate (50% for a token limit)
// times the fraction of the limit that remains (at least a fifth), or if
// higher the rate it already had, up to a fifth of the server's, times the
// fraction of the burst that remains: calls queued on the congestion-
// controlled bucket must not all fail their deadlines at once. With
// AutoFleet it takes instead the rate over the fleet's members, times the
// fraction of the burst, if that is more than the 5% share. Without it,
// a first count of an IETF or GitHub limit (whose limit is its burst as
// far as the server says) that shows a fraction p of the limit spent
// spaces the next call by up to half a second more, R = 1/(1/R + 0.5p):
// fifty clients that start together see every count from the limit down
// to none, and would otherwise send their second calls together; a
// server whose burst is short shows the same count to a client alone.
// The next count tells them apart as far as one can: if it is again the
// most seen (the server's bucket refilled to it, no one else spent it),
// R is at least the share before the spacing. It may spend at once its share, R/rate, of what
// remains above the reserve: ten calls made together with 590 of 600 left
// go together. On every response its level is lowered to its share of the
// remaining count, and its capacity is a quarter second of R or, if more,
// its share of the remaining count above the reserve (for tokens, at least
// its share of the burst, since a token cost is capped at the capacity,
// and never less than before, so that a call queued at a capacity is not
// refused as oversized; at least the largest cost seen; at most the
// burst). A refusal halves R, once per interval, never below the floor.
// A count the server rounds (Anthropic's token counts, to the nearest
// thousand: a 0 means up to 499) is the range it may mean: C is the least
// the two counts allow, r1 in T is the value of the range nearest the
// reserve (a range that holds the reserve shows neither surplus nor
// shortfall), the level is lowered to the share of the most the count may
// mean, and a count that steps down past a boundary pins the server's
// count at about that boundary: the level is raised to the share of it
// above the reserve, as a first count's is.
// A refusal about the request or the account (the Transport's 413 for a
// 429 that no wait cures, such as OpenAI's insufficient_quota, or a 402)
// teaches nothing.
//
// # With nothing but 429
//
// A quota that reports no limit is found by congestion control on the
// bucket "requests". It starts at the initial rate (AutoInitialRate,
// default 2 per second) with a capacity of a tenth of a second of its rate
// (at least 1). Epochs last max(250ms, 1/R); an epoch counts only if the
// calls really went at half of R or more, so that an idle client does not
// grow, and growth is by the time the epoch lasted (at most two epochs).
//
// In slow start R doubles every 0.5 s (grows by e^(1.386 t)): a client
// alone goes from 2 to 50 per second in 2.3 s. A server's burst hides the
// overload until it is spent: with a burst of one second of the quota, a
// sum of rates growing at g per second is e^x times the quota when the
// burst runs out, where e^x-1-x = g (x = 1.31, 3.7 times the quota), and
// the first cut, by e^-x = 0.27, lands it at or under the quota. Clients
// in slow start all grow at g, so their sum does too, whatever their
// number: N clients pay about one 429 each. A burst shorter than a second
// lands the cut lower (0.52 of the quota for 0.2 s), and probing climbs
// back; a longer one higher, and the second refusal corrects it. Under
// AutoFleet the fleet's rate keeps a slower schedule, a doubling every
// 2.26 s (g = 1-ln 2 = 0.307, x = ln 2) and a first cut to half: its
// members join at once at N times the initial rate.
//
// A refusal (a 429, or what the Transport counts as one) ends slow start
// and cuts R: the first as above; a later one to what the server let
// through since the previous refusal, pause included, bounded to [0.5,
// 0.8] of R: a server that refills during the pause what the client sends
// after it, and refuses once that is spent, let through exactly the
// client's share. A refusal less than a second after the pause ended is
// too soon to measure that share (and most likely due to clients that
// have not cut yet): it cuts to 0.8 of R. A refusal before an epoch at the
// cut rate has passed since the pause ended is the same congestion, and
// cuts nothing. The cut is multiplied by a random factor in [0.9, 1], so
// that clients refused together do not come back together, and sets the
// rate W to climb back to: the cut rate before that factor. Below W, R
// gains half its distance to W per counted epoch (at most 10% of R, at
// least 1% of W); at W it probes, growing at a rate per second that rises
// linearly from nothing to 0.307 (the fleet's slow start) over 9 s since
// the cut: slowly while the share just measured is likely right, faster
// once it has held long enough that room has probably been made (other
// clients done). A client alone pays for it
// with a 429 every 5-8 s at its quota. The Transport's shared pause
// on a refusal applies as always, lengthened once by a random part of up
// to a quarter of it, never past the Transport's MaxPause: the refusals of
// the calls in flight with the first do not lengthen it again.
//
// # Bounds
//
// Every rate stays between the floor (default one per ten
// seconds) and the maximum (both set by AutoRange; default none). Explicit limits
// (AutoWithin) stay in force: a request must pass them and the learned
// limits, which can only tighten them. The learned buckets are kept in a
// Keyed (see NewKeyed), which drops them once they are idle and full; a
// quota unused for AutoIdle (default 10 minutes, at least its longest
// window) is forgotten, so memory follows the quotas in use. The
// credential is hashed with a seed made for each AutoLimiter: the
// AutoLimiter keeps only the hash, never the secret.
type AutoLimiter struct {
	cfg   autoConfig
	keyed *throttle.Keyed[laneKey]
	seed  maphash.Seed
	epoch time.Time

	mu     sync.Mutex
	quotas map[quotaKey]*autoQuota
	order  []*autoQuota // the quotas, for the sweep
	next   int          // the sweep's position in order
}

// AutoOption configures an AutoLimiter. NewAuto fails, with an error
// matching throttle.ErrInvalidOption that names the option and its value,
// for an option outside its documented range.
type AutoOption func(*autoConfig) error

type autoConfig struct {
	key     func(*http.Request) string
	initial float64 // tokens per second
	max     float64 // 0: no maximum
	floor   float64
	within  LimiterFunc
	clock   clockwork.Clock
	obs     throttle.Observer
	idle    time.Duration
	rand    func() float64 // in [0, 1)
	fleet   *autoFleet
	// maxQuotas is the most quotas remembered.
	maxQuotas int
}

// AutoKey sets what a quota is: requests with the same key(r) share one.
// The default is the request's host and a hash of its credential
// (Authorization, X-Api-Key, Api-Key or X-Goog-Api-Key), so that two API
// keys of one vendor are two quotas. A custom key is used as given,
// without the credential: hash secrets before returning them. key must not
// be nil.
func AutoKey(key func(*http.Request) string) AutoOption {
	return func(c *autoConfig) error {
		if key == nil {
			return invalidOption("AutoKey(nil): no key function")
		}
		c.key = key
		return nil
	}
}

// AutoInitialRate sets the rate a quota starts at before anything is
// known about it, r > 0 and finite. The default is 2 per second. It is
// raised to the floor and lowered to the maximum of AutoRange.
func AutoInitialRate(r throttle.Rate) AutoOption {
	return func(c *autoConfig) error {
		v := perSecond(r)
		if v <= 0 {
			return invalidOption("AutoInitialRate(%v): the rate must be positive and finite", r)
		}
		c.initial = v
		return nil
	}
}

// AutoRange sets the floor no learned rate goes below, whatever the
// server says, and the maximum every learned request rate is capped at
// (token limits are not capped): min > 0 and finite, max >= min or
// throttle.Inf for no cap. The default is a floor of one per ten seconds
// and no cap.
func AutoRange(min, max throttle.Rate) AutoOption {
	return func(c *autoConfig) error {
		lo, hi := perSecond(min), perSecond(max)
		if lo <= 0 || max != throttle.Inf && hi < lo {
			return invalidOption("AutoRange(%v, %v): the floor must be positive and finite, and the maximum at least the floor (throttle.Inf for none)", min, max)
		}
		c.floor, c.max = lo, hi
		return nil
	}
}

// AutoWithin puts every request under f's Limiter as well as under the
// learned one: the configured limits stay the ceiling, and learned limits
// only tighten them. f's buckets must be on the same clock as Auto's
// (AutoClock), and have names of their own (WithName): the two are joined
// into one Limiter, costs in f's bucket order first, finding f's buckets by
// their names, so a Limiter with two buckets of one name fails the request
// with an error matching throttle.ErrInvalidOption. f must not be nil.
func AutoWithin(f LimiterFunc) AutoOption {
	return func(c *autoConfig) error {
		if f == nil {
			return invalidOption("AutoWithin(nil): no LimiterFunc")
		}
		c.within = f
		return nil
	}
}

// AutoClock makes the learned buckets and the learning read time from c,
// which must not be nil. The default is the real clock.
func AutoClock(c clockwork.Clock) AutoOption {
	return func(o *autoConfig) error {
		if c == nil {
			return invalidOption("AutoClock(nil): no clock (leave the option out for the real clock)")
		}
		o.clock = c
		return nil
	}
}

// AutoObserver reports the learned buckets' decisions to o, and an
// EventTuned each time a learned limit changes its rate or capacity. o
// must not be nil.
func AutoObserver(o throttle.Observer) AutoOption {
	return func(c *autoConfig) error {
		if o == nil {
			return invalidOption("AutoObserver(nil): no observer")
		}
		c.obs = o
		return nil
	}
}

// AutoIdle sets how long a quota nobody uses is remembered, d > 0; the
// default is 10 minutes. A quota is always kept for at least its longest
// window.
func AutoIdle(d time.Duration) AutoOption {
	return func(c *autoConfig) error {
		if d <= 0 {
			return invalidOption("AutoIdle(%v): the time must be positive", d)
		}
		c.idle = d
		return nil
	}
}

// defaultAutoMaxQuotas is how many quotas an AutoLimiter remembers at
// most, unless AutoMaxQuotas says otherwise.
const defaultAutoMaxQuotas = 4096

// AutoMaxQuotas sets the most quotas remembered (hosts, credentials,
// GitHub resources), n >= 1: a new quota beyond n makes the AutoLimiter
// forget the one used least recently. The default is 4096.
func AutoMaxQuotas(n int) AutoOption {
	return func(c *autoConfig) error {
		if n < 1 {
			return invalidOption("AutoMaxQuotas(%d): the count must be at least 1", n)
		}
		c.maxQuotas = n
		return nil
	}
}

// NewAuto returns an AutoLimiter, or an error matching
// throttle.ErrInvalidOption for an option outside its range (see each).
func NewAuto(opts ...AutoOption) (*AutoLimiter, error) {
	cfg := autoConfig{initial: 2, floor: 0.1, idle: 10 * time.Minute, rand: rand.Float64, maxQuotas: defaultAutoMaxQuotas}
	for i, o := range opts {
		if o == nil {
			return nil, invalidOption("NewAuto given a nil AutoOption (option %d)", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	// The floor holds: the start is at least the floor, and a maximum
	// below the floor is raised to it.
	cfg.initial = max(cfg.initial, cfg.floor)
	if cfg.max > 0 {
		cfg.max = max(cfg.max, cfg.floor)
		cfg.initial = min(cfg.initial, cfg.max)
	}
	a := &AutoLimiter{cfg: cfg, seed: maphash.MakeSeed(), quotas: make(map[quotaKey]*autoQuota)}
	var kopts []throttle.Option
	if cfg.obs != nil {
		kopts = append(kopts, throttle.WithObserver(cfg.obs))
	}
	if cfg.clock != nil {
		kopts = append(kopts, throttle.WithClock(cfg.clock))
	}
	a.keyed = throttle.NewKeyed(a.startLimits, kopts...)
	a.epoch = a.wall()
	return a, nil
}

// quotaKey names a quota: the key, the credential's hash, and for GitHub
// the resource.
type quotaKey struct {
	name      string
	cred      uint64
	fleetCred string // with AutoFleet: the hex SHA-256 of the credential, the same in every process
	resource  string
}

// fleetString is the quota's key in an AutoFleet store.
func (k quotaKey) fleetString() string {
	s := k.name
	if k.fleetCred != "" {
		s += "#" + k.fleetCred
	}
	if k.resource != "" {
		s += "/" + k.resource
	}
	return s
}

func (k quotaKey) String() string {
	s := k.name
	if k.cred != 0 {
		s += fmt.Sprintf("#%016x", k.cred)
	}
	if k.resource != "" {
		s += "/" + k.resource
	}
	return s
}

// laneKey names one learned bucket in the Keyed.
type laneKey struct {
	quota quotaKey
	name  string
}

// startLimits is the Keyed's config: what a bucket is before anything is
// learned. The congestion-controlled "requests" bucket starts at the
// initial rate; a bucket learned from headers is re-tuned as soon as it is
// made, from a token of capacity.
func (a *AutoLimiter) startLimits(k laneKey) []throttle.Limit {
	if k.name == aimdLane {
		return []throttle.Limit{{Name: k.name, Capacity: 1, Rate: rateOf(a.cfg.initial)}}
	}
	return []throttle.Limit{{Name: k.name, Capacity: 1, Rate: throttle.Per(1, time.Second)}}
}

// credentialHeaders are the request headers whose value identifies a
// credential, hence a quota.
var credentialHeaders = [...]string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// keyOf returns the quota key of r, without resource.
func (a *AutoLimiter) keyOf(r *http.Request) quotaKey {
	if a.cfg.key != nil {
		return quotaKey{name: a.cfg.key(r)}
	}
	k := quotaKey{name: HostKey(r)}
	var h maphash.Hash
	var sh hash.Hash
	found := false
	for _, name := range credentialHeaders {
		for _, v := range r.Header[name] {
			if !found {
				h.SetSeed(a.seed)
				found = true
				if a.cfg.fleet != nil {
					sh = sha256.New()
				}
			}
			h.WriteString(name)
			h.WriteByte(0)
			h.WriteString(v)
			h.WriteByte(0)
			if sh != nil {
				io.WriteString(sh, name+"\x00"+v+"\x00")
			}
		}
	}
	if found {
		k.cred = max(h.Sum64(), 1)
		if sh != nil {
			k.fleetCred = hex.EncodeToString(sh.Sum(nil)[:16])
		}
	}
	return k
}

// Limiter returns the learned Limiter for r's quota, joined with the
// AutoWithin Limiter if any. It is a LimiterFunc. The Gate AutoWithin
// chooses must be a *Limiter, whose buckets the learned ones join: any
// other fails the request.
func (a *AutoLimiter) Limiter(r *http.Request) (throttle.Gate, error) {
	var user *throttle.Limiter
	if a.cfg.within != nil {
		g, err := a.cfg.within(r)
		if err != nil {
			return nil, err
		}
		if user, _ = g.(*throttle.Limiter); !noGateIn(g) && user == nil {
			return nil, fmt.Errorf("throttle: AutoWithin chose a %T; the learned buckets join only a *Limiter", g)
		}
	}
	k := a.keyOf(r)
	now := a.now()
	a.mu.Lock()
	q := a.quota(k, now)
	if res := q.resourceOf(r); res != "" {
		k.resource = res
		q = a.quota(k, now)
	}
	a.sweep(now)
	a.mu.Unlock()
	if a.cfg.fleet != nil {
		// A quota new to this process learns what the fleet knows before
		// its first request, and a pause another member took holds before
		// the request is sent.
		q.mu.Lock()
		q.share(now, false)
		q.mu.Unlock()
	}
	l, err := q.limiter(user)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// quota returns the quota of k, made if need be. a.mu is held.
func (a *AutoLimiter) quota(k quotaKey, now int64) *autoQuota {
	q := a.quotas[k]
	if q == nil {
		if len(a.quotas) >= a.cfg.maxQuotas {
			a.evictQuota()
		}
		q = &autoQuota{a: a, key: k}
		q.lanes = []*lane{q.newLane(aimdLane)}
		if a.cfg.fleet != nil {
			q.lanes[0].fleet = &fleetCount{}
		}
		q.rebuild()
		a.quotas[k] = q
		a.order = append(a.order, q)
	}
	q.used.Store(now)
	return q
}

// sweep looks at one quota, and forgets it if it has gone unused for long
// enough. One look per call keeps up with the quotas made, one per call at
// most. a.mu is held.
func (a *AutoLimiter) sweep(now int64) {
	if len(a.order) == 0 {
		return
	}
	if a.next >= len(a.order) {
		a.next = 0
	}
	q := a.order[a.next]
	if now-q.used.Load() < int64(q.horizon()) {
		a.next++
		return
	}
	a.forget(a.next)
}

// evictQuota forgets the quota used least recently. a.mu is held.
func (a *AutoLimiter) evictQuota() {
	at := -1
	var oldest int64
	for i, q := range a.order {
		if u := q.used.Load(); at < 0 || u < oldest {
			at, oldest = i, u
		}
	}
	if at >= 0 {
		a.forget(at)
	}
}

// forget drops the quota at index i of a.order. a.mu is held.
func (a *AutoLimiter) forget(i int) {
	delete(a.quotas, a.order[i].key)
	last := len(a.order) - 1
	a.order[i] = a.order[last]
	a.order[last] = nil
	a.order = a.order[:last]
	if a.next > len(a.order) {
		a.next = 0
	}
}

// quotaCount returns the number of quotas remembered.
func (a *AutoLimiter) quotaCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.quotas)
}

// now is the time on the AutoLimiter's clock, in nanoseconds since it was
// made.
func (a *AutoLimiter) now() int64 { return int64(a.wall().Sub(a.epoch)) }

func (a *AutoLimiter) wall() time.Time {
	if a.cfg.clock != nil {
		return a.cfg.clock.Now()
	}
	return time.Now()
}

// jitter returns a random number in [lo, hi).
func (a *AutoLimiter) jitter(lo, hi float64) float64 {
	return lo + (hi-lo)*a.cfg.rand()
}

// autoQuota is what is learned about one quota.
type autoQuota struct {
	a    *AutoLimiter
	key  quotaKey
	used atomic.Int64 // instant of the last use, on a's time line

	mu        sync.Mutex
	lanes     []*lane
	lim       *autoGate          // over the lanes' buckets
	comb      *autoGate          // lim joined with the user's buckets combUser
	combUser  []*throttle.Bucket // of the Limiter combLim
	combLim   *throttle.Limiter  //
	combOf    *autoGate          // the lim comb was made from
	resources []resource         // GitHub: path segment to resource, on the base quota
	throttled int64

	// AutoFleet: whether and when q last synced, whether a sync of it
	// stored (joined the fleet), and the members then.
	synced  bool
	syncAt  int64
	joined  bool
	members int
	// The fleet's pause last adopted (Unix ns), how much later than its
	// end this member resumes, and the instant that made (Unix ns).
	pauseSeen    int64
	pauseSpread  time.Duration
	adoptedUntil int64
	// stretched is the end of the last pause stretchPause set.
	stretched time.Time
	// maxPause is the Transport's MaxPause, as its last response said.
	maxPause atomic.Int64
}

// resource maps the first segment of a request path to the GitHub resource
// its responses named.
type resource struct{ segment, name string }

// maxResources bounds the path segments remembered per quota.
const maxResources = 32

// autoGate is the Gate Auto gives a request: the Limiter over a quota's
// learned buckets (joined with AutoWithin's, if any), which the Transport
// tells of each response through q.
type autoGate struct {
	*throttle.Limiter
	q *autoQuota
	// bs are the Limiter's buckets in cost order: Auto made the Limiter
	// from them, so it keeps them rather than asks for them back.
	bs []*throttle.Bucket
}

func (a *autoGate) beforeSend() bool { return a.q.beforeSend() }

func (a *autoGate) response(req *http.Request, costs []int64, status int, sig *headers.Signals, maxPause time.Duration) {
	a.q.response(req, a.Limiter, a.bs, costs, status, sig, maxPause)
}

func (a *autoGate) serverRate(i int) (int64, time.Duration) {
	if i < len(a.bs) {
		return a.q.serverRate(a.bs[i])
	}
	return 0, 0
}

// limiter returns the Gate for a request whose explicit limits are user.
func (q *autoQuota) limiter(user *throttle.Limiter) (*autoGate, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if user == nil {
		return q.lim, nil
	}
	if q.comb != nil && q.combOf == q.lim && q.combLim == user {
		return q.comb, nil // a Limiter's buckets never change
	}
	ubs, err := bucketsOf(user)
	if err != nil {
		return nil, err
	}
	if q.comb != nil && q.combOf == q.lim && slices.Equal(q.combUser, ubs) {
		q.combLim = user
		return q.comb, nil
	}
	bs := append(slices.Clone(ubs), q.lim.bs...)
	l, err := throttle.NewLimiter(bs...)
	if err != nil {
		return nil, fmt.Errorf("throttle: Auto with explicit limits: %w", err)
	}
	q.comb, q.combUser, q.combLim, q.combOf = &autoGate{l, q, bs}, ubs, user, q.lim
	return q.comb, nil
}

// bucketsOf returns the buckets of the explicit Limiter l, in cost order,
// found by their names: AutoWithin's limits are joined to the learned ones
// bucket by bucket, so each must be told apart by its name.
func bucketsOf(l *throttle.Limiter) ([]*throttle.Bucket, error) {
	limits := l.Limits()
	bs := make([]*throttle.Bucket, len(limits))
	for i, lim := range limits {
		for _, o := range limits[:i] {
			if o.Name == lim.Name {
				return nil, fmt.Errorf("%w: AutoWithin's Limiter has two limits named %q: Auto joins them to the learned ones by name (give each bucket its own WithName)", throttle.ErrInvalidOption, lim.Name)
			}
		}
		bs[i] = l.Bucket(lim.Name)
	}
	return bs, nil
}

// rebuild makes the Limiter over the current lanes. q.mu is held (or q is
// not yet shared).
func (q *autoQuota) rebuild() {
	bs := make([]*throttle.Bucket, len(q.lanes))
	for i, ln := range q.lanes {
		bs[i] = ln.b
	}
	l, err := throttle.NewLimiter(bs...)
	if err != nil {
		panic("throttle: joining learned buckets failed: " + err.Error())
	}
	q.lim = &autoGate{l, q, bs}
}

// horizon is how long q is kept unused.
func (q *autoQuota) horizon() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.a.cfg.idle
	for _, ln := range q.lanes {
		h = max(h, ln.window)
	}
	return h
}

// resourceOf returns the GitHub resource learned for r's path, or "".
func (q *autoQuota) resourceOf(r *http.Request) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.resources) == 0 {
		return ""
	}
	seg := firstSegment(r)
	for _, res := range q.resources {
		if res.segment == seg {
			return res.name
		}
	}
	return ""
}

func firstSegment(r *http.Request) string {
	if r.URL == nil {
		return ""
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[:i]
	}
	return p
}

// lane returns q's lane named name, or nil.
func (q *autoQuota) lane(name string) *lane {
	for _, ln := range q.lanes {
		if ln.name == name {
			return ln
		}
	}
	return nil
}

// newLane makes a lane over the Keyed's bucket for name. A bucket the
// Keyed still holds from an earlier time this quota was known keeps what
// was learned then.
func (q *autoQuota) newLane(name string) *lane {
	l := q.a.keyed.Limiter(laneKey{quota: q.key, name: name})
	b := l.Bucket(name)
	ln := &lane{name: name, lim: l, b: b, slow: true}
	st := b.Status()
	ln.rate, ln.capacity = perSecond(st.Rate), st.Capacity
	return ln
}

// AutoQuotaStats describes one quota an AutoLimiter knows.
type AutoQuotaStats struct {
	// Key names the quota: its key (the host by default), then "#" and
	// the hash of its credential if any, then "/" and its GitHub resource
	// if any.
	Key string
	// Limits are the quota's learned buckets, in cost order.
	Limits []AutoLimitStats
	// Throttled counts the responses that said the quota was exceeded.
	Throttled int64
}

// AutoLimitStats describes one learned limit.
type AutoLimitStats struct {
	// Name is the learned bucket's name (see AutoLimiter: from a bounded
	// set), Policy the server's name for the limit ("" until learned; an
	// IETF policy's name cut to 64 bytes, "requests" or a token kind for
	// the vendors' families).
	Name   string
	Policy string
	// Learned reports that the limit was read from the server's headers;
	// false means it is being found by congestion control.
	Learned bool
	// Quota and Window are the server's limit, when Learned.
	Quota  int64
	Window time.Duration
	// Rate and Capacity are the client's own, now.
	Rate     throttle.Rate
	Capacity int64
}

// Stats returns what a has learned, quota by quota, in no set order.
func (a *AutoLimiter) Stats() []AutoQuotaStats {
	a.mu.Lock()
	qs := slices.Clone(a.order)
	a.mu.Unlock()
	out := make([]AutoQuotaStats, 0, len(qs))
	for _, q := range qs {
		q.mu.Lock()
		s := AutoQuotaStats{Key: q.key.String(), Throttled: q.throttled}
		for _, ln := range q.lanes {
			st := ln.b.Status()
			s.Limits = append(s.Limits, AutoLimitStats{
				Name: ln.name, Policy: ln.policy, Learned: ln.learned, Quota: ln.limit, Window: ln.window,
				Rate: st.Rate, Capacity: st.Capacity,
			})
		}
		q.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// perSecond is r in tokens per second.
func perSecond(r throttle.Rate) float64 {
	if r.Period() <= 0 || r.Tokens() <= 0 {
		return 0
	}
	return float64(r.Tokens()) / r.Period().Seconds()
}

// rateOf is the Rate of v tokens per second, to a thousandth of a token
// per second and at least that.
func rateOf(v float64) throttle.Rate {
	m := math.Round(v * 1000)
	if !(m >= 1) { // NaN too
		m = 1
	}
	if m > 1e15 {
		m = 1e15
	}
	return throttle.Per(int64(m), 1000*time.Second)
}

// serverRate is the server's rate for b, a bucket of q: the limit over the
// window the server reported, which Auto's share of it never exceeds; 0
// tokens for a limit not learned yet, whose rate nobody knows. A bucket
// that is not one of q's (AutoWithin's) has its own rate.
func (q *autoQuota) serverRate(b *throttle.Bucket) (tokens int64, period time.Duration) {
	q.mu.Lock()
	for _, ln := range q.lanes {
		if ln.b == b {
			defer q.mu.Unlock()
			if !ln.learned || ln.window <= 0 {
				return 0, 0
			}
			return ln.limit, ln.window
		}
	}
	q.mu.Unlock()
	r := b.Status().Rate
	return r.Tokens(), r.Period()
}
