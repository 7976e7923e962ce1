package auto

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
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// Limiter keeps one learned Limiter per quota: by default per host and
// credential (see Key). It is an httpthrottle.Picker
// that needs no configuration: it learns each quota from what the server
// says, and finds it by congestion control when the server says nothing
// but 429 (the package doc sums up the rules; docs/auto.md states them).
//
//	learned, err := auto.New()
//	if err != nil {
//		return err
//	}
//	tr, err := httpthrottle.NewTransport(http.DefaultTransport, learned)
//	if err != nil {
//		return err
//	}
//	client := &http.Client{Transport: tr}
//
// Keep the Limiter to read its Stats. It learns only through a Transport,
// which tells its Gates of every response (they are httpthrottle.Learners);
// a Gate used elsewhere stays as it is.
type Limiter struct {
	cfg   autoConfig
	keyed *throttle.Keyed[laneKey]
	seed  maphash.Seed
	epoch time.Time

	mu     sync.Mutex
	quotas map[quotaKey]*autoQuota
	order  []*autoQuota // the quotas, for the sweep
	next   int          // the sweep's position in order
}

// Option configures a Limiter. New fails, with an error
// matching throttle.ErrInvalidOption that names the option and its value,
// for an option outside its documented range.
type Option func(*autoConfig) error

// noGate reports whether g is nil or a nil pointer in a Gate: Within's
// way to add no limits to a request.
func noGate(g throttle.Gate) bool {
	if g == nil {
		return true
	}
	v := reflect.ValueOf(g)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// invalidOption is an error for an option outside its range, matching
// throttle.ErrInvalidOption.
func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%w: auto."+format, append([]any{throttle.ErrInvalidOption}, args...)...)
}

type autoConfig struct {
	key     func(*http.Request) string
	initial float64 // tokens per second
	max     float64 // 0: no maximum
	floor   float64
	within  httpthrottle.Picker
	clock   clockwork.Clock
	obs     throttle.Observer
	idle    time.Duration
	rand    func() float64 // in [0, 1)
	fleet   *autoFleet
	// maxQuotas is the most quotas remembered.
	maxQuotas int
}

// Key sets what a quota is: requests with the same key(r) share one.
// The default is the request's host and a hash of its credential
// (Authorization, X-Api-Key, Api-Key or X-Goog-Api-Key), so that two API
// keys of one vendor are two quotas. A custom key is used as given,
// without the credential: hash secrets before returning them. key must not
// be nil.
func Key(key func(*http.Request) string) Option {
	return func(c *autoConfig) error {
		if key == nil {
			return invalidOption("Key(nil): no key function")
		}
		c.key = key
		return nil
	}
}

// InitialRate sets the rate a quota starts at before anything is
// known about it, r > 0 and finite. The default is 2 per second. It is
// raised to the floor and lowered to the maximum of Range.
func InitialRate(r throttle.Rate) Option {
	return func(c *autoConfig) error {
		v := perSecond(r)
		if v <= 0 {
			return invalidOption("InitialRate(%v): the rate must be positive and finite", r)
		}
		c.initial = v
		return nil
	}
}

// Range sets the floor no learned rate goes below, whatever the
// server says, and the maximum every learned request rate is capped at
// (token limits are not capped): min > 0 and finite, max >= min or
// throttle.Inf for no cap. The default is a floor of one per ten seconds
// and no cap.
func Range(min, max throttle.Rate) Option {
	return func(c *autoConfig) error {
		lo, hi := perSecond(min), perSecond(max)
		if lo <= 0 || max != throttle.Inf && hi < lo {
			return invalidOption("Range(%v, %v): the floor must be positive and finite, and the maximum at least the floor (throttle.Inf for none)", min, max)
		}
		c.floor, c.max = lo, hi
		return nil
	}
}

