package htb

import (
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/exact"
)

// shapeOf validates r for a bucket of capacity and reduces it, as the
// core's Bucket does.
func shapeOf(r throttle.Rate, capacity int64) (exact.Shape, error) {
	return exact.NewShape(capacity, r.Tokens(), r.Period(), r == throttle.Inf)
}

// rateLess reports a < b as rates, exactly.
func rateLess(a, b throttle.Rate) bool {
	return exact.RateLess(a.Tokens(), a.Period(), b.Tokens(), b.Period())
}
