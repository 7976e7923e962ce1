package redisbucket

import (
	"strconv"
	"sync"
	"time"
)

// DefaultFleetTTL is how long a process stays counted in its limiter's
// fleet after it last registered; it registers again with its normal
// traffic every quarter of that.
const DefaultFleetTTL = 10 * time.Second

// fleet registers this process in the limiter's fleet key, a sorted set of
// member ids scored by expiry next to the state key (same hash slot), so
// that FailLocal can give each process 1/live of each limit instead of a
// guess. A process registers only along with a call it makes anyway, at
// most every ttl/4; a process that makes no calls drops out after ttl.
type fleet struct {
	key    string
	member string
	ttlArg string
	every  time.Duration

	mu   sync.Mutex
	next time.Time
	sent time.Time // when the registration under way was due
	live int64     // the last count, 0 before the first
}

func newFleet(stateKey string, ttl time.Duration) *fleet {
	return &fleet{key: stateKey + ":fleet", member: newPermitID(), ttlArg: strconv.FormatInt(ttl.Milliseconds(), 10), every: ttl / 4}
}

// due reports whether this call should register, and if so counts the
// registration as under way until the next period.
func (f *fleet) due(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Before(f.next) {
		return false
	}
	f.next, f.sent = now.Add(f.every), now
	return true
}

// failed lets the next call register again.
func (f *fleet) failed() {
	f.mu.Lock()
	f.next = time.Time{}
	f.mu.Unlock()
}

// registered records a registration's count; a count that changed since
// the last brings the next registration closer (an eighth of the period).
func (f *fleet) registered(live int64) {
	f.mu.Lock()
	if soon := f.sent.Add(f.every / 8); live != f.live && soon.Before(f.next) {
		f.next = soon
	}
	f.live = live
	f.mu.Unlock()
}

// count returns the last live count, 0 before the first.
func (f *fleet) count() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live
}
