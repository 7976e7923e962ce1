//go:build !race

package redisbucket_test

const raceEnabled = false
