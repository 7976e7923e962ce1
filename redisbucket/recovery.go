package redisbucket

import (
	"strconv"
	"sync"
	"time"
)

// seen is what one process knows of its limiter that Redis may lose: the
// levels it last saw (for a key that vanished in a restart, a failover to
// a replica that had not caught up, or an eviction, which the script
// rebuilds no fuller than that view, refilled since) and the tokens its
// failure policy granted while Redis was away (charged to Redis by the
// first call that reaches it again, so that a fleet coming back from its
// local shares does not spend the quota twice).
type seen struct {
	mu     sync.Mutex
	ok     bool
	now    int64   // the server time of the view, µs
	toks   []int64 // whole tokens per limit in the view
	rems   []int64 // and the fraction, in 1/den units (0 from a fast-path reply)
	frac   bool    // rems holds the view's fraction (not a fast-path reply)
	full   bool    // the view refills to full at fullAt
	fullAt time.Time
	owed   []int64 // granted without Redis since the last call that reached it
	owing  bool
	// refund is what settlements gave back that no call has carried to
	// Redis yet (Limiter.Settle); sending, what calls in flight carry. A
	// give-back goes with one call only: applied twice it would mint
	// tokens.
	refund, sending []int64
	refunding       bool
	at              time.Time // local time the view's call was sent
	// away is set while this process has been in failure mode since its
	// last reply (fellBack); margin is the call timeout, the most a
	// reply's server time can trail its call's sending.
	away   bool
	margin time.Duration
	// grants is what the failure policy granted since this process fell
	// back, by when: a return carries it (awayGrants).
	grants awayGrants
	// lostLocal is the first sign since the last reply that Redis was
	// gone (a failed call, a broken pause feed), on this process's clock;
	// zero for none. shapes are the limiter's limits (set once).
	lostLocal time.Time
	shapes    []shape
	// spends: this process's failure policy grants without Redis
	// (FailLocal, FailOpen), and so, presumably, do the fleet's others;
	// open: its breaker opened since it fell back (not merely suspect,
	// which grants nothing), so the policy has been granting.
	spends, open bool
	// ticks counts gets and sets; held is the count when the view was set.
	// A call sent (got) before the view arrived was in flight with the one
	// that brought it: if its server time is older, so are its levels.
	ticks, held uint64
}

// carried is what one call brought to Redis besides its decision: the
// failure policy's grants it charges and the settlements' give-backs it
// returns, per limit.
type carried struct {
	owed, refund []int64
	// back: the call is a return's (awayGrants), which the script reads
	// with the limiter's back key.
	back bool
}

// get returns the view to send (none once it has refilled to full on this
// client's clock, with a margin: it would say what a missing key says
// anyway, and leaving it out keeps the fast path's arguments short), the
// charge to send (owed less refunds, per limit: negative gives back), what
// the charge stands for, and the tick to give set with the call's reply.
func (s *seen) get(local time.Time) (hint []byte, charge string, c carried, sent uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks++
	sent = s.ticks
	hint = s.hintLocked(local)
	// A return: the key it finds lost, or unwritten since this process
	// fell back with grants to charge, is taken as the fleet's return. A
	// process whose pause feed broke returns too, though its calls all
	// slept through: its view may hold the lost queue longer than the
	// first one back had it.
	c.back = (s.away || !s.lostLocal.IsZero()) && s.grants.fellAt > 0
	if !s.owing && !s.refunding && !c.back {
		return hint, "", carried{}, sent
	}
	n := max(len(s.owed), len(s.refund), len(s.toks))
	if s.owing {
		c.owed = append([]int64(nil), s.owed...)
	}
	if s.refunding {
		c.refund = append([]int64(nil), s.refund...)
		for i, r := range s.refund {
			s.sending[i] += r
			s.refund[i] = 0
		}
		s.refunding = false
	}
	buf := make([]byte, 0, 8*n)
	if c.back {
		buf = append(s.grants.appendArg(buf, n, s.spends && s.open), ' ')
	}
	for i := range n {
		if i > 0 {
			buf = append(buf, ' ')
		}
		var v int64
		if i < len(c.owed) {
			v = c.owed[i]
		}
		if i < len(c.refund) {
			v -= c.refund[i]
		}
		buf = strconv.AppendInt(buf, v, 10)
	}
	return hint, string(buf), c, sent
}

// view is get for a call that carries no charge (the fast path's): the
// view to send and the call's tick, the charges and give-backs left for
// the next call that carries them.
func (s *seen) view(local time.Time) (hint []byte, sent uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks++
	return s.hintLocked(local), s.ticks
}

