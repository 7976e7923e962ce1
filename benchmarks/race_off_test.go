//go:build !race

package benchmarks

// raceDetector: see race_on_test.go.
const raceDetector = false