// Within puts every request under f's Limiter as well as under the
// learned one: the configured limits stay the ceiling, and learned limits
// only tighten them. f's buckets must be on the same clock as Auto's
// (Clock), and have names of their own (WithName): the two are joined
// into one Limiter, costs in f's bucket order first, finding f's buckets by
// their names, so a Limiter with two buckets of one name fails the request
// with an error matching throttle.ErrInvalidOption. f must not be nil.
func Within(f httpthrottle.Picker) Option {
	return func(c *autoConfig) error {
		if f == nil {
			return invalidOption("Within(nil): no httpthrottle.Picker")
		}
		c.within = f
		return nil
	}
}

// Clock makes the learned buckets and the learning read time from c,
// which must not be nil. The default is the real clock.
func Clock(c clockwork.Clock) Option {
	return func(o *autoConfig) error {
		if c == nil {
			return invalidOption("Clock(nil): no clock (leave the option out for the real clock)")
		}
		o.clock = c
		return nil
	}
}

// Observer reports the learned buckets' decisions to o, and an
// EventTuned each time a learned limit changes its rate or capacity. o
// must not be nil.
func Observer(o throttle.Observer) Option {
	return func(c *autoConfig) error {
		if o == nil {
			return invalidOption("Observer(nil): no observer")
		}
		c.obs = o
		return nil
	}
}

// Idle sets how long a quota nobody uses is remembered, d > 0; the
// default is 10 minutes. A quota is always kept for at least its longest
// window.
func Idle(d time.Duration) Option {
	return func(c *autoConfig) error {
		if d <= 0 {
			return invalidOption("Idle(%v): the time must be positive", d)
		}
		c.idle = d
		return nil
	}
}

// defaultAutoMaxQuotas is how many quotas a Limiter remembers at
// most, unless MaxQuotas says otherwise.
const defaultAutoMaxQuotas = 4096

// MaxQuotas sets the most quotas remembered (hosts, credentials,
// GitHub resources), n >= 1: a new quota beyond n makes the Limiter
// forget the one used least recently. The default is 4096.
func MaxQuotas(n int) Option {
	return func(c *autoConfig) error {
		if n < 1 {
			return invalidOption("MaxQuotas(%d): the count must be at least 1", n)
		}
		c.maxQuotas = n
		return nil
	}
}