// hintLocked is the view get sends, with s.mu held.
func (s *seen) hintLocked(local time.Time) []byte {
	if s.ok && (s.away || !s.lostLocal.IsZero()) {
		// A broken pause feed is a loss too: a process whose calls
		// all sleep through a kill makes its first call after Redis
		// is back, never having fallen back.
		return s.emptyHint(local)
	}
	if !s.ok || (s.full && !local.Before(s.fullAt)) {
		return nil
	}
	// Bytes, not a string: go-redis writes either, and the conversion
	// would be a second allocation per call.
	hint := make([]byte, 0, 20+12*len(s.toks))
	hint = strconv.AppendInt(hint, s.now, 10)
	for _, t := range s.toks {
		hint = append(hint, ' ')
		hint = strconv.AppendInt(hint, t, 10)
	}
	return hint
}

// emptyHint is the view a process back from failure mode sends: every
// limit at most empty as of the server's time now, estimated from the last
// view (its server time plus the local time since its call was sent, less
// margin: the script ignores a view ahead of its clock, and refills one
// behind it only over the difference). While Redis was away every process
// of the fleet granted from its local share, what the key's level would
// have refilled to, and their charges reach Redis only as each returns: a
// key Redis lost meanwhile (a restart, a failover) rebuilt from an older
// view, refilled, would be spent twice. A limit the view left in debt, a
// queue of reservations whose sleepers go at their instants without Redis,
// is sent with the queue still ahead (queued).
func (s *seen) emptyHint(local time.Time) []byte {
	at := s.hintAtLocked(local)
	hint := strconv.AppendInt(make([]byte, 0, 20+8*len(s.toks)), at, 10)
	for i := range s.toks {
		hint = append(hint, ' ')
		hint = strconv.AppendInt(hint, s.queuedLocked(i, at), 10)
	}
	return hint
}

// hintAtLocked is the server time a return's hint is dated at local: the
// last view's, plus the local time since its call was sent, less margin
// (see emptyHint).
func (s *seen) hintAtLocked(local time.Time) int64 {
	return max(s.serverAtLocked(local, -s.margin), s.now)
}

// queuedLocked returns limit i's level at server time at (µs) if the queue
// of reservations the view holds there kept its depth until Redis was lost,
// in whole tokens rounded down, and 0 for a queue gone by then or a view
// not in debt. The view is as old as this process's last reply; the fleet's
// other processes reserved after it, each reservation behind the queue's
// end, until Redis went away: with the fleet's demand steady, the queue's
// end moved with the clock, as deep as this process last saw it. Taken
// from its last reply instead, a key Redis lost was rebuilt without the
// reservations made since, whose sleepers then went with the first grants
// of the rebuilt key (fleet harness at 32 processes: a vendor 429 at the
// first grant after a kill, and the fleet paused a second). A queue the
// fleet's demand was draining is counted longer than it ran: the fleet
// waits for nothing, at most as long as the view's queue, on the quota's
// side.
func (s *seen) queuedLocked(i int, at int64) int64 {
	if i >= len(s.shapes) || s.toks[i] >= 0 {
		return 0
	}
	l, tok, rem := s.shapes[i], s.toks[i], s.rems[i]
	if l.num == 0 {
		return tok
	}
	lost := s.now
	if !s.lostLocal.IsZero() {
		lost = max(lost, s.serverAtLocked(s.lostLocal, 0))
	}
	// Units begun between the loss and at, on the script's grid (its
	// refill): the same count the script would refill a view stored at
	// the loss, no more.
	units := max(at/l.unit-lost/l.unit, 0)
	need := -(tok*l.den + rem)
	if need <= 0 || units >= (need+l.num-1)/l.num {
		return 0
	}
	total := tok*l.den + rem + l.num*units // below 0, above -2^52
	q := total / l.den
	if total%l.den != 0 {
		q-- // down: a token's fraction of debt is a token of debt
	}
	return q
}

// shareStart returns every limit's level a FailLocal share starts from at
// local (engine.opened): the view's own, not refilled since (the fleet's
// others may have spent or reserved the refill), with the give-backs no
// call has carried yet; for a limit in debt, the queue as held until the
// loss and drained since, as a return's hint counts it at local. ok is
// false without a view. One snapshot of the view: a reply arriving
// meanwhile cannot mix into it.
func (s *seen) shareStart(local time.Time) (lv []float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lv, ok = s.levelsLocked(s.at, anyAge, 0); !ok {
		return nil, false
	}
	at := s.hintAtLocked(local)
	for i := range lv {
		if lv[i] < 0 {
			lv[i] = float64(s.queuedLocked(i, at))
		}
	}
	return lv, true
}

