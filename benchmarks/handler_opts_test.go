package benchmarks

import "github.com/throttlekit/throttle"

// keyedOptions returns the Keyed options of the Handler benchmarks for
// a key cap of maxKeys (0: none). Before WithMaxKeys existed it returned
// nil, which is how the baseline figures of benchmarks/README.md were made.
func keyedOptions(maxKeys int) []throttle.Option {
	if maxKeys == 0 {
		return nil
	}
	return []throttle.Option{throttle.WithMaxKeys(maxKeys)}
}
