package throttle

import (
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// pauseCause is what a bucket knows of why it is paused: the cause of the
// pause in force, and one told ahead of the pause it is for (see
// Limiter.Observe), kept until that pause begins.
type pauseCause struct {
	now     string // the cause of the pause in force
	next    string // the cause of the pause that will end at nextFor
	nextFor int64
}

// begin makes the cause told for a pause ending at until, if any, the one
// in force, and returns it.
func (c *pauseCause) begin(until int64) string {
	c.now = ""
	if c.next != "" && c.nextFor == until {
		c.now = c.next
	}
	c.next, c.nextFor = "", 0
	return c.now
}

// tell records cause for b's pause ending at until: at once when that
// pause is in force, else for when it begins. It reports whether the
// pause was in force already.
func (b *Bucket) tell(until time.Time, cause string) (inForce bool) {
	g := b.lock()
	defer g.Mu.Unlock()
	at := g.Instant(until)
	if b.paused == at && at > g.Now() {
		b.cause.now = cause
		return true
	}
	b.cause.next, b.cause.nextFor = cause, at
	return false
}

// Explain explains the wait a call with costs would have now, as Acquire
// would queue it: the wait WaitTime reports, the limit that binds it, the
// calls queued ahead and the pause, with its cause, that holds it. A zero
// Wait says the costs would be taken at once. It only reads: no waiter is
// served and no level moved. It fails as WaitTime does, for costs that
// are not valid or never covered.
func (l *Limiter) Explain(costs ...int64) (WaitError, error) {
	if len(l.bs) == 0 {
		return WaitError{}, errNoLimits(len(costs))
	}
	g := l.bs[0].lock()
	defer g.Mu.Unlock()
	if err := check(l.bs, costs); err != nil {
		return WaitError{}, err
	}
	now := g.Now()
	var t int64
	if g.Head == nil {
		t = readyAt(l.bs, costs, now, g.floor, false)
	} else {
		t = g.project(l.bs, costs, now)
	}
	if t == exact.Never {
		if err := noRefill(l.bs, costs); err != nil {
			return WaitError{}, err
		}
	}
	return g.explain(l.bs, costs, now, t, g.Len, g.Head != nil), nil
}

// explain is the explanation of a wait for costs on bs that ends at t,
// with g locked at now and ahead calls queued before it. tail says that t
// was projected behind the queue, from the tail levels.
func (g *group) explain(bs []*Bucket, costs []int64, now, t int64, ahead int, tail bool) WaitError {
	e := WaitError{Wait: time.Duration(t - now), Ahead: ahead}
	if t <= now {
		e.Wait = 0
	}
	var bind *Bucket
	latest := int64(-1 << 63)
	for i, b := range bs {
		if costs[i] == 0 {
			continue
		}
		l := b.level(tail)
		if at := max(b.paused, b.ReadyAt(l, costs[i])); at > latest || bind == nil {
			bind, latest = b, at
		}
	}
	if bind == nil {
		return e
	}
	e.Limit = bind.name
	if bind.paused > now { // paused, it does not refill: all the pause is in the wait
		e.Paused = g.Epoch.Add(time.Duration(bind.paused))
		e.Cause = bind.cause.now
	}
	return e
}

// explainWait is explain for a call that waits, made only for observers
// or an error: nil when the call is served at once.
func (g *group) explainWait(bs []*Bucket, costs []int64, now, t int64, ahead int, tail bool) *WaitError {
	if t <= now {
		return nil
	}
	e := g.explain(bs, costs, now, t, ahead, tail)
	return &e
}
