// Package option holds what package throttle's Options set and how a
// constructor applies them, so that htb's and trtcm's constructors take a
// throttle.Option as the core's do: the same refusals, worded the same.
package option

import (
	"fmt"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/errs"
)

// Set is a set of Options, by kind.
type Set uint8

// The kinds of Option, one bit each.
const (
	Clock Set = 1 << iota
	Name
	Observer
	MaxKeys
)

// names are the Options' names, by bit, for errors.
var names = [...]string{"WithClock", "WithName", "WithObserver", "WithMaxKeys"}

// KeyedOnly says why a constructor other than NewKeyed takes no
// WithMaxKeys.
const KeyedOnly = ": it caps a Keyed's keys"

// Options is what a throttle.Option sets; Obs is throttle.Observer, which
// this package cannot name.
type Options[Obs any] struct {
	Clock    clockwork.Clock // nil: the real clock
	Name     string
	Observer Obs
	MaxKeys  int // WithMaxKeys, for a Keyed
	given    Set
	bad      []string // options given invalid values, each saying why
}

// Given records that the options of kinds k were given.
func (o *Options[Obs]) Given(k Set) { o.given |= k }

// Refuse records an option given an invalid value; why names it and says
// what was wrong.
func (o *Options[Obs]) Refuse(why string) { o.bad = append(o.bad, why) }

// Apply applies opts for the constructor ctor, which takes the options in
// takes: any other fails with errs.InvalidOption, saying why (why, by
// option), rather than being ignored.
func Apply[Obs any, O ~func(*Options[Obs])](ctor string, takes Set, why map[Set]string, opts []O) (Options[Obs], error) {
	var o Options[Obs]
	for _, opt := range opts {
		if opt == nil {
			return Options[Obs]{}, fmt.Errorf("%w: %s given a nil Option", errs.InvalidOption, ctor)
		}
		opt(&o)
	}
	if len(o.bad) > 0 {
		return Options[Obs]{}, fmt.Errorf("%w: %s given %s", errs.InvalidOption, ctor, o.bad[0])
	}
	if extra := o.given &^ takes; extra != 0 {
		for i, name := range names {
			if extra&(1<<i) != 0 {
				return Options[Obs]{}, fmt.Errorf("%w: %s does not take %s%s", errs.InvalidOption, ctor, name, why[1<<i])
			}
		}
	}
	return o, nil
}

// ClockAndName applies opts for the constructor ctor of a limiter that
// takes WithClock and WithName only (htb's, trtcm's): WithObserver fails
// saying noObserver, why it does not apply.
func ClockAndName[Obs any, O ~func(*Options[Obs])](ctor, noObserver string, opts []O) (clockwork.Clock, string, error) {
	o, err := Apply(ctor, Clock|Name, map[Set]string{Observer: noObserver, MaxKeys: KeyedOnly}, opts)
	return o.Clock, o.Name, err
}