// fellBack records that the failure policy took this process's decisions
// from local on: until a reply arrives, a key Redis lost is rebuilt empty
// (emptyHint), and the grants made are recorded by when (awayGrants).
func (s *seen) fellBack(local time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.away {
		return
	}
	s.away = true
	s.goneLocked(local)
	var at int64
	if s.ok {
		// Late, if anything: the server decided the view's call after it
		// was sent, and a later estimate charges more.
		at = max(s.serverAtLocked(local, 0), s.now)
	}
	s.grants.start(local, at)
}

// opened records that the breaker opened while this process was away:
// the failure policy decides, and every process's share has been
// granting.
func (s *seen) opened() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = s.away
}

// gone records a sign at local that Redis is gone (the pause feed broke):
// the earliest since the last reply dates the loss for queuedLocked.
func (s *seen) gone(local time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.goneLocked(local)
}

func (s *seen) goneLocked(local time.Time) {
	if s.lostLocal.IsZero() || local.Before(s.lostLocal) {
		s.lostLocal = local
	}
	if !s.away && s.ok && s.grants.fellAt == 0 {
		// No grants to record (the policy decides only once away),
		// but the return's head needs the instant.
		s.grants.start(local, max(s.serverAtLocked(local, 0), s.now))
	}
}

// set records a reply's levels (tok, rem per limit) at server time now,
// seen at local, and that the charge sent with it (paid) was applied; sent
// is the tick get gave the call. Calls in flight at once may be decided
// and answered in either order: a reply older on the server's clock than
// the view, from a call sent before that view arrived, leaves the view
// as it is (a server clock that went back still moves it, on the next
// call sent after).
func (s *seen) set(limits []shape, local time.Time, now int64, levels []int64, frac bool, paid carried, sent uint64) {
	// How long until every limit is full again, in µs; a limit that never
	// refills keeps the view forever.
	var until int64
	full := true
	for i, l := range limits {
		tok, rem := levels[2*i], levels[2*i+1]
		if tok >= l.capacity {
			continue
		}
		if l.num == 0 {
			full = false
			break
		}
		// Below 2^52 (shape.go).
		need := (l.capacity-tok)*l.den - rem
		until = max(until, (need+l.num-1)/l.num*l.unit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if paid.owed != nil {
		s.owing = false
		for i, c := range paid.owed {
			s.owed[i] -= c
			s.owing = s.owing || s.owed[i] > 0
		}
	}
	s.dropRefunds(paid.refund)
	if paid.back {
		// Recorded grants made since the call was sent are still owed,
		// charged in full by the next call.
		s.grants.fellAt = 0
	}
	s.away, s.open = false, false
	s.lostLocal = time.Time{}
	if s.ok && now < s.now && sent < s.held {
		return
	}
	s.ticks++
	s.held = s.ticks
	s.ok, s.now, s.full, s.at, s.frac = true, now, full, local, frac
	if full {
		// A margin for a client clock that runs fast: a tenth, and 1 ms.
		d := time.Duration(min(until, 1<<40)) * time.Microsecond
		s.fullAt = local.Add(d + d/10 + time.Millisecond)
	}
	if cap(s.toks) < len(limits) {
		s.toks = make([]int64, len(limits))
	}
	s.toks = s.toks[:len(limits)]
	if cap(s.rems) < len(limits) {
		s.rems = make([]int64, len(limits))
	}
	s.rems = s.rems[:len(limits)]
	for i := range limits {
		s.toks[i], s.rems[i] = levels[2*i], levels[2*i+1]
	}
}

// sentSince reports whether another call was sent, or answered, after
// the call that get gave the tick sent.
func (s *seen) sentSince(sent uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ticks != sent
}

// spent records tokens the failure policy granted at local (or, negative,
// took back at a local settlement).
func (s *seen) spent(local time.Time, costs []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.away {
		s.grants.add(local, costs)
	}
	if s.owed == nil {
		s.owed = make([]int64, len(costs))
	}
	s.owing = false
	for i, c := range costs {
		s.owed[i] = max(s.owed[i]+c, 0)
		s.owing = s.owing || s.owed[i] > 0
	}
}

// dropRefunds takes what a call carried off the give-backs in flight:
// applied when it answered, and given up when it failed, since a call that
// timed out may have been applied, and a give-back applied twice would
// mint tokens (a lost one leaves them spent, on the quota's side).
func (s *seen) dropRefunds(r []int64) {
	for i, c := range r {
		s.sending[i] -= c
	}
}

// lost records that a call that carried c failed: its refunds are given
// up (dropRefunds); what it charged stays owed, charged again by the next.
func (s *seen) lost(c carried) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropRefunds(c.refund)
}

// pending adds to g the give-backs no call has taken yet, and says
// whether there were any.
func (s *seen) pending(g []int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.refunding {
		return false
	}
	for i, r := range s.refund {
		g[i] += r
	}
	return true
}

// giveBack adds tokens for the next call to return.
func (s *seen) giveBack(tokens []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refund == nil {
		s.refund, s.sending = make([]int64, len(tokens)), make([]int64, len(tokens))
	}
	for i, c := range tokens {
		if c > 0 {
			s.refund[i] += c
			s.refunding = true
		}
	}
}

// most returns the most limit i can hold at local time now by the last
// view, rounded up to a whole token: its level then, refilled since at the
// configured rate from the instant its call was sent, at most the
// capacity; ok is false without a view. A view without the fraction (a
// fast-path reply) counts one more token for it. Other processes'
// give-backs since are not in it. A report at or above it lowers nothing;
// one below it, even by the fraction alone, drops what the server has not
// refilled yet.
func (s *seen) most(l shape, i int, now time.Time) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok || i >= len(s.toks) {
		return 0, false
	}
	tok, rem := s.toks[i], s.rems[i]
	if tok >= l.capacity || l.num == 0 {
		return min(tok, l.capacity), true
	}
	if !s.frac {
		tok, rem = tok+1, 0
	}
	// Units begun since the call was sent, rounded up; below 2^52 as
	// every product of the shape is (shape.go) once capped at the units
	// that fill the limit.
	el := max(now.Sub(s.at).Microseconds(), 0)
	units := (el + l.unit - 1) / l.unit
	need := (l.capacity-tok)*l.den - rem
	if need <= 0 || units >= (need+l.num-1)/l.num {
		return l.capacity, true
	}
	total := tok*l.den + rem + l.num*units
	q := total / l.den // rounds toward zero: up for a view in debt
	if total > 0 && total%l.den != 0 {
		q++
	}
	return min(q, l.capacity), true
}