// New returns a Limiter, or an error matching
// throttle.ErrInvalidOption for an option outside its range (see each).
func New(opts ...Option) (*Limiter, error) {
	cfg := autoConfig{initial: 2, floor: 0.1, idle: 10 * time.Minute, rand: rand.Float64, maxQuotas: defaultAutoMaxQuotas}
	for i, o := range opts {
		if o == nil {
			return nil, invalidOption("New given a nil Option (option %d)", i)
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
	a := &Limiter{cfg: cfg, seed: maphash.MakeSeed(), quotas: make(map[quotaKey]*autoQuota)}
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
// the resource; or the name of a Quota.
type quotaKey struct {
	name      string
	cred      uint64
	fleetCred string // with Fleet: the hex SHA-256 of the credential, the same in every process
	resource  string
	member    bool // a Quota's, never a request's
}

// fleetString is the quota's key in an Fleet store.
func (k quotaKey) fleetString() string {
	s := k.name
	if k.member {
		// Apart from the keys Pick finds: a Quota may be named as a host.
		s = "quota:" + s
	}
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
func (a *Limiter) startLimits(k laneKey) []throttle.Limit {
	if k.name == aimdLane {
		return []throttle.Limit{{Name: k.name, Capacity: 1, Rate: rateOf(a.cfg.initial)}}
	}
	if k.quota.member {
		// A Quota's declared token limit, which holds nothing back until
		// it is reported (see declaredLane).
		return []throttle.Limit{{Name: k.name, Capacity: placeholderCapacity, Rate: throttle.Per(placeholderCapacity, time.Second)}}
	}
	return []throttle.Limit{{Name: k.name, Capacity: 1, Rate: throttle.Per(1, time.Second)}}
}

// credentialHeaders are the request headers whose value identifies a
// credential, hence a quota.
var credentialHeaders = [...]string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// keyOf returns the quota key of r, without resource.
func (a *Limiter) keyOf(r *http.Request) quotaKey {
	if a.cfg.key != nil {
		return quotaKey{name: a.cfg.key(r)}
	}
	k := quotaKey{name: httpthrottle.HostKey(r)}
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

// Pick returns the learned Limiter for r's quota, joined with the
// Within Limiter if any. It is an httpthrottle.Picker. The Gate Within
// chooses must be a *throttle.Limiter, whose buckets the learned ones join: any
// other fails the request.
func (a *Limiter) Pick(r *http.Request) (throttle.Gate, error) {
	var user *throttle.Limiter
	if a.cfg.within != nil {
		g, err := a.cfg.within.Pick(r)
		if err != nil {
			return nil, err
		}
		if user, _ = g.(*throttle.Limiter); !noGate(g) && user == nil {
			return nil, fmt.Errorf("throttle: Within chose a %T; the learned buckets join only a *Limiter", g)
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
func (a *Limiter) quota(k quotaKey, now int64) *autoQuota {
	q := a.quotas[k]
	if q == nil {
		if len(a.quotas) >= a.cfg.maxQuotas {
			a.evictQuota()
		}
		q = a.newQuota(k)
		q.rebuild()
	}
	q.used.Store(now)
	return q
}

// newQuota makes and keeps the quota of k, with its requests lane, and
// leaves it to the caller to build its Limiter (and, for a quota Pick
// finds, to mark it used). a.mu is held.
func (a *Limiter) newQuota(k quotaKey) *autoQuota {
	q := &autoQuota{a: a, key: k}
	q.lanes = []*lane{q.newLane(aimdLane)}
	if a.cfg.fleet != nil {
		q.lanes[0].fleet = &fleetCount{}
	}
	a.quotas[k] = q
	a.order = append(a.order, q)
	return q
}

// sweep looks at one quota, and forgets it if it has gone unused for long
// enough. One look per call keeps up with the quotas made, one per call at
// most. a.mu is held.
func (a *Limiter) sweep(now int64) {
	if len(a.order) == 0 {
		return
	}
	if a.next >= len(a.order) {
		a.next = 0
	}
	q := a.order[a.next]
	if q.declared != nil || now-q.used.Load() < int64(q.horizon()) {
		a.next++
		return
	}
	a.forget(a.next)
}

// evictQuota forgets the quota used least recently. a.mu is held.
func (a *Limiter) evictQuota() {
	at := -1
	var oldest int64
	for i, q := range a.order {
		if q.declared != nil {
			continue // a Quota is the caller's to keep
		}
		if u := q.used.Load(); at < 0 || u < oldest {
			at, oldest = i, u
		}
	}
	if at >= 0 {
		a.forget(at)
	}
}

// forget drops the quota at index i of a.order. a.mu is held.
func (a *Limiter) forget(i int) {
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
func (a *Limiter) quotaCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.quotas)
}

// now is the time on the Limiter's clock, in nanoseconds since it was
// made.
func (a *Limiter) now() int64 { return int64(a.wall().Sub(a.epoch)) }

func (a *Limiter) wall() time.Time {
	if a.cfg.clock != nil {
		return a.cfg.clock.Now()
	}
	return time.Now()
}

// jitter returns a random number in [lo, hi).
func (a *Limiter) jitter(lo, hi float64) float64 {
	return lo + (hi-lo)*a.cfg.rand()
}

// autoQuota is what is learned about one quota.
type autoQuota struct {
	a    *Limiter
	key  quotaKey
	used atomic.Int64 // instant of the last use, on a's time line
	// declared are a Quota's limits, whose lanes are fixed: nil for a
	// quota Pick found, which learns whatever limits its server reports.
	declared []string

	mu        sync.Mutex
	lanes     []*lane
	lim       *autoGate          // over the lanes' buckets
	comb      *autoGate          // lim joined with the user's buckets combUser
	combUser  []*throttle.Bucket // of the Limiter combLim
	combLim   *throttle.Limiter  //
	combOf    *autoGate          // the lim comb was made from
	resources []resource         // GitHub: path segment to resource, on the base quota
	throttled int64

	// Fleet: whether and when q last synced, whether a sync of it
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
// learned buckets (joined with Within's, if any), which the Transport
// tells of each response through q.
type autoGate struct {
	*throttle.Limiter
	q *autoQuota
	// bs are the Limiter's buckets in cost order: Auto made the Limiter
	// from them, so it keeps them rather than asks for them back.
	bs []*throttle.Bucket
}

// BeforeSend is httpthrottle.Learner's: true when the fleet paused the
// quota while the request waited.
func (a *autoGate) BeforeSend() bool { return a.q.beforeSend() }

// Learn is httpthrottle.Learner's: it learns from what the server said.
func (a *autoGate) Learn(r *httpthrottle.Answer) {
	sig := signalsPool.Get().(*headers.Signals)
	sig.Quotas = signalsOf(sig.Quotas[:0], r.Quotas)
	a.q.response(r.Request, a.Limiter, a.bs, r.Costs, r.Status, r.Throttled, sig, r.MaxPause)
	signalsPool.Put(sig)
}

// signalsPool keeps the Signals Learn reads an Answer's quotas into, so
// that a response costs no allocation.
var signalsPool = sync.Pool{New: func() any { return new(headers.Signals) }}

// ServerRate is httpthrottle.Learner's: the server's rate of limit i,
// which Auto's share never exceeds; 0 tokens while unknown.
func (a *autoGate) ServerRate(i int) (int64, time.Duration) {
	if i < len(a.bs) {
		return a.q.serverRate(a.bs[i])
	}
	return 0, 0
}

// signalsOf appends the quotas qs, as the Transport reported them, to dst.
func signalsOf(dst []headers.Quota, qs []httpthrottle.Quota) []headers.Quota {
	for _, q := range qs {
		dst = append(dst, headers.Quota{
			Family: headers.FamilyNamed(q.Family), Name: q.Name, Unit: q.Unit, Resource: q.Resource,
			Limit: q.Limit, Remaining: q.Remaining, Reset: q.Reset, Window: q.Window,
		})
	}
	return dst
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
// found by their names: Within's limits are joined to the learned ones
// bucket by bucket, so each must be told apart by its name.
func bucketsOf(l *throttle.Limiter) ([]*throttle.Bucket, error) {
	limits := l.Limits()
	bs := make([]*throttle.Bucket, len(limits))
	for i, lim := range limits {
		for _, o := range limits[:i] {
			if o.Name == lim.Name {
				return nil, fmt.Errorf("%w: Within's Limiter has two limits named %q: Auto joins them to the learned ones by name (give each bucket its own WithName)", throttle.ErrInvalidOption, lim.Name)
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

// QuotaStats describes one quota a Limiter knows.
type QuotaStats struct {
	// Key names the quota: its key (the host by default), then "#" and
	// the hash of its credential if any, then "/" and its GitHub resource
	// if any.
	Key string
	// Limits are the quota's learned buckets, in cost order.
	Limits []LimitStats
	// Throttled counts the responses that said the quota was exceeded.
	Throttled int64
}

// LimitStats describes one learned limit.
type LimitStats struct {
	// Name is the learned bucket's name (see Limiter: from a bounded
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
func (a *Limiter) Stats() []QuotaStats {
	a.mu.Lock()
	qs := slices.Clone(a.order)
	a.mu.Unlock()
	out := make([]QuotaStats, 0, len(qs))
	for _, q := range qs {
		q.mu.Lock()
		s := QuotaStats{Key: q.key.String(), Throttled: q.throttled}
		for _, ln := range q.lanes {
			st := ln.b.Status()
			s.Limits = append(s.Limits, LimitStats{
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
// that is not one of q's (Within's) has its own rate.
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
