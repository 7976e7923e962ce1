//go:build race

package trtcm

const raceEnabled = true
