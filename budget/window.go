package budget

import (
	"fmt"
	"time"
)

// Window is the calendar period a Budget's spend is counted over: the
// spend starts again from zero at the start of every window.
type Window interface {
	// Bounds returns the window that holds t: its start (included) and
	// end (excluded). The start names the window in a Store.
	Bounds(t time.Time) (start, end time.Time)
	String() string
}

// Daily returns the window of a calendar day in loc, midnight to
// midnight: 23 or 25 hours on the days a daylight-saving change happens.
// A nil loc is UTC.
func Daily(loc *time.Location) Window { return calendar{loc: orUTC(loc), days: 1} }

// Monthly returns the window of a calendar month in loc, from midnight of
// its first day.
func Monthly(loc *time.Location) Window { return calendar{loc: orUTC(loc), months: 1} }

// Every returns fixed windows of length d, aligned on the Unix epoch so
// that every process computes the same windows: Every(time.Hour) resets
// on the hour in UTC. It panics if d is not positive, as a window that
// never ends is a programming error.
func Every(d time.Duration) Window {
	if d <= 0 {
		panic(fmt.Sprintf("budget: Every(%v): the window must be positive", d))
	}
	return fixed(d)
}

func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// calendar is a window of whole days or months in a time zone.
type calendar struct {
	loc          *time.Location
	days, months int
}

func (c calendar) Bounds(t time.Time) (start, end time.Time) {
	t = t.In(c.loc)
	day := t.Day()
	if c.months > 0 {
		day = 1
	}
	start = time.Date(t.Year(), t.Month(), day, 0, 0, 0, 0, c.loc)
	return start, start.AddDate(0, c.months, c.days)
}

func (c calendar) String() string {
	if c.months > 0 {
		return "monthly in " + c.loc.String()
	}
	return "daily in " + c.loc.String()
}

// fixed is a window of a fixed length, aligned on the Unix epoch.
type fixed time.Duration

func (f fixed) Bounds(t time.Time) (start, end time.Time) {
	d := int64(f)
	n := t.UnixNano()
	s := n - n%d
	if n%d < 0 {
		s -= d
	}
	start = time.Unix(0, s).In(t.Location())
	return start, start.Add(time.Duration(f))
}

func (f fixed) String() string { return "every " + time.Duration(f).String() }
