package grpcthrottle

import (
	"context"
	"reflect"

	"github.com/throttlekit/throttle"
)

// CostFunc returns what a call costs on each limit of g, in the order of
// g.Limits(), from its request message (nil for a stream, which costs
// this to open) or its metadata: one request and the prompt's tokens, say.
// A zero cost leaves that limit out; a call whose costs are all zero is
// free and takes no permit. The default is 1 on every limit. A CostFunc
// must not modify req. A wrong number of costs is a bug: the call fails
// with an error matching throttle.ErrInvalidCost (codes.Internal on the
// server), unsent.
type CostFunc func(ctx context.Context, method string, req any, g throttle.Gate) ([]int64, error)

// SettleFunc returns the actual costs of a call from its reply message,
// one per limit (the tokens an LLM call used, from the usage its reply
// reports), for the permit taken with the estimate to be settled: what was
// over-reserved goes back, an overrun is charged. taken is what the permit
// took. A nil result leaves the permit as it is.
type SettleFunc func(method string, reply any, taken []int64) []int64

// MessageCostFunc returns what one message of a stream costs on each limit,
// sent (received false) or received, for a stream metered per message: the
// items of a server-streaming call, the chunks of a bidirectional one. A
// nil or all-zero result makes the message free.
type MessageCostFunc func(method string, msg any, received bool) []int64

// oneCosts is 1 on every limit of g.
func (c *config) oneCosts(g throttle.Gate) []int64 {
	n := c.limitCount(g)
	if n <= len(oneEach) {
		// Shared and never written: a Gate only reads costs, and its
		// Permit keeps a copy.
		return oneEach[:n]
	}
	costs := make([]int64, n)
	for i := range costs {
		costs[i] = 1
	}
	return costs
}

var oneEach = [...]int64{1, 1, 1, 1, 1, 1, 1, 1}

// gateCount is the number of limits of a Gate, remembered so that the
// default cost on a Shared Gate makes no call to Limits, which allocates.
// A Gate's number of limits never changes.
type gateCount struct {
	g throttle.Gate
	n int
}

func (c *config) limitCount(g throttle.Gate) int {
	// Interfaces compare equal only with the same dynamic type, and only
	// comparable types are remembered, so == cannot panic here.
	if last := c.last.Load(); last != nil && last.g == g {
		return last.n
	}
	n := len(g.Limits())
	// A new record only for a new count: Gates that come and go (a
	// Keyed's, one per key) would otherwise cost one a call, and one that
	// alternates with the remembered Gate already paid for its Limits.
	if last := c.last.Load(); (last == nil || last.n != n) && reflect.TypeOf(g).Comparable() {
		c.last.Store(&gateCount{g, n})
	}
	return n
}

func free(costs []int64) bool {
	for _, c := range costs {
		if c != 0 {
			return false
		}
	}
	return true
}
