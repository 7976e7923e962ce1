// Package trace parses the outside input of the throttle command exactly:
// decimal numbers, durations in decimal seconds, rates such as "2.5" or
// "90000/1m", and CSV request traces.
//
// Nothing here uses floating point. A decimal is kept as an integer
// coefficient and a power of ten, so that callers can scale every value of
// one problem to whole integer units and hand them to the token bucket's
// exact arithmetic.
package trace
