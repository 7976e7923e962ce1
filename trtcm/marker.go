package trtcm

import (
	"errors"
	"fmt"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/option"
	"github.com/throttlekit/throttle/internal/queue"
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
	queue.Timeline // the lock, the clock; no queue: a Marker never waits
	name           string
	p, c           exact.Shape
	pl, cl         exact.Level
	cir            throttle.Rate // the committed rate, as given
}

// New returns a Marker with committed rate cir and burst cbs and
// peak rate pir and burst pbs. RFC 2698 asks for pir >= cir; both bursts
// must be positive. WithClock and WithName apply.
func New(cir throttle.Rate, cbs int64, pir throttle.Rate, pbs int64, opts ...throttle.Option) (*Marker, error) {
	// RFC 2698 requires both burst sizes above zero; an unlimited rate
	// would make every packet green, which is no marker.
	if cbs <= 0 || pbs <= 0 {
		return nil, fmt.Errorf("trtcm: New: burst sizes must be positive, got CBS %d and PBS %d", cbs, pbs)
	}
	if cir == throttle.Inf || pir == throttle.Inf {
		return nil, fmt.Errorf("trtcm: New: rates must be finite, got CIR %v and PIR %v", cir, pir)
	}
	// Both rates are finite (above), as NewShape's inf says.
	cs, err := exact.NewShape(cbs, cir.Tokens(), cir.Period(), false)
	if err != nil {
		return nil, fmt.Errorf("trtcm: New: committed: %w", err)
	}
	ps, err := exact.NewShape(pbs, pir.Tokens(), pir.Period(), false)
	if err != nil {
		return nil, fmt.Errorf("trtcm: New: peak: %w", err)
	}
	if rateLess(pir, cir) {
		return nil, fmt.Errorf("trtcm: New: peak rate %v is below the committed rate %v", pir, cir)
	}
	clock, name, err := option.ClockAndName("trtcm.New", ": a Marker reports no events", opts)
	if err != nil {
		return nil, err
	}
	m := &Marker{name: name, p: ps, c: cs, cir: cir}
	m.Start(clock)
	now := m.Now()
	m.pl = exact.Level{Tokens: pbs, Last: now}
	m.cl = exact.Level{Tokens: cbs, Last: now}
	return m, nil
}

// rateLess reports a < b as rates, exactly.
func rateLess(a, b throttle.Rate) bool {
	return exact.RateLess(a.Tokens(), a.Period(), b.Tokens(), b.Period())
}

// Clock returns the clock the Marker measures time on (WithClock; the
// real clock by default), so that the HTTP Transport reads a server's
// "wait" on the same time line.
func (m *Marker) Clock() clockwork.Clock { return m.Timers }

// Mark marks a request of cost tokens in color-blind mode and updates the
// buckets as RFC 2698 says. A negative cost is red and changes nothing.
func (m *Marker) Mark(cost int64) Color {
	return m.MarkAware(cost, Green)
}

// MarkAware marks a request of cost tokens that arrives already marked
// pre, in color-aware mode.
func (m *Marker) MarkAware(cost int64, pre Color) Color {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	return m.markAt(m.Now(), cost, pre, true)
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
	m.Mu.Lock()
	defer m.Mu.Unlock()
	now := m.Now()
	m.p.Advance(&m.pl, now)
	m.c.Advance(&m.cl, now)
	return m.c.Value(&m.cl), m.p.Value(&m.pl)
}

var (
	// ErrRed is matched by the *MarkError of a call a Marker's Acquire
	// marked red: above the peak rate, never granted (a Transport over the
	// Marker does not send it).
	ErrRed = errors.New("trtcm: request above the peak rate (marked red)")
	// ErrYellow is matched by the *MarkError of a call marked yellow whose
	// context does not allow best effort: not granted, and not sent.
	ErrYellow = errors.New("trtcm: request above the committed rate (marked yellow) and best effort not allowed")
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
		return fmt.Sprintf("trtcm: marker %q: request of cost %d above the %s rate (yellow); not sent, as its context does not allow best effort (see AllowBestEffort)", e.Marker, e.Cost, what)
	}
	return fmt.Sprintf("trtcm: marker %q: request of cost %d above the %s rate (red); not sent", e.Marker, e.Cost, what)
}

// Unwrap returns ErrRed or ErrYellow.
func (e *MarkError) Unwrap() error {
	if e.Color == Red {
		return ErrRed
	}
	return ErrYellow
}
