//go:build race

package benchmarks

// raceDetector reports a build with the race detector, which slows a
// real-time trace at random (several times over, most at its start): its
// figures then say nothing of the code's.
const raceDetector = true
