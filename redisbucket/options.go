package redisbucket

import (
	"fmt"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// Defaults for the options.
const (
	DefaultPrefix      = "throttle:"
	DefaultCallTimeout = 75 * time.Millisecond
	DefaultPermitTTL   = 10 * time.Minute
	DefaultProbeMin    = 100 * time.Millisecond
	DefaultProbeMax    = 500 * time.Millisecond
	// DefaultBreakerPatience is how long calls must keep failing before
	// the breaker opens (WithBreakerPatience).
	DefaultBreakerPatience = 500 * time.Millisecond
	// DefaultWireHeadroom is the send delay a reservation leaves room for
	// (WithWireHeadroom).
	DefaultWireHeadroom = 10 * time.Millisecond
)

// maxWireHeadroom bounds WithWireHeadroom: a send delayed by more than a
// second is an outage, not the wire.
const maxWireHeadroom = time.Second

// Option configures a Bucket or a Limiter. A value no limiter can run with
// (a nil Option or clock, a timeout or TTL out of its range, a zero
// FailurePolicy, a Lease out of range) fails New and NewLimiter with an
// error that matches throttle.ErrInvalidOption and names the option.
type Option func(*options)

type options struct {
	prefix      string
	clock       clockwork.Clock
	callTimeout time.Duration
	policy      FailurePolicy
	policySet   bool
	obs         Observer
	permitTTL   time.Duration
	probeMin    time.Duration
	probeMax    time.Duration
	patience    time.Duration
	lease       *Lease
	fleetTTL    time.Duration
	// startWithout builds the limiter when Redis does not answer the
	// constructor's check (WithStartWithoutRedis).
	startWithout bool
	// reserve makes Acquire reserve (reserve.go) instead of deciding again
	// after each sleep (WithReservations), and opens the pause feed in the
	// constructor.
	reserve  bool
	headroom time.Duration
	nilClock bool // WithClock(nil), refused
	// serverTime replaces the server's TIME; tests use it to run exact
	// traces on a real server. Nil in production.
	serverTime func() time.Time
}

// buildOptions applies opts over the defaults and refuses a value no
// limiter can run with, with an error that matches
// throttle.ErrInvalidOption and names the option and the value: a value
// quietly replaced by a default would hide the mistake.
func buildOptions(opts []Option) (options, error) {
	o := options{
		prefix:      DefaultPrefix,
		callTimeout: DefaultCallTimeout,
		permitTTL:   DefaultPermitTTL,
		probeMin:    DefaultProbeMin,
		probeMax:    DefaultProbeMax,
		patience:    DefaultBreakerPatience,
		fleetTTL:    DefaultFleetTTL,
		headroom:    DefaultWireHeadroom,
		reserve:     true,
	}
	for i, opt := range opts {
		if opt == nil {
			return o, invalidOption("option %d is nil", i)
		}
		opt(&o)
	}
	if o.nilClock {
		return o, invalidOption("WithClock(nil): give a clock, or leave the option out for the real one")
	}
	if o.clock == nil {
		o.clock = clockwork.NewRealClock()
	}
	if strings.ContainsAny(o.prefix, "{}") {
		return o, invalidOption("WithPrefix(%q): the prefix must not contain { or }: the hash tag is the limiter id", o.prefix)
	}
	if o.callTimeout <= 0 {
		return o, invalidOption("WithCallTimeout(%v): the call timeout must be positive", o.callTimeout)
	}
	if o.permitTTL < time.Second || o.permitTTL > maxTTL {
		return o, invalidOption("WithPermitTTL(%v): the permit TTL must be between 1s and %v", o.permitTTL, maxTTL)
	}
	if o.fleetTTL != 0 && (o.fleetTTL < 100*time.Millisecond || o.fleetTTL > maxTTL) {
		return o, invalidOption("WithFleetTTL(%v): the fleet TTL must be 0 (off) or between 100ms and %v", o.fleetTTL, maxTTL)
	}
	if o.patience < 0 {
		return o, invalidOption("WithBreakerPatience(%v): the patience must not be negative", o.patience)
	}
	if o.headroom < 0 || o.headroom > maxWireHeadroom {
		return o, invalidOption("WithWireHeadroom(%v): the headroom must be between 0 and %v", o.headroom, maxWireHeadroom)
	}
	if o.probeMin <= 0 || o.probeMax < o.probeMin {
		return o, invalidOption("WithProbeBackoff(%v, %v): the probe backoff needs 0 < min <= max", o.probeMin, o.probeMax)
	}
	if o.policySet && !o.policy.mode.Failure() {
		return o, invalidOption("WithFailurePolicy(FailurePolicy{}): a zero FailurePolicy decides nothing; use FailLocal(...), FailClosed or FailOpen")
	}
	return o, nil
}

// invalidOption is the error for an option with a value no limiter takes.
func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%w: redisbucket: %s", throttle.ErrInvalidOption, fmt.Sprintf(format, args...))
}

