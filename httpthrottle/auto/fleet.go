package auto

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"
)

// Store keeps what the Limiters of a fleet learned about each
// quota, where every process of the fleet reads it: see Fleet. Its
// methods are called from RoundTrip, with a short deadline; an error leaves
// the process learning alone until the store answers again.
// redisbucket.NewAutoStore keeps it in Redis.
type Store interface {
	// Load records that member uses key now and returns how many members
	// used it within the last memberTTL, member included, with the state
	// stored under key and its version; a key never stored has version 0
	// and no state. It is one round trip.
	Load(ctx context.Context, key, member string, memberTTL time.Duration) (state []byte, version int64, members int, err error)
	// Store replaces the state under key if its version is still version,
	// makes it version+1 and keeps it for ttl; stored is false when
	// another process stored first.
	Store(ctx context.Context, key string, version int64, state []byte, ttl time.Duration) (stored bool, err error)
}

// The fleet's timing.
const (
	// autoSyncEvery is the least time between two syncs of a quota: a
	// pause one member took reaches the others within it.
	autoSyncEvery   = 20 * time.Millisecond
	autoSyncTimeout = 250 * time.Millisecond // deadline of one sync
	// A member that has not synced for autoMemberTTL has left, or for
	// less when members call more often: see memberTTL.
	autoMemberTTL   = 3 * time.Second
	autoMemberLeast = time.Second
	autoFleetTTL    = time.Hour // how long the store keeps a quota nobody syncs
)

// Fleet makes the processes that share store learn each quota
// together, as one client: each process is a member of the quota (host and
// credential) while it uses it, and on every request, when a call has its
// permit and is about to be sent, and on every response (at most every
// 20 ms, one round trip when nothing changed) and on every refusal, it
// merges what it learned into the state store keeps for the quota and
// adopts the result:
//   - the limits a server named (name, window, limit, the most its bucket
//     was seen to hold): a process that starts knows them before its first
//     response, and its first share of a limit is an equal part of it,
//     the limit's rate over the number of members;
//   - for a quota found by congestion control (nothing but 429), one rate
//     for the whole fleet, which each member joining in slow start raises
//     by the initial rate (InitialRate), grown from the successes of
//     all members together and cut once per congestion by the first
//     refusal any member sees (see Limiter for the rules); each member
//     sends at the fleet's rate over the number of members;
//   - the pause a refusal imposed, which every member keeps, a call that
//     waited in a member's bucket included: a fleet pays a 429 once, not
//     once per process. Each member resumes at its own instant within one
//     of its intervals between calls after the pause (at most 1 s later,
//     never past the Transport's MaxPause), so that the fleet resumes at
//     its rate, not with a call from every member at once.
//
// A member counts as one while it syncs: one that has not synced for 1.5
// of its intervals between calls (within [1s, 3s]) has left, and the
// others' parts of the fleet's rate grow.
//
// The store's key is "throttle:auto:" and the quota's key, in which a
// credential is a SHA-256 hash (the same in every process, so that they
// find each other), never the secret. Members' clocks should agree to a
// few milliseconds: instants are stored as Unix times.
func Fleet(store Store) Option {
	return func(c *autoConfig) error {
		if store == nil {
			return invalidOption("Fleet(nil): no store")
		}
		c.fleet = &autoFleet{store: store, prefix: "throttle:auto:", member: newMember()}
		return nil
	}
}

// autoFleet is the configuration of Fleet.
type autoFleet struct {
	store  Store
	prefix string
	member string
	errors atomic.Int64
}

func newMember() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fleetCount is what a lane under the fleet's congestion control saw since
// the last sync.
type fleetCount struct {
	ok      int64
	refused bool
}

// fleetState is the state a store keeps for one quota.
type fleetState struct {
	Limits []fleetLimit `json:"l,omitempty"`
	CC     *fleetCC     `json:"c,omitempty"`
	Pause  int64        `json:"p,omitempty"` // Unix ns: the end of the fleet's pause
}

