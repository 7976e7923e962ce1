// Package trtcm is the two-rate three-color marker of RFC 2698: a
// [Marker] marks each call [Green], [Yellow] or [Red] (a [Color]) against
// a committed rate and burst and a peak rate and burst, instead of making
// it wait. The levels are exact rationals held as integers, as in a
// throttle.Bucket, so the colors equal those of the RFC's algorithm in
// exact arithmetic.
//
// A Marker is a throttle.Gate: it grants a green call, a yellow one only
// under a context from [AllowBestEffort], and refuses a red one with a
// [*MarkError]; a Transport of httpthrottle over a Marker therefore sends
// best-effort traffic only where the caller allowed it.
//
// Every type, one line each:
//   - [Marker]: the marker, made by [New].
//   - [Color]: green, yellow or red.
//   - [MarkError]: a call not granted because of its color.
package trtcm
