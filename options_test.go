package throttle_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/trtcm"
)

// TestOptionsNeverIgnored: every constructor takes the Options it uses and
// refuses every other with ErrInvalidOption, naming the option; none is
// silently ignored.
func TestOptionsNeverIgnored(t *testing.T) {
	opts := map[string]throttle.Option{
		"WithClock":    throttle.WithClock(clockwork.NewFakeClock()),
		"WithName":     throttle.WithName("n"),
		"WithObserver": throttle.WithObserver(),
		"WithMaxKeys":  throttle.WithMaxKeys(10),
	}
	rate := throttle.Per(10, time.Second)
	ctors := map[string]struct {
		make  func(throttle.Option) error
		takes []string
	}{
		"New": {func(o throttle.Option) error { _, err := throttle.New(10, rate, o); return err },
			[]string{"WithClock", "WithName", "WithObserver"}},
		"htb.NewQuota": {func(o throttle.Option) error { _, err := htb.NewQuota(10, rate, o); return err },
			[]string{"WithClock", "WithName"}},
		"trtcm.New": {func(o throttle.Option) error { _, err := trtcm.New(rate, 1, rate, 1, o); return err },
			[]string{"WithClock", "WithName"}},
		"NewKeyed": {func(o throttle.Option) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err, _ = r.(error)
					if err == nil {
						t.Errorf("NewKeyed panicked with %v, not an error", r)
					}
				}
			}()
			throttle.NewKeyed(func(int) []throttle.Limit { return nil }, o)
			return nil
		}, []string{"WithClock", "WithObserver", "WithMaxKeys"}},
	}
	for ctor, c := range ctors {
		for name, o := range opts {
			err := c.make(o)
			takes := false
			for _, n := range c.takes {
				takes = takes || n == name
			}
			switch {
			case takes && err != nil:
				t.Errorf("%s(%s): %v, want it taken", ctor, name, err)
			case !takes && !errors.Is(err, throttle.ErrInvalidOption):
				t.Errorf("%s(%s): %v, want ErrInvalidOption", ctor, name, err)
			case !takes && !strings.HasPrefix(err.Error(), "throttle: invalid option: "+ctor+" does not take "+name):
				t.Errorf("%s(%s): message %q does not name the constructor and the option", ctor, name, err)
			}
		}
		if err := c.make(nil); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("%s(nil Option): %v, want ErrInvalidOption", ctor, err)
		}
	}
}