// fleetLimit is a limit a server named.
type fleetLimit struct {
	Policy string        `json:"n"`
	Window time.Duration `json:"w"`
	Limit  int64         `json:"q"`
	Exact  bool          `json:"e,omitempty"`
	Tokens bool          `json:"t,omitempty"`
	Seen   int64         `json:"s,omitempty"`
	At     int64         `json:"a"` // Unix ns: when it was last reported
}

// fleetCC is the fleet's congestion control of its requests: the lane
// fields of the same names, instants in Unix ns (0 for none).
type fleetCC struct {
	Rate       float64 `json:"r"`
	W          float64 `json:"w,omitempty"`
	Slow       bool    `json:"s,omitempty"`
	EpochAt    int64   `json:"ea,omitempty"`
	EpochOK    int64   `json:"eo,omitempty"`
	OkSince    int64   `json:"os,omitempty"`
	CutAt      int64   `json:"ca,omitempty"`
	CutEver    bool    `json:"ce,omitempty"`
	ResumeAt   int64   `json:"ra,omitempty"`
	QuietUntil int64   `json:"qu,omitempty"`
	Refusals   int64   `json:"n,omitempty"`
}

// unix converts an instant of a's time line to Unix ns, 0 staying 0.
func (a *Limiter) unix(t int64) int64 {
	if t == 0 {
		return 0
	}
	return a.epoch.UnixNano() + t
}

// local converts Unix ns to a's time line, 0 staying 0.
func (a *Limiter) local(u int64) int64 {
	if u == 0 {
		return 0
	}
	return u - a.epoch.UnixNano()
}

// share syncs q with the fleet: at most every autoSyncEvery, and on every
// refusal. q.mu is held.
func (q *autoQuota) share(now int64, throttled bool) {
	a := q.a
	f := a.cfg.fleet
	if q.synced && !throttled && now-q.syncAt < int64(autoSyncEvery) {
		return
	}
	joining := !q.joined
	q.synced, q.syncAt = true, now
	ctx, cancel := context.WithTimeout(context.Background(), autoSyncTimeout)
	defer cancel()
	key := f.prefix + q.key.fleetString()
	for range 4 {
		data, ver, m, err := f.store.Load(ctx, key, f.member, q.memberTTL())
		if err != nil {
			f.errors.Add(1)
			return
		}
		var st fleetState
		if len(data) > 0 && json.Unmarshal(data, &st) != nil {
			st = fleetState{}
		}
		q.merge(&st, now, joining)
		out, err := json.Marshal(&st)
		if err != nil {
			return
		}
		stored := bytes.Equal(out, data)
		if !stored {
			// Only a change is written: most syncs are one round trip.
			if stored, err = f.store.Store(ctx, key, ver, out, max(autoFleetTTL, q.a.cfg.idle)); err != nil {
				f.errors.Add(1)
				return
			}
		}
		if stored {
			q.joined = true
			q.adopt(&st, max(m, 1), now)
			return
		}
	}
}

