// Package exact is the arithmetic of a token bucket's level in integers:
// a level is whole tokens plus a fraction over the rate's reduced period,
// so every decision equals the exact rational one, with no drift. The
// core's buckets and keys, the classes of package htb and the marker of
// package trtcm all count with it.
package exact
