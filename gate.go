package throttle

import (
	"context"
	"time"
)

// Gate is what every limiter of this module is to the code that calls
// through it: the HTTP Transport and Handler, the gRPC interceptors,
// and a worker pool of your own. A Limiter, a key's Limiter of a Keyed,
// htb's Limiter over classes of one or several hierarchies, trtcm's Marker
// and redisbucket's Limiter shared by many processes are Gates; a single
// Bucket becomes one through NewLimiter, a single htb.Class through
// htb.NewLimiter.
//
// A Gate holds one or more limits, described by Limits, and every call
// gives one cost per limit, in that order: a request and its tokens, say.
// A zero cost leaves that limit out; at least one must be positive.
type Gate interface {
	// Acquire waits its turn (first come, first served) until every limit
	// covers its cost, takes them all, and returns the Permit for them. A
	// context whose deadline comes before the turn fails at once with a
	// *WaitError (which matches context.DeadlineExceeded), and a call
	// cancelled while it waits takes nothing.
	Acquire(ctx context.Context, costs ...int64) (Permit, error)
	// TryAcquirePermit takes the costs only if every limit covers them now
	// and nobody waits ahead, and returns the Permit for them; otherwise it
	// takes nothing and returns ok false. It never waits.
	TryAcquirePermit(costs ...int64) (p Permit, ok bool, err error)
	// WaitTime reports how long until the costs would be covered, after
	// the calls already waiting: what a refusal's Retry-After says.
	WaitTime(costs ...int64) (time.Duration, error)
	// Limits describes the limits in cost order: their names are how cost
	// functions and server feedback find the limit a cost or a remaining
	// count is for.
	Limits() []Limit
}

// Permit is the record of costs a Gate took, for calls whose real cost is
// known only afterwards: an LLM call reserves its prompt and max_tokens and
// learns its usage from the response. Settle or Cancel it once.
type Permit interface {
	// Costs returns the costs taken, one per limit.
	Costs() []int64
	// Settle corrects the costs to the actual use, one value per limit:
	// what was over-reserved goes back, an overrun is charged. An overrun
	// that would leave a limit more than its capacity in debt is cut there
	// and reported with an error matching ErrCostExceedsCapacity; the
	// Permit is settled all the same. A second Settle or Cancel fails with
	// ErrSettled.
	Settle(actual ...int64) error
	// Cancel gives every cost back: the call was never made.
	Cancel() error
}

// Pauser is a Gate that a server's "wait" can pause for every caller at
// once, as a 429 with Retry-After asks. The HTTP Transport finds it by a
// type assertion; a Gate without it is paced by its own rate alone.
type Pauser interface {
	// PauseUntil holds every call until t; a later pause extends an
	// earlier one, an earlier one changes nothing. levels, if given, are
	// what a server that refused a call says is left of each limit (in
	// Limits order; a negative value says nothing of its limit) for when
	// the pause ends: the Gate sets them as its own rules allow (an
	// in-process Limiter sets them, a level shared by a fleet is only
	// lowered).
	PauseUntil(t time.Time, levels ...int64)
}

// Leveler is a Gate whose level a server's count of what is left can
// lower, so that a client sharing its quota with others spends no more
// than the server says remains.
type Leveler interface {
	// Lower brings limit i (in Limits order) down to at most remaining
	// tokens; it never raises a level. A negative remaining is a debt,
	// at most one capacity deep.
	Lower(i int, remaining int64)
}

// Tuner is a Gate whose limits a server's size of its quota can lower,
// so that clients configured for more than the server allows (or sharing
// a quota the server has since cut) go on at what it allows.
type Tuner interface {
	// Tune tells the Gate that the server allows limit tokens every
	// window on limit i (in Limits order).
	Tune(i int, limit int64, window time.Duration)
}

// Meter is a Gate that reports the state of each of its limits now: what
// a server answers its clients with (the IETF RateLimit fields of
// Handler, the trailing metadata of the gRPC interceptors).
type Meter interface {
	// Status appends the state of every limit, in Limits order, to dst
	// and returns the extended slice.
	Status(dst []LimitStatus) []LimitStatus
}

// Admitter is a Meter that decides a call and reports every limit's state
// in one step, as a server's middleware answers a request with its
// rate-limit fields: a Keyed's Gate of a key does, with one lookup of the
// key instead of three.
type Admitter interface {
	// Admit takes costs (nil: one on every limit) if every limit covers
	// them now and nobody waits ahead, as a Taker's TryAcquire does, and
	// appends the state of every limit just after the decision to dst.
	// For a refusal, wait is how long until the costs would be covered,
	// as WaitTime says, or -1 if never.
	Admit(dst []LimitStatus, costs []int64) (ok bool, wait time.Duration, status []LimitStatus, err error)
}

// Taker is a Gate that can take costs without recording a Permit: a caller
// that keeps no Permit allocates nothing when the costs are there at once,
// and settles what it took itself, with the costs it keeps. That
// allocation is the one reason Take, TryAcquire and Settle exist beside
// Acquire, TryAcquirePermit and the Permit. The gRPC interceptors and the
// HTTP Transport use it.
type Taker interface {
	// Take is Acquire without the Permit: it waits its turn, under the
	// same rules, takes the costs, and reports how long the call waited
	// in the queue (0 for a call served at once), so that a caller that
	// keeps the total reads no clock of its own.
	Take(ctx context.Context, costs ...int64) (waited time.Duration, err error)
	// TryAcquire is TryAcquirePermit without the Permit.
	TryAcquire(costs ...int64) (bool, error)
	// Settle corrects costs that Take or TryAcquire took to the actual
	// use, as Permit.Settle does: taken beyond actual goes back, never
	// above a limit's capacity (all of it, actual all zero, for a call
	// never made); actual beyond taken is charged at once, at most one
	// capacity into debt. With taken all zero it charges a call made
	// without waiting its turn.
	Settle(taken, actual []int64) error
}
