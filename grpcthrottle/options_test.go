package grpcthrottle

import (
	"strings"
	"testing"
	"time"
)

// TestOptionsOfTheOtherSide: an option only the other side reads makes the
// constructor panic, naming both; one both sides read is taken by each.
func TestOptionsOfTheOtherSide(t *testing.T) {
	panics := func(f func()) (msg string) {
		defer func() {
			if r := recover(); r != nil {
				msg, _ = r.(string)
			}
		}()
		f()
		return ""
	}
	for _, c := range []struct {
		name string
		opt  Option
		make func(...Option)
		ctor string
	}{
		{"WithRetries", WithRetries(1), func(o ...Option) { NewServer(nil, o...) }, "NewServer"},
		{"WithMaxPause", WithMaxPause(time.Second), func(o ...Option) { NewServer(nil, o...) }, "NewServer"},
		{"WithHandlerPermit", WithHandlerPermit(), func(o ...Option) { NewClient(nil, o...) }, "NewClient"},
		{"WithQuotaTrailer", WithQuotaTrailer(nil), func(o ...Option) { NewClient(nil, o...) }, "NewClient"},
		{"WithQuotaOnAdmit", WithQuotaOnAdmit(), func(o ...Option) { NewClient(nil, o...) }, "NewClient"},
	} {
		want := "grpcthrottle: " + c.ctor + " does not take " + c.name
		if msg := panics(func() { c.make(WithClock(nil), c.opt) }); !strings.HasPrefix(msg, want) {
			t.Errorf("%s given %s: panic %q, want one starting %q", c.ctor, c.name, msg, want)
		}
	}
	for _, o := range []Option{WithCost(nil), WithSettle(nil), WithMessageCost(nil), WithClock(nil)} {
		if msg := panics(func() { NewClient(nil, o); NewServer(nil, o) }); msg != "" {
			t.Errorf("an option of both sides: panic %q", msg)
		}
	}
	if msg := panics(func() {
		NewClient(nil, WithRetries(2), WithMaxPause(time.Second))
		NewServer(nil, WithHandlerPermit(), WithQuotaOnAdmit())
	}); msg != "" {
		t.Errorf("each side's own options: panic %q", msg)
	}
}