// levels returns every limit's level by the view, refilled from the
// instant its call was sent to now at the configured rate, with the
// give-backs no call has carried yet, at most the capacity: no lower than
// Redis held then (the call was decided after it was sent) but for the
// fraction a view without it leaves out (a fast-path reply), and no higher
// than Redis holds now but for what other processes gave back or a
// server's quota changed since. ok is false without a view, or one older
// than fresh.
func (s *seen) levels(now time.Time, fresh time.Duration) (lv []float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.levelsLocked(now, fresh, 0)
}

// bound is levels at any age, counting a token more for the fraction a
// view without it leaves out, as most does: at least what Redis holds now
// but for what other processes gave back since.
func (s *seen) bound(now time.Time) (lv []float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	frac := 0.0
	if !s.frac {
		frac = 1
	}
	return s.levelsLocked(now, anyAge, frac)
}

// levelsLocked is levels with s.mu held, frac added to every level's
// fraction.
func (s *seen) levelsLocked(now time.Time, fresh time.Duration, frac float64) (lv []float64, ok bool) {
	el := now.Sub(s.at)
	if !s.ok || len(s.toks) != len(s.shapes) || el > fresh {
		return nil, false
	}
	el = max(el, 0)
	lv = make([]float64, len(s.shapes))
	for i, l := range s.shapes {
		v := float64(s.toks[i]) + float64(s.rems[i])/float64(l.den) + frac
		if l.num > 0 {
			v += float64(el.Microseconds()) * float64(l.num) / (float64(l.den) * float64(l.unit))
		}
		if i < len(s.refund) {
			// Given back, to be carried by the next call or carried by
			// one in flight.
			v += float64(s.refund[i] + s.sending[i])
		}
		lv[i] = min(v, float64(l.capacity))
	}
	return lv, true
}

// local converts us, an instant on the server's clock in µs, to the
// Limiter's clock by the last view, which pairs the server time of a reply
// with the local instant its call was sent (from which levels refills the
// view too): as far after that instant as us is after the reply's time.
// The server decided after the call was sent, so the instant is early by
// at most the call's round trip. ok is false without a view.
func (s *seen) local(us int64) (t time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok {
		return time.Time{}, false
	}
	return s.at.Add(time.Duration(us-s.now) * time.Microsecond), true
}

// serverAt returns the server's time d after local by the last view, in
// µs: late, if anything, by the call's round trip (as local is early);
// ok is false without a view.
func (s *seen) serverAt(local time.Time, d time.Duration) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok {
		return 0, false
	}
	return s.serverAtLocked(local, d), true
}

// serverAtLocked is serverAt with s.mu held and a view.
func (s *seen) serverAtLocked(local time.Time, d time.Duration) int64 {
	return s.now + (local.Sub(s.at) + d).Microseconds()
}

// pairs returns the levels of the last view as a reply carries them (tok,
// rem per limit), nil without a view.
func (s *seen) pairs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok {
		return nil
	}
	lv := make([]int64, 0, 2*len(s.toks))
	for i, t := range s.toks {
		lv = append(lv, t, s.rems[i])
	}
	return lv
}
