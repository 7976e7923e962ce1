//go:build !race

package httpthrottle

const raceEnabled = false
