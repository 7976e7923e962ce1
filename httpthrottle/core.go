package httpthrottle

import (
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/corelink"
)

// core is what the core package lends this one (see corelink): read once,
// when the package is initialized, after the core registered it.
var core = corelink.Load[*corelink.Core[*throttle.Limiter, *throttle.Bucket, throttle.Permit, throttle.Event]]()

// settler is a permit the Transport settles from a response (WithLLM): a
// Limiter's own (its methods are the core's, on a type it does not
// export), or a Gate's Permit with the names of its limits (gatePermit).
type settler interface {
	Settle(actual ...int64) error
	// Keep ends the permit at its costs, without a settlement.
	Keep()
	// TakenCosts returns the costs taken, not to be written.
	TakenCosts() []int64
	// LimitName returns the name of limit i, in cost order.
	LimitName(i int) string
	// LimitCapacity returns the capacity of limit i.
	LimitCapacity(i int) int64
}

// limiterSettler is the settler of a Limiter's permit: the core's, which
// knows no capacity, with the buckets.
type limiterSettler struct {
	corePermit
	bs []*throttle.Bucket
}

// corePermit is the part of settler the core's permit implements.
type corePermit interface {
	Settle(actual ...int64) error
	Keep()
	TakenCosts() []int64
	LimitName(i int) string
}

func (s limiterSettler) LimitCapacity(i int) int64 { return core.Capacity(s.bs[i]) }

// gatePermit is the settler of a Permit taken from a Gate that is not a
// Limiter.
type gatePermit struct {
	p      throttle.Permit
	costs  []int64
	limits []throttle.Limit
}

func (g *gatePermit) Settle(actual ...int64) error { return g.p.Settle(actual...) }
func (g *gatePermit) Keep()                        {}
func (g *gatePermit) TakenCosts() []int64          { return g.costs }
func (g *gatePermit) LimitName(i int) string       { return g.limits[i].Name }
func (g *gatePermit) LimitCapacity(i int) int64    { return g.limits[i].Capacity }
