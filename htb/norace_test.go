//go:build !race

package htb

const raceEnabled = false