// merge puts what q learned into st; joining says that this process has
// not synced q before. q.mu is held.
func (q *autoQuota) merge(st *fleetState, now int64, joining bool) {
	a := q.a
	for _, ln := range q.lanes {
		if !ln.learned {
			continue
		}
		i := slices.IndexFunc(st.Limits, func(l fleetLimit) bool {
			return l.Policy == ln.policy && l.Window == ln.window && l.Tokens == ln.tokens
		})
		if i < 0 {
			st.Limits = append(st.Limits, fleetLimit{Policy: ln.policy, Window: ln.window, Tokens: ln.tokens})
			i = len(st.Limits) - 1
		}
		l := &st.Limits[i]
		// The instant moves by whole seconds, so that a sync that learned
		// nothing new writes nothing.
		if at := a.epoch.UnixNano() + ln.heardAt; l.Limit == 0 || at > l.At && (l.Limit != ln.limit || l.Exact != ln.exact || at-l.At >= int64(time.Second)) {
			l.Limit, l.Exact, l.At = ln.limit, ln.exact, at
		}
		l.Seen = max(l.Seen, ln.seen)
	}
	if len(st.Limits) > autoMaxLimits {
		// The limits reported last are kept.
		slices.SortStableFunc(st.Limits, func(x, y fleetLimit) int { return int(min(max(y.At-x.At, -1), 1)) })
		st.Limits = st.Limits[:autoMaxLimits]
	}
	var pause int64
	for _, ln := range q.lanes {
		if u := ln.b.Status().Paused; !u.IsZero() {
			p := u.UnixNano()
			if p == q.adoptedUntil {
				// The fleet's pause with this member's spread (see
				// adopt): not news, and the spread is this member's
				// alone.
				p = q.pauseSeen
			}
			pause = max(pause, p)
		}
	}
	st.Pause = max(st.Pause, pause)
	ln := q.ccLane()
	if ln != nil && joining && st.CC != nil && st.CC.Slow {
		// A member that joins in slow start brings the initial rate it
		// would have started at alone: N members start at N times it, as
		// N independent clients would, and are cut once together.
		st.CC.Rate += a.cfg.initial
		if a.cfg.max > 0 {
			st.CC.Rate = min(st.CC.Rate, a.cfg.max)
		}
	}
	if ln == nil || (ln.fleet.ok == 0 && !ln.fleet.refused && st.CC != nil) {
		return
	}
	tl := &lane{learned: ln.learned, ceil: ln.ceil, tokens: ln.tokens, pooled: true}
	if c := st.CC; c != nil {
		tl.rate, tl.wmax, tl.slow = c.Rate, c.W, c.Slow
		tl.epochAt, tl.epochOK, tl.okSince = a.local(c.EpochAt), c.EpochOK, c.OkSince
		tl.cutAt, tl.cutEver, tl.resumeAt = a.local(c.CutAt), c.CutEver, a.local(c.ResumeAt)
		tl.quietUntil, tl.refusals = a.local(c.QuietUntil), c.Refusals
	} else {
		tl.rate, tl.slow = a.cfg.initial, true
	}
	if ln.fleet.ok > 0 {
		tl.congestion(a, true, false, ln.fleet.ok, now)
	}
	if ln.fleet.refused {
		tl.refused429(a, now)
		if pause > 0 {
			tl.resumeAt = max(tl.resumeAt, a.local(pause))
			tl.quietUntil = tl.resumeAt + tl.epoch()
		}
	}
	st.CC = &fleetCC{
		Rate: tl.rate, W: tl.wmax, Slow: tl.slow,
		EpochAt: a.unix(tl.epochAt), EpochOK: tl.epochOK, OkSince: tl.okSince,
		CutAt: a.unix(tl.cutAt), CutEver: tl.cutEver, ResumeAt: a.unix(tl.resumeAt),
		QuietUntil: a.unix(tl.quietUntil), Refusals: tl.refusals,
	}
}

// ccLane returns the lane of q under the fleet's congestion control: the
// requests lane while the server reports no remaining count for it.
func (q *autoQuota) ccLane() *lane {
	for _, ln := range q.lanes {
		if ln.fleet != nil && !ln.counts {
			return ln
		}
	}
	return nil
}