// WithPrefix sets the text before the hash tag in every key; the default is
// "throttle:". A limiter with id X stores its state at <prefix>{X}. The
// prefix must not contain { or }.
func WithPrefix(prefix string) Option { return func(o *options) { o.prefix = prefix } }

// WithClock makes the client side read time and sleep on c: the breaker's
// probe schedule, the lease hold time, the local fallback bucket and the
// sleeps of Acquire. Token refill always follows the Redis server's clock.
//
// A nil c is refused (throttle.ErrInvalidOption).
func WithClock(c clockwork.Clock) Option {
	return func(o *options) { o.clock, o.nilClock = c, c == nil }
}

// WithCallTimeout bounds each script call; past it the call counts as a
// failure and the failure policy decides. The default is 75 ms. Calls
// made with context.Background (the methods without a Context suffix,
// the lease's returns) share one deadline timer per window of
// min(1 ms, d/16), so their timeout runs up to that much longer. No call
// returns later than the timeout or the caller's deadline, whichever
// comes first:
// on a client without ContextTimeoutEnabled, whose sockets do not see
// context deadlines, each call runs in a goroutine of its own and is
// abandoned at the deadline (set ContextTimeoutEnabled to save that
// goroutine). Configure the client's own timeouts and retries low as well
// (see the package example): go-redis defaults to seconds and three retries.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithFailurePolicy sets what decides while Redis is unreachable or slow. The
// default is FailLocal() with one tenth of each limit.
func WithFailurePolicy(p FailurePolicy) Option {
	return func(o *options) { o.policy, o.policySet = p, true }
}

// WithObserver reports every decision to obs, including those the failure
// policy takes and those served from a lease.
func WithObserver(obs Observer) Option { return func(o *options) { o.obs = obs } }

// WithPermitTTL sets how long the server remembers a permit id, which makes
// Settle and Cancel safe to retry; settle within this time. The default is
// 10 minutes. After a permit is settled its id is kept for one minute more
// (or the TTL if shorter), long enough for a retry of the same settle.
func WithPermitTTL(d time.Duration) Option { return func(o *options) { o.permitTTL = d } }

// maxTTL bounds the lifetimes sent to Redis in milliseconds (permits,
// lease hold, fleet registration), far below where they would overflow.
const maxTTL = 30 * 24 * time.Hour

// WithFleetTTL sets how long a process stays counted in its limiter's
// fleet after it last registered (see FailLocal); it registers with its
// normal calls every quarter of d. The default is DefaultFleetTTL; 0 turns
// the registry off, and FailLocal then gives one tenth without an explicit
// rate.
func WithFleetTTL(d time.Duration) Option { return func(o *options) { o.fleetTTL = d } }

// WithProbeBackoff sets the circuit breaker's schedule: after a failed call
// the next call to Redis is a single probe after min, then after
// exponentially longer gaps up to max, until one succeeds. The defaults are
// 100 ms and 500 ms: a process is back on Redis within about max (plus a
// fifth for jitter) of Redis answering again, at the cost of one probe
// per max per process while it does not.
func WithProbeBackoff(min, max time.Duration) Option {
	return func(o *options) { o.probeMin, o.probeMax = min, max }
}

