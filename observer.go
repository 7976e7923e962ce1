package throttle

import "time"

// EventKind says what happened to a request.
type EventKind uint8

// The kinds of Event.
const (
	EventGranted   EventKind = iota + 1 // tokens were taken
	EventRejected                       // TryAcquire refused, or Acquire failed fast on its deadline
	EventCancelled                      // a waiter's context ended before its grant
	EventPaused                         // PauseUntil stopped grants
	EventSettled                        // a Permit was settled or cancelled
	EventTuned                          // Auto changed a limit's rate or capacity
	// EventRefused: a server refused the account itself (a spent credit, a
	// spend cap; see Transport), which no wait cures: the request came back
	// after one attempt and nothing was paused. Reason holds the vendor's
	// code.
	EventRefused
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
	// Reason is, for EventRefused, the server's code for the refusal, such
	// as "insufficient_quota" or "enforced_spend_limit_reached".
	Reason string
}

// Observer receives a bucket's events. It is called outside the bucket's
// lock, from the goroutine that made the decision, and must not block.
type Observer interface {
	Observe(Event)
}

// WithObserver reports the bucket's decisions to o. With no observer the
// bucket does no extra work.
func WithObserver(o Observer) Option {
	return func(opts *options) { opts.obs, opts.set = o, opts.set|optObserver }
}

func observe(bs []*Bucket, costs []int64, k EventKind, wait time.Duration) {
	for i, b := range bs {
		if b.obs != nil && costs[i] != 0 {
			b.obs.Observe(Event{Kind: k, Limit: b.name, Cost: costs[i], Wait: wait})
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

// Observers returns an Observer that passes every event to each of obs in
// turn, for a bucket that reports to a log and to metrics at once. Nil
// observers are left out; with none left it returns nil, so that a bucket
// given it does no work for events.
func Observers(obs ...Observer) Observer {
	var t tee
	for _, o := range obs {
		if o != nil {
			t = append(t, o)
		}
	}
	switch len(t) {
	case 0:
		return nil
	case 1:
		return t[0]
	}
	return t
}

type tee []Observer

func (t tee) Observe(e Event) {
	for _, o := range t {
		o.Observe(e)
	}
}
