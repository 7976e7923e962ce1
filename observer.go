package throttle

import (
	"time"

	"github.com/throttlekit/throttle/internal/option"
)

// EventKind says what happened to a request.
type EventKind uint8

// The kinds of Event.
const (
	EventGranted EventKind = iota + 1 // tokens were taken
	// EventRejected: the call was turned away without waiting. With no
	// Reason, the limit did it: TryAcquire refused, or Acquire failed fast
	// on its deadline. With a Reason, a server refused the account itself
	// (a spent credit, a spend cap; see httpthrottle's Transport), which no
	// wait cures: the request came back after one attempt and nothing was
	// paused.
	EventRejected
	EventCancelled // a waiter's context ended before its grant
	EventPaused    // PauseUntil stopped grants
	EventSettled   // a Permit was settled or cancelled
	EventTuned     // Auto changed a limit's rate or capacity
	// EventThreshold: a spend reached a fraction of a budget's limit (see
	// package budget): Threshold is the fraction, Cost the spend, Estimate
	// the limit and Until the end of the window. It is told once a window
	// for each fraction, by the call that crossed it.
	EventThreshold
)

// Event describes one decision of a bucket.
//
// Wait is, for EventGranted, the time from the call to the grant (timer
// lateness included); for EventRejected, the wait that would have been
// needed: for a refused TryAcquire, what WaitTime would have said at that
// moment (behind the waiters queued, past any pause), zero only when the
// costs will never pass; for EventCancelled, the time spent queued. For an acquisition over several limits, every limit
// reports the wait of the whole acquisition.
type Event struct {
	Kind     EventKind
	Limit    string        // the bucket's name
	Cost     int64         // tokens asked for, or for EventSettled the actual cost
	Estimate int64         // for EventSettled, the cost the permit had taken
	Wait     time.Duration // see above
	Until    time.Time     // for EventPaused, the end of the pause
	// Rate is, for EventTuned, the limit's new rate; Cost is then its new
	// capacity.
	Rate Rate
	// Reason is, for EventRejected by a server, its code for the refusal, such
	// as "insufficient_quota" or "enforced_spend_limit_reached"; for
	// EventPaused, what asked for the pause, when known (WaitError.Cause).
	Reason string
	// Threshold is, for EventThreshold, the fraction of the limit
	// reached (0.8 for 80%).
	Threshold float64
	// Why explains the wait, for an EventGranted that waited in the queue,
	// an EventCancelled of a queued call and an EventRejected by the limit:
	// the binding limit, the wait, the calls ahead and the pause that held
	// it, as the call found them when it asked. It is nil for the other
	// events and for calls served at once; it is made only when the limit
	// has an observer.
	Why *WaitError
}

// Observer receives a bucket's events. It is called outside the bucket's
// lock, from the goroutine that made the decision, and must not block.
type Observer interface {
	Observe(Event)
}

// WithObserver reports the bucket's decisions to each of obs in turn, for
// a bucket that reports to a log and to metrics at once; given again, it
// adds to the observers already given. Nil observers are left out. With no
// observer the bucket does no extra work.
func WithObserver(obs ...Observer) Option {
	return func(opts *options) {
		opts.Given(option.Observer)
		for _, o := range obs {
			switch {
			case o == nil:
			case opts.Observer == nil:
				opts.Observer = o
			default:
				t, _ := opts.Observer.(tee)
				if t == nil {
					t = tee{opts.Observer}
				}
				opts.Observer = append(t[:len(t):len(t)], o)
			}
		}
	}
}

func observe(bs []*Bucket, costs []int64, k EventKind, wait time.Duration) {
	observeWhy(bs, costs, k, wait, nil)
}

// observeWhy is observe with the explanation of the wait.
func observeWhy(bs []*Bucket, costs []int64, k EventKind, wait time.Duration, why *WaitError) {
	for i, b := range bs {
		if b.obs != nil && costs[i] != 0 {
			b.obs.Observe(Event{Kind: k, Limit: b.name, Cost: costs[i], Wait: wait, Why: why})
		}
	}
}

// observed reports whether any of bs has an observer, so that work done
// only for events can be skipped.
func observed(bs []*Bucket) bool {
	for _, b := range bs {
		if b.obs != nil {
			return true
		}
	}
	return false
}

// observeSettled reports a settlement to every bucket the permit took from,
// including those it took nothing from but was charged by Settle.
func observeSettled(bs []*Bucket, estimate, actual []int64) {
	for i, b := range bs {
		if b.obs != nil && (estimate[i] != 0 || actual[i] != 0) {
			b.obs.Observe(Event{Kind: EventSettled, Limit: b.name, Cost: actual[i], Estimate: estimate[i]})
		}
	}
}

// tee passes every event to each of its observers in turn.
type tee []Observer

func (t tee) Observe(e Event) {
	for _, o := range t {
		o.Observe(e)
	}
}