// WithBreakerPatience sets how long calls must keep failing, with no
// success between, before the circuit breaker opens; until then a failed
// call hands only its own decision to the failure policy and the next
// decision calls Redis again. 0 opens it at the first failure. The
// default, DefaultBreakerPatience, outlasts the few hundred milliseconds
// for which processes starting together on few cores can hold calls past
// the call timeout, and a dead or frozen server still opens it within
// that time.
func WithBreakerPatience(d time.Duration) Option { return func(o *options) { o.patience = d } }

// WithStartWithoutRedis lets New and NewLimiter return a limiter when
// Redis does not answer their check (down, unreachable, loading, failing
// over), for a service that must start while Redis is down: the limiter
// starts in failure mode, its failure policy deciding (and each decision
// reported to the observer with its Mode and Err) until a probe reaches
// Redis. Without it the constructors fail with an error wrapping
// ErrUnavailable, so that a mistyped address is seen at start rather than
// as limits that quietly hold only per process. Errors that waiting does
// not cure (an ACL refusal, say) fail the constructors either way.
func WithStartWithoutRedis() Option { return func(o *options) { o.startWithout = true } }

// WithReservations is how Acquire waits by default (WithoutReservations
// is the other way): it reserves its place in the fleet's queue. One
// script call takes the costs in arrival order, below zero if need be,
// and returns the instant they are covered; the caller sleeps locally
// until then. Waiting then costs one call per decision whatever the
// number of waiters in the fleet (two when a limit that does not bind is
// left to the instant: docs/redis.md), and one more when a wait is
// cancelled (it gives back what nobody reserved behind it). A pause, or a
// rate lowered by Limiter.Tune, that another process stores while a
// caller sleeps reaches it over a Redis pub/sub subscription that the
// constructor opens and Close ends (close every Limiter and Bucket you
// are done with); while the subscription is down, a sleeper whose process
// has heard nothing from Redis in the last millisecond asks once at its
// instant. The subscription also brings the cause of a pause another
// process stored (Limiter.Observe), which WaitError and Status report. A
// waiter the failure policy refused reserves again once Redis answers.
// Every window still admits at most capacity + rate × w at the reserved
// instants. While a limit runs at a server's quota (Limiter.Tune),
// Acquire decides step by step, as WithoutReservations does.
func WithReservations() Option { return func(o *options) { o.reserve = true } }

// WithoutReservations makes a refused Acquire sleep until the wait its
// refusal named and decide again, as limiters did before reservations
// were the default: one script call per waiter per grant, so that the
// calls a decision costs grow with the number of processes waiting
// (about 10 at 8 processes, 57 at 64, in the fleet harness). Nothing
// subscribes to the fleet's pauses: a waiter hears of one when it decides
// again. For a single process with few waiters the cost is the same, and
// a waiter decides on the levels at its turn rather than on the queue at
// its arrival.
func WithoutReservations() Option { return func(o *options) { o.reserve = false } }

// WithWireHeadroom sets the send delay that reservations (WithReservations)
// leave room for; the default is DefaultWireHeadroom, 0 turns it off. A
// reserved call is sent at the instant the fleet's bucket covers it, and
// the API counts it when it arrives, up to a dial, a TLS handshake or a
// scheduler's delay later. An API's bucket that is full starts refilling
// only when such a call arrives, so a burst from full that the fleet
// counted at once can reach it spread out, and the next reserved call,
// sent on a warm connection, finds a token the API has not refilled yet
// (a 429 at start-up). Each reservation therefore takes from at most the
// capacity less what a limit refills over d (never less than its cost):
// arrivals delayed by up to d then fit capacity + rate × w in every window
// as the API counts them. It costs rate × d tokens of the first burst
// (half a request at 3,000 a minute and 10 ms), not throughput.
// Deciding step by step (without reservations) decides after its sleep,
// a round trip later than the instant, and takes no headroom.
// docs/redis.md has the figures the default comes from.
func WithWireHeadroom(d time.Duration) Option { return func(o *options) { o.headroom = d } }
