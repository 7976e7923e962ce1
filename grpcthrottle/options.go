package grpcthrottle

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc/metadata"

	"github.com/throttlekit/throttle"
)

// DefaultMaxPause is the longest a client waits on what a server says,
// unless WithMaxPause sets another limit: 60 seconds, as for the HTTP
// Transport (httpthrottle.WithMaxPause).
const DefaultMaxPause = 60 * time.Second

// DefaultRetries is how many times a client re-sends a refused call,
// unless WithRetries says otherwise: 3, as for the HTTP Transport
// (httpthrottle.WithRetries).
const DefaultRetries = 3

// Option configures a Client or a Server. Each says which side reads it;
// NewClient and NewServer panic, naming it, if given one only the other
// side reads: an option is never silently ignored.
type Option func(*config)

// side is the Client or the Server, as a set of bits: the sides an Option
// applies to.
type side uint8

const (
	clientSide side = 1 << iota
	serverSide
)

type config struct {
	pick     Pick
	cost     CostFunc
	settle   SettleFunc
	msgCost  MessageCostFunc
	clock    clockwork.Clock
	maxPause time.Duration
	retries  int
	trailer  func(md metadata.MD, status []throttle.LimitStatus)
	onAdmit  bool   // the quota trailer goes with admitted calls too
	permits  bool   // a server's handlers get their Permit (WithHandlerPermit)
	side     side   // the side being configured
	wrong    string // the first option given that only the other side reads
	last     atomic.Pointer[gateCount]
	tunes    tunings                                          // the Gates a client slowed down
	slow     slowStart                                        // a client's first calls, held to what its servers confirmed
	routes   map[string]func(context.Context) context.Context // by pool member (WithRoutes)
	stats    clientStats                                      // what a client did
}

