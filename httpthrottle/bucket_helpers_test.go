package httpthrottle

import (
	"github.com/throttlekit/throttle"
)

// buckets returns l's buckets in cost order, found by their names.
func buckets(l *throttle.Limiter) []*throttle.Bucket {
	limits := l.Limits()
	bs := make([]*throttle.Bucket, len(limits))
	for i, lim := range limits {
		bs[i] = l.Bucket(lim.Name)
	}
	return bs
}
