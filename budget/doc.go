// Package budget caps what calls spend over calendar windows: a day or a
// month in a time zone, or any fixed window, in any unit (calls, tokens,
// or money through a price table). A Budget is a throttle.Gate, so the
// HTTP Transport (httpthrottle.Shared), the gRPC interceptors and a loop
// of your own take it as they take a Limiter.
//
// A Budget never makes a call wait for its window to reset: a call that
// the window has no room left for fails at once with a *SpentError that
// names the budget and says when it resets, and the caller chooses whether
// to wait. A call reserves its estimate before it is made and settles its
// actual cost after (Permit.Settle); a call refused or failed is given
// back (Permit.Cancel).
//
// The spend lives in a Store: NewMemory for one process, or a store kept
// on disk or in Redis for spend that survives restarts and is shared by
// several processes.
//
// Budgets live in a package of their own rather than in the root: they
// meet the rest of the module only through the Gate and Permit seams, and
// their windows, prices, stores and errors would otherwise double the
// root's API for a need most limiters never have.
package budget
