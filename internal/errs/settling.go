package errs

import "sync/atomic"

// Settling checks the values given to Settle on a permit over n limits,
// a Bucket permit's, an htb.Permit's and a trtcm Marker's alike (count
// makes the error for a wrong number of them), and marks the permit
// settled. When it fails the caller settles nothing; once a permit is
// settled or cancelled, it fails with Settled.
func Settling(settled *atomic.Bool, actual []int64, n int, count func(got, want int) error) error {
	if len(actual) != n {
		return count(len(actual), n)
	}
	for _, a := range actual {
		if a < 0 {
			return NegativeCost
		}
	}
	if !settled.CompareAndSwap(false, true) {
		return Settled
	}
	return nil
}