// adopt makes q what the fleet learned, st as stored, with m members.
// q.mu is held.
func (q *autoQuota) adopt(st *fleetState, m int, now int64) {
	a := q.a
	q.members = m
	changed := false
	for _, l := range st.Limits {
		if l.Limit <= 0 || l.Window <= 0 {
			continue
		}
		ln := q.policy(l.Policy, l.Window, l.Tokens)
		if ln == nil {
			var made bool
			ln, made = q.limitLane(l.Policy, l.Tokens, l.At-a.epoch.UnixNano())
			if ln == nil {
				continue // not among a Quota's limits
			}
			changed = changed || made
			ln.teach(l.Limit, l.Window, l.Exact)
		}
		ln.seen = max(ln.seen, l.Seen)
	}
	if changed {
		q.rebuild()
	}
	for _, ln := range q.lanes {
		ln.fleetN = m
	}
	if ln := q.ccLane(); ln != nil {
		ln.fleet.ok, ln.fleet.refused = 0, false
		if c := st.CC; c != nil {
			ln.rate = ln.bound(a, c.Rate/float64(m))
			ln.slow = c.Slow
		}
	}
	for _, ln := range q.lanes {
		ln.apply(a)
	}
	if st.Pause > 0 {
		wall := a.wall()
		if until := time.Unix(0, st.Pause); until.After(wall) {
			if st.Pause != q.pauseSeen {
				q.pauseSeen = st.Pause
				q.pauseSpread = time.Duration(a.jitter(0, 1) * float64(q.interval()))
			}
			// Each member resumes at its own instant within one of its
			// intervals after the fleet's pause: together they resume at
			// the fleet's rate. Were they to resume together, every member
			// would send the call its bucket holds at once, N calls into a
			// server that refilled only what the pause let it, and the
			// refusals would start the next pause. Never past the
			// Transport's MaxPause from now: none before a response has
			// told it.
			mp := time.Duration(q.maxPause.Load())
			spread := min(q.pauseSpread, wall.Add(mp).Sub(until))
			end := until.Add(max(spread, 0))
			q.lim.PauseUntil(end)
			q.adoptedUntil = end.UnixNano()
		}
	}
}

// beforeSend syncs q with the fleet, if any, when a call has its permit
// and is about to be sent, and reports whether q is then paused (by a
// refusal another member saw while the call waited in q's bucket, which
// at a member's share of the rate can be a second or more). Without it,
// every member would send the call it was holding into the server's
// empty bucket: one 429 per member for each congestion. q may be nil.
func (q *autoQuota) beforeSend() bool {
	if q == nil || q.a.cfg.fleet == nil {
		return false
	}
	q.mu.Lock()
	q.share(q.a.now(), false)
	lim := q.lim
	q.mu.Unlock()
	return !latestPause(lim.Limiter).IsZero()
}

// memberTTL is how long a member that has not synced still counts: one
// and a half of its intervals between calls (a member with calls to make
// syncs at least before each call and after each response), within
// [autoMemberLeast, autoMemberTTL]. A member that is done then stops
// counting soon, and the others' parts of the fleet's rate grow: with a
// fixed 3 s, the last members of a fleet sent at a fraction of the rate
// for 3 s. q.mu is held.
func (q *autoQuota) memberTTL() time.Duration {
	var d time.Duration
	for _, ln := range q.lanes {
		if !ln.tokens && ln.rate > 0 {
			d = max(d, time.Duration(1.5*float64(time.Second)/ln.rate))
		}
	}
	return min(max(d, autoMemberLeast), autoMemberTTL)
}

// autoMaxSpread is the most a member resumes after the fleet's pause
// ends (see adopt).
const autoMaxSpread = time.Second

// interval is the time between two calls of q at its request rates: the
// longest of its lanes that count requests, at most autoMaxSpread. q.mu is
// held.
func (q *autoQuota) interval() time.Duration {
	var d time.Duration
	for _, ln := range q.lanes {
		if !ln.tokens && ln.rate > 0 {
			d = max(d, time.Duration(float64(time.Second)/ln.rate))
		}
	}
	return min(d, autoMaxSpread)
}

// FleetErrors returns how many calls of the Fleet store failed; 0
// without Fleet.
func (a *Limiter) FleetErrors() int64 {
	if a.cfg.fleet == nil {
		return 0
	}
	return a.cfg.fleet.errors.Load()
}
