package redisbucket

import (
	"errors"

	"github.com/throttlekit/throttle"
)

// ErrStateReset is reported to the observer (Event.Err) with a decision
// for which the script found the stored state garbage (not integers, out
// of the exact range, a time more than a minute ahead of the server's
// clock, a key of another type such as a hash) and restarted the limits at the empty level, rather than read it
// as a full bucket or a wait of centuries. Stats counts these resets.
var ErrStateReset = errors.New("redisbucket: stored state out of range; limits reset to empty")

// Mode says who took a decision.
type Mode uint8

// The modes of a decision.
const (
	ModeRedis      Mode = iota // the script in Redis
	ModeLease                  // tokens leased earlier from Redis, without a call
	ModeFailClosed             // the failure policy FailClosed
	ModeFailOpen               // the failure policy FailOpen
	ModeFailLocal              // the failure policy FailLocal's local bucket
)

func (m Mode) String() string {
	switch m {
	case ModeRedis:
		return "redis"
	case ModeLease:
		return "lease"
	case ModeFailClosed:
		return "fail-closed"
	case ModeFailOpen:
		return "fail-open"
	case ModeFailLocal:
		return "fail-local"
	}
	return "unknown"
}

// Failure reports whether the failure policy took the decision.
func (m Mode) Failure() bool { return m >= ModeFailClosed }

// Event is one decision: the core event (granted, rejected, cancelled,
// settled, with the limit name, cost and wait) and who took it.
//
// Its Why explains the wait as the core's does, made only when the
// Limiter has an observer. An EventRejected by the limit carries the
// WaitError the call returned, or, for a refused TryAcquire, the
// explanation of the wait the script replied (nil for a cost no limit
// will cover, and for a refusal by FailClosed, whose Err explains it). An
// EventGranted or EventCancelled of a call that waited carries the
// explanation of its first refusal: the binding limit, its wait, the
// pause in force with its cause, and this process's calls ahead; a call
// that queued behind this process's calls and was served without a
// refusal of its own (or refused while they were queued, or cancelled
// before its first decision) has the limit the levels last heard leave
// longest to refill, and as its wait the time it waited plus what remains
// of the pause in force, a lower bound. Ahead counts this process's calls
// only (see Limiter.Acquire). Why is nil for calls served at once.
type Event struct {
	throttle.Event
	Mode Mode
	// Err is, for a decision in failure mode, the error that opened the
	// breaker, which matches ErrUnavailable, names the server and wraps
	// the cause (a timeout, a refused connection, LOADING); for a decision by Redis, ErrStateReset when the script found
	// the stored state out of range and restarted the limits empty.
	Err error
}

// Observer receives a limiter's decisions. It is called from the goroutine
// that made the decision, outside any lock, and must not block.
type Observer interface {
	Observe(Event)
}

// CoreObserver adapts a throttle.Observer (the slog and OpenTelemetry
// adapters of the core package, say) by passing it the core event. The
// core event has no place for Mode and Err: a log or a metric that must
// tell decisions taken without Redis apart needs an Observer of this
// package, which may pass the core event on as well.
func CoreObserver(o throttle.Observer) Observer { return coreObserver{o} }

type coreObserver struct{ o throttle.Observer }

func (c coreObserver) Observe(e Event) { c.o.Observe(e.Event) }
