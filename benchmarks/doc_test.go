// Package benchmarks compares github.com/throttlekit/throttle with
// golang.org/x/time/rate. It holds only tests and benchmarks; see README.md
// for the commands and the results.
package benchmarks
