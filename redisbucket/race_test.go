//go:build race

package redisbucket_test

// raceEnabled reports a build with the race detector, which slows the
// children of the real-time fleet tests several times over.
const raceEnabled = true
