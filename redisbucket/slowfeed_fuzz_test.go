package redisbucket

import "testing"

// The feed's messages come from any client that can publish on the
// channel: parseSlow reads back what slowMessage writes and refuses any
// shape a limit could not run at.
func FuzzParseSlow(f *testing.F) {
	f.Add(slowMessage(0, [4]int64{25, 5, 1, 1000000}))
	f.Add("1733300000000000")
	f.Add("t1 0 1 1 1")
	f.Add("t-1 1 1 1 1")
	f.Add("t0 1 1 1 1 1")
	f.Fuzz(func(t *testing.T, payload string) {
		i, s, ok := parseSlow(payload)
		if !ok {
			return
		}
		if i < 0 || s[0] <= 0 || s[1] <= 0 || s[2] <= 0 || s[3] <= 0 {
			t.Fatalf("parseSlow(%q) = %d %v, accepted", payload, i, s)
		}
		if j, s2, ok := parseSlow(slowMessage(i, s)); !ok || j != i || s2 != s {
			t.Fatalf("round trip of %d %v: %d %v %v", i, s, j, s2, ok)
		}
	})
}
