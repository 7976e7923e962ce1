package throttle

import (
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/queue"
)

// The exact arithmetic of a bucket's level and the machinery of a queue of
// waiters live in internal packages, so that the core, the classes (htb)
// and the marker (trtcm) share one implementation of each. Their short
// names here keep the core's code as it reads best.
type (
	level = exact.Level
	shape = exact.Shape

	timeline                     = queue.Timeline
	wake                         = queue.Wake
	links[N any]                 = queue.Links[N]
	fifo[N any, P queue.Node[N]] = queue.Fifo[N, P]
	pool[W any]                  = queue.Pool[W]
)
