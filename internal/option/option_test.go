package option

import (
	"errors"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/errs"
)

// opt is an Option as package throttle declares one, over a test's
// observer type.
type opt func(*Options[string])

func name(n string) opt     { return func(o *Options[string]) { o.Name = n; o.Given(Name) } }
func observer(s string) opt { return func(o *Options[string]) { o.Observer = s; o.Given(Observer) } }
func maxKeys(n int) opt     { return func(o *Options[string]) { o.MaxKeys = n; o.Given(MaxKeys) } }
func badClock() opt {
	return func(o *Options[string]) { o.Refuse("WithClock(nil): why"); o.Given(Clock) }
}

// TestApply: the options taken are applied; a nil Option, an invalid one
// and one not taken fail with errs.InvalidOption, worded as the core's
// constructors' errors are.
func TestApply(t *testing.T) {
	o, err := Apply("New", Name|Observer, nil, []opt{name("n"), observer("obs")})
	if err != nil || o.Name != "n" || o.Observer != "obs" {
		t.Fatalf("Apply = %+v, %v; want the name and the observer applied", o, err)
	}
	for _, tc := range []struct {
		opts []opt
		want string
	}{
		{[]opt{name("n"), nil}, "throttle: invalid option: New given a nil Option"},
		{[]opt{badClock()}, "throttle: invalid option: New given WithClock(nil): why"},
		{[]opt{maxKeys(3)}, "throttle: invalid option: New does not take WithMaxKeys: caps keys"},
	} {
		_, err := Apply("New", Clock|Name|Observer, map[Set]string{MaxKeys: ": caps keys"}, tc.opts)
		if !errors.Is(err, errs.InvalidOption) || err.Error() != tc.want {
			t.Errorf("Apply: %v, want %q", err, tc.want)
		}
	}
}

// TestClockAndName: a constructor that takes WithClock and WithName only
// gets them back, and refuses WithObserver saying why, WithMaxKeys as the
// core's New does.
func TestClockAndName(t *testing.T) {
	clk := clockwork.NewFakeClock()
	c, n, err := ClockAndName("htb.NewQuota", ": no events", []opt{name("q"), func(o *Options[string]) { o.Clock = clk; o.Given(Clock) }})
	if err != nil || c != clk || n != "q" {
		t.Fatalf("ClockAndName = %v, %q, %v", c, n, err)
	}
	_, _, err = ClockAndName("htb.NewQuota", ": no events", []opt{observer("x")})
	if want := "throttle: invalid option: htb.NewQuota does not take WithObserver: no events"; err == nil || err.Error() != want {
		t.Errorf("WithObserver: %v, want %q", err, want)
	}
	_, _, err = ClockAndName("trtcm.New", "", []opt{maxKeys(1)})
	if want := "throttle: invalid option: trtcm.New does not take WithMaxKeys" + KeyedOnly; err == nil || err.Error() != want {
		t.Errorf("WithMaxKeys: %v, want %q", err, want)
	}
}
