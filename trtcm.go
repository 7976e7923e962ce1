package throttle

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Color is the mark a Marker gives a request.
type Color uint8

const (
	// Green: within the committed rate and burst.
	Green Color = iota
	// Yellow: above the committed rate, within the peak rate and burst.
	Yellow
	// Red: above the peak rate.
	Red
)

// String returns "green", "yellow" or "red".
func (c Color) String() string {
	switch c {
	case Green:
		return "green"
	case Yellow:
		return "yellow"
	case Red:
		return "red"
	}
	return fmt.Sprintf("Color(%d)", uint8(c))
}

// Marker is a two-rate three-color marker (trTCM, RFC 2698): it marks
// requests green, yellow or red from a committed bucket C (CIR, CBS) and a
// peak bucket P (PIR, PBS) instead of refusing them. Both buckets start
// full and refill continuously; as in RFC 2698, for a request of cost B
// at time t:
//
//   - if Tp(t) < B, it is red, and neither bucket changes;
//   - otherwise, if Tc(t) < B, it is yellow and Tp -= B;
//   - otherwise it is green, Tp -= B and Tc -= B.
//
// In color-aware mode (MarkAware) a request already red stays red and one
// already yellow is at best yellow, with the same updates. The levels are
// exact rationals held as integers, as in a Bucket, so the colors equal
// those of the RFC's algorithm computed in exact arithmetic.
//
// A Marker is safe for concurrent use.
type Marker struct {
	mu     sync.Mutex
	clock  clockwork.Clock
	epoch  time.Time
	name   string
	p, c   shape
	pl, cl level
	cir    Rate // the committed rate, as given
}

// NewMarker returns a Marker with committed rate cir and burst cbs and
// peak rate pir and burst pbs. RFC 2698 asks for pir >= cir; both bursts
// must be positive. WithClock and WithName apply.
func NewMarker(cir Rate, cbs int64, pir Rate, pbs int64, opts ...Option) (*Marker, error) {
	// RFC 2698 requires both burst sizes above zero; an unlimited rate
	// would make every packet green, which is no marker.
	if cbs <= 0 || pbs <= 0 {
		return nil, fmt.Errorf("throttle: NewMarker: burst sizes must be positive, got CBS %d and PBS %d", cbs, pbs)
	}
	if cir.inf || pir.inf {
		return nil, fmt.Errorf("throttle: NewMarker: rates must be finite, got CIR %v and PIR %v", cir, pir)
	}
	cs, err := cir.shape(cbs)
	if err != nil {
		return nil, fmt.Errorf("throttle: NewMarker: committed: %w", err)
	}
	ps, err := pir.shape(pbs)
	if err != nil {
		return nil, fmt.Errorf("throttle: NewMarker: peak: %w", err)
	}
	if rateLess(pir, cir) {
		return nil, fmt.Errorf("throttle: NewMarker: peak rate %v is below the committed rate %v", pir, cir)
	}
	o, err := applyOptions("NewMarker", optClock|optName, map[optionSet]string{
		optObserver: ": a Marker reports no events",
		optMaxKeys:  ": it caps a Keyed's keys",
	}, opts)
	if err != nil {
		return nil, err
	}
	m := &Marker{clock: o.clock, name: o.name, p: ps, c: cs, cir: cir}
	if o.clock == nil {
		m.epoch = time.Now()
	} else {
		m.epoch = o.clock.Now()
	}
	now := m.now()
	m.pl = level{Tokens: pbs, Last: now}
	m.cl = level{Tokens: cbs, Last: now}
	return m, nil
}

func (m *Marker) now() int64 {
	if m.clock == nil {
		return int64(time.Since(m.epoch))
	}
	return int64(m.clock.Since(m.epoch))
}

// timeline returns the clock the Marker reads, for the Transport
// (gateClock).
func (m *Marker) timeline() clockwork.Clock {
	if m.clock == nil {
		return clockwork.NewRealClock()
	}
	return m.clock
}

// Name returns the name given with WithName.

// Mark marks a request of cost tokens in color-blind mode and updates the
// buckets as RFC 2698 says. A negative cost is red and changes nothing.
func (m *Marker) Mark(cost int64) Color {
	return m.MarkAware(cost, Green)
}

// MarkAware marks a request of cost tokens that arrives already marked
// pre, in color-aware mode.
func (m *Marker) MarkAware(cost int64, pre Color) Color {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.markAt(m.now(), cost, pre, true)
}

// markAt marks at instant now; with commit false, a yellow request leaves
// the buckets as they are (a request that is not sent).
func (m *Marker) markAt(now, cost int64, pre Color, yellowCommits bool) Color {
	if cost < 0 {
		return Red
	}
	m.p.Advance(&m.pl, now)
	m.c.Advance(&m.cl, now)
	// Tp - B < 0 with Tp = tokens + frac < tokens + 1, B whole: exactly
	// tokens < B.
	if pre == Red || m.pl.Tokens < cost {
		return Red
	}
	if pre == Yellow || m.cl.Tokens < cost {
		if yellowCommits {
			m.pl.Take(cost)
		}
		return Yellow
	}
	m.pl.Take(cost)
	m.cl.Take(cost)
	return Green
}

// Tokens returns the levels of the committed and the peak bucket now.
func (m *Marker) Tokens() (committed, peak float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.p.Advance(&m.pl, now)
	m.c.Advance(&m.cl, now)
	return m.c.Value(&m.cl), m.p.Value(&m.pl)
}

var (
	// ErrRed is matched by the *MarkError of a call a Marker's Acquire
	// marked red: above the peak rate, never granted (a Transport over the
	// Marker does not send it).
	ErrRed = errors.New("throttle: request above the peak rate (marked red)")
	// ErrYellow is matched by the *MarkError of a call marked yellow whose
	// context does not allow best effort: not granted, and not sent.
	ErrYellow = errors.New("throttle: request above the committed rate (marked yellow) and best effort not allowed")
)

// MarkError is the error of a Marker's Acquire for a call it did not grant
// because of its color, which a Transport over the Marker returns as it is
// for the request it did not send. It matches ErrRed or ErrYellow with
// errors.Is.
type MarkError struct {
	Color  Color
	Cost   int64
	Marker string // the Marker's name, if it has one
}

func (e *MarkError) Error() string {
	what := "committed"
	if e.Color == Red {
		what = "peak"
	}
	if e.Color == Yellow {
		return fmt.Sprintf("throttle: marker %q: request of cost %d above the %s rate (yellow); not sent, as its context does not allow best effort (see AllowBestEffort)", e.Marker, e.Cost, what)
	}
	return fmt.Sprintf("throttle: marker %q: request of cost %d above the %s rate (red); not sent", e.Marker, e.Cost, what)
}

// Unwrap returns ErrRed or ErrYellow.
func (e *MarkError) Unwrap() error {
	if e.Color == Red {
		return ErrRed
	}
	return ErrYellow
}
