package redisbucket

import (
	"strings"
	"testing"
	"time"
)

// A long time away widens the slots, and every grant stays in the slot
// that holds its instant: a return charges what followed it by them.
func TestAwayGrantsWiden(t *testing.T) {
	var a awayGrants
	t0 := time.Unix(1000, 0)
	a.start(t0, 5_000_000)
	for k := range 150 { // one every 10 ms for 1.5 s, two tokens each
		a.add(t0.Add(time.Duration(k)*10*time.Millisecond), []int64{1, 2})
	}
	if a.width != 40*time.Millisecond || len(a.slots) != 38 {
		t.Fatalf("width %v, %d slots; want 40ms, 38 (1.5 s in at most %d)", a.width, len(a.slots), maxAwaySlots)
	}
	var sum int64
	for j, s := range a.slots {
		want := int64(4) // 40 ms of grants 10 ms apart
		if j == len(a.slots)-1 {
			want = 2 // 1.48 and 1.49 s
		}
		if s[0] != want || s[1] != 2*want {
			t.Fatalf("slot %d holds %v, want [%d %d]", j, s, want, 2*want)
		}
		sum += s[0]
	}
	if sum != 150 {
		t.Fatalf("%d grants in the slots, want 150", sum)
	}
	arg := string(a.appendArg(nil, 2, false))
	if !strings.HasPrefix(arg, "b5000000 40000 38 4 8 4 8 ") || !strings.HasSuffix(arg, " 2 4") {
		t.Fatalf("return head %q", arg)
	}
	// Grants before the process fell back (none are recorded then) and
	// without a server time (no view) are not slotted.
	a.start(t0, 0)
	a.add(t0, []int64{1, 1})
	if len(a.slots) != 0 {
		t.Fatalf("grants recorded without a server time: %v", a.slots)
	}
}
