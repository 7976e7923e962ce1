package redisbucket

import (
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// The pause feed's messages come from any client that can publish on the
// channel. Whatever one carries, it never panics and never sets a pause
// but by a bare integer, as before causes were sent; a cause names the
// pause heard only when it ends at the same µs, and only a cause that
// parseCause accepts (short, printable) is kept, and read back as written;
// where a pause was stored from (parseFrom) is two integers, from at most
// until, read back as written, and sets no pause by itself.
func FuzzFeedMessage(f *testing.F) {
	const base = 1_733_300_000_000_000
	f.Add(causeMessage(base, "429 from api.example.com: Retry-After 20s"))
	f.Add(causeMessage(base+1, "429 from api.example.com: Retry-After 20s"))
	f.Add(strconv.FormatInt(base+5, 10))
	f.Add("c" + strconv.FormatInt(base, 10) + " ")
	f.Add("c0" + strconv.FormatInt(base, 10) + " x")
	f.Add("c-1 x")
	f.Add("c" + strconv.FormatInt(base, 10) + " a\nb")
	f.Add("c99999999999999999999 x")
	f.Add(slowMessage(0, [4]int64{25, 5, 1, 1000000}))
	f.Add(fromMessage(base+5, base+1))
	f.Add(fromMessage(base, base))
	f.Add("f" + strconv.FormatInt(base, 10) + " " + strconv.FormatInt(base+1, 10))
	f.Add("f1 01")
	lim, err := newShape("requests", 10, throttle.Per(10, time.Second))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		e := &engine{limits: []shape{lim}, o: options{clock: clockwork.NewFakeClock()}}
		e.pz.saw(base)
		e.pz.told(base, "before")
		e.hear(payload)
		until, cause := e.pz.latest()
		if v, err := strconv.ParseInt(payload, 10, 64); err == nil {
			want, wantCause := max(v, int64(base)), "before"
			if v > base {
				wantCause = ""
			}
			if until != want || cause != wantCause {
				t.Fatalf("pause message %q: %d %q, want %d %q", payload, until, cause, want, wantCause)
			}
			return
		}
		if until != base {
			t.Fatalf("message %q set the pause to %d, not a pause's message", payload, until)
		}
		if u, fr, ok := parseFrom(payload); ok {
			if fr <= 0 || fr > u {
				t.Fatalf("parseFrom(%q) = %d %d, accepted", payload, u, fr)
			}
			if u2, f2, ok := parseFrom(fromMessage(u, fr)); !ok || u2 != u || f2 != fr {
				t.Fatalf("round trip of %d %d: %d %d %v", u, fr, u2, f2, ok)
			}
		}
		u, c, ok := parseCause(payload)
		if ok {
			if u <= 0 || !validCause(c) {
				t.Fatalf("parseCause(%q) = %d %q, accepted", payload, u, c)
			}
			if u2, c2, ok := parseCause(causeMessage(u, c)); !ok || u2 != u || c2 != c {
				t.Fatalf("round trip of %d %q: %d %q %v", u, c, u2, c2, ok)
			}
		}
		wantCause := "before"
		if ok && u == base {
			wantCause = c
		}
		if cause != wantCause {
			t.Fatalf("message %q left the cause %q, want %q", payload, cause, wantCause)
		}
	})
}
