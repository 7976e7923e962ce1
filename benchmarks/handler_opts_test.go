package benchmarks

import "github.com/throttlekit/throttle"

// keyedOptions returns the Keyed options of the LimitHandler benchmarks for
// a key cap of maxKeys (0: none).
func keyedOptions(maxKeys int) []throttle.Option { return nil }