func newConfig(sd side, pick Pick, opts []Option) *config {
	c := &config{
		side:     sd,
		pick:     pick,
		clock:    clockwork.NewRealClock(),
		maxPause: DefaultMaxPause,
		retries:  DefaultRetries,
		trailer:  WriteIETF,
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.wrong != "" {
		ctor := map[side]string{clientSide: "NewClient", serverSide: "NewServer"}[sd]
		panic(fmt.Sprintf("grpcthrottle: %s does not take %s: only the other side reads it", ctor, c.wrong))
	}
	if c.pick == nil {
		c.pick = func(context.Context, string, any) (throttle.Gate, error) { return nil, nil }
	}
	return c
}

// WithCost sets what a call costs (both sides); the default is 1 on every
// limit.
func WithCost(f CostFunc) Option {
	return func(c *config) { c.cost = f }
}

// WithSettle settles each unary call's permit from its reply (both sides:
// on a server, after the handler returns, unless it settled the permit
// itself). Without it a permit keeps what it took.
func WithSettle(f SettleFunc) Option {
	return func(c *config) { c.settle = f }
}

// WithHandlerPermit gives a server's handlers the Permit of their call in
// their context (PermitFromContext), to settle it against the call's
// actual cost or cancel it (server side; WithSettle implies it for unary
// calls). It costs an allocation a call for the context, and the Permit's
// own: without it, over a throttle.Taker such as a Limiter, an admitted
// call allocates nothing.
func WithHandlerPermit() Option {
	return func(c *config) {
		if c.reads(serverSide, "WithHandlerPermit") {
			c.permits = true
		}
	}
}

// WithMessageCost meters streams per message (both sides): every message
// sent waits for its cost before it is sent, and every message received
// waits for its cost before it is returned, so that a consumer slower than
// the quota holds the sender back through gRPC's flow control. A message
// whose wait ends with the stream's context, or whose send fails, spends
// nothing.
func WithMessageCost(f MessageCostFunc) Option {
	return func(c *config) { c.msgCost = f }
}

// WithClock sets the clock a client reads server delays and deadlines on
// (both sides; the default is the real clock). Give it the clock of the
// Gates' buckets, a clockwork.FakeClock in tests.
func WithClock(clk clockwork.Clock) Option {
	return func(c *config) {
		if clk != nil {
			c.clock = clk
		}
	}
}

// WithMaxPause caps every wait a server can impose on a client (its
// RetryInfo delay): a longer one pauses the Gate for d only and the call
// is not re-sent. The default is DefaultMaxPause; d <= 0 keeps it.
func WithMaxPause(d time.Duration) Option {
	return func(c *config) {
		if c.reads(clientSide, "WithMaxPause") && d > 0 {
			c.maxPause = d
		}
	}
}

// WithRetries sets how many times a client may re-send a refused unary
// call, counting the attempts grpc-go's own retry policy makes (see the
// package documentation): a call makes at most 1+n attempts in all, or the
// policy's maxAttempts if that is more (the interceptor cannot cut the
// policy's own round short). 0 never re-sends. The default is
// DefaultRetries.
func WithRetries(n int) Option {
	return func(c *config) {
		if c.reads(clientSide, "WithRetries") {
			c.retries = max(n, 0)
		}
	}
}

// WithRoutes sends each unary call whose Gate is a pool.Pool with the
// context the route of the member that served it returns, by member name:
// the member's credential added to the outgoing metadata, say
// (metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)).
// Whatever the routes, a refusal of a call served by a member pauses,
// levels and slows down that member alone (a Pool is no Pauser), and the
// call is sent again through the pool, which then picks the member that
// serves soonest. A member without a route is sent the call as it is.
func WithRoutes(routes map[string]func(context.Context) context.Context) Option {
	return func(c *config) {
		if c.reads(clientSide, "WithRoutes") {
			c.routes = maps.Clone(routes)
		}
	}
}

// WithoutSlowStart has a client send its first unary calls as its Gates
// allow them, the whole configured burst at once, rather than half of it
// and then half of the rest per success (see Client: slow start): for a
// client whose Gates are known to match its servers exactly.
func WithoutSlowStart() Option {
	return func(c *config) {
		if c.reads(clientSide, "WithoutSlowStart") {
			c.slow.done.Store(true)
		}
	}
}

// WithQuotaTrailer replaces WriteIETF as the writer of the quota status a
// server sends in the trailing metadata of the calls its Gate refuses
// (and admits, under WithQuotaOnAdmit); nil sends none. It is called only
// for a Gate that is a throttle.Meter.
func WithQuotaTrailer(write func(md metadata.MD, status []throttle.LimitStatus)) Option {
	return func(c *config) {
		if c.reads(serverSide, "WithQuotaTrailer") {
			c.trailer = write
		}
	}
}

// WithQuotaOnAdmit has a server send the quota status with every call its
// Gate admits too, as Handler does, for clients that pace themselves
// by what remains. It is off by default because it is not free: grpc-go
// sends trailing metadata on every call, even with values it need not
// format (benchmarks/README.md has the cost on a loopback echo call).
func WithQuotaOnAdmit() Option {
	return func(c *config) {
		if c.reads(serverSide, "WithQuotaOnAdmit") {
			c.onAdmit = true
		}
	}
}

// costs returns the costs of a call on g.
func (c *config) costs(ctx context.Context, method string, req any, g throttle.Gate) ([]int64, error) {
	if c.cost == nil {
		return c.oneCosts(g), nil
	}
	return c.cost(ctx, method, req, g)
}

// taker returns g as a throttle.Taker when no Permit is needed for a
// unary call (permit false, no WithSettle), so that the call takes its
// costs without one; nil otherwise.
func (c *config) taker(g throttle.Gate, permit bool) throttle.Taker {
	if permit || c.settle != nil {
		return nil
	}
	tk, _ := g.(throttle.Taker)
	return tk
}

// reads reports whether the side being configured reads option name,
// which only sd reads; if not, it records name for newConfig's panic.
func (c *config) reads(sd side, name string) bool {
	if c.side&sd != 0 {
		return true
	}
	if c.wrong == "" {
		c.wrong = name
	}
	return false
}
