// Package corelink lends the HTTP layer (httpthrottle) the parts of the
// core (package throttle) that are not its public API: a Keyed key decided
// under one lock, and counts its tests read.
// Exporting them from the core would put them in front of every user of a
// Bucket; internal tables keep them between the packages of this module.
//
// The core cannot be imported here (it imports this package), so a table's
// types are parameters: the core fills a Core with its own types in its
// init, and httpthrottle reads it back with the same types. Nothing else
// is stored, and nothing changes after init.
package corelink

import "time"

// Core is the table the core registers. L is *throttle.Limiter, B
// *throttle.Bucket, P throttle.Permit, E throttle.Event.
type Core[L, B, P, E any] struct {
	// Queued returns the number of waiters queued on the Limiter's
	// buckets: the HTTP layer's tests wait for every goroutine to have
	// finished or queued on it.
	Queued func(l L) int
	// HeldKeys counts a Keyed's keys that have a Limiter of their own: the
	// HTTP layer's tests check that LimitHandler keeps keys compact.
	HeldKeys func(k any) int
	// Keyed returns a Keyed's Admitter (of its key type), or nil for a
	// value that is not a Keyed.
	Keyed func(k any) any
}

// Decision is what a Keyed decided for a key held compactly (Admitter). S
// is throttle.LimitStatus.
type Decision[S any] struct {
	OK     bool
	Costs  []int64       // the costs decided
	Status []S           // every limit after the decision
	Wait   time.Duration // refused: until the costs are covered, -1 if never
	// WriteIETF's values of Status and Wait, from the limits' cache, when
	// asked for and kept there; else nil.
	Policy, State, Retry []string
}

// tables are the tables registered, each by the package that lends it, in
// its init: nothing is added after the program starts.
var tables []any

// Register stores a table; the package lending it calls it once, in its
// init.
func Register(t any) { tables = append(tables, t) }

// Load returns the table of type T. A package that loads a table imports
// the one that registers it, whose init has therefore run.
func Load[T any]() T {
	for _, t := range tables {
		if t, ok := t.(T); ok {
			return t
		}
	}
	panic("corelink: no table registered of the type asked for")
}
