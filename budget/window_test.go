package budget_test

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle/budget"
)

func TestDailyFollowsTheTimeZoneAcrossDaylightSaving(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	w := budget.Daily(la)
	// 2026-03-08 springs forward: that day is 23 hours long.
	at := time.Date(2026, 3, 8, 15, 0, 0, 0, la)
	start, end := w.Bounds(at)
	if want := time.Date(2026, 3, 8, 0, 0, 0, 0, la); !start.Equal(want) {
		t.Errorf("start = %v, want %v", start, want)
	}
	if got := end.Sub(start); got != 23*time.Hour {
		t.Errorf("the day of the change lasts %v, want 23h", got)
	}
	// 23:30 in Los Angeles is the next day in UTC, and still this day here.
	late := time.Date(2026, 3, 8, 23, 30, 0, 0, la).UTC()
	if s, _ := w.Bounds(late); !s.Equal(start) {
		t.Errorf("23:30 local falls in the window starting %v, want %v", s, start)
	}
	if s, _ := w.Bounds(end); !s.Equal(end) {
		t.Errorf("the end of a window starts the next: got %v, want %v", s, end)
	}
}

func TestMonthlyStartsOnTheFirst(t *testing.T) {
	w := budget.Monthly(nil)
	start, end := w.Bounds(time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC))
	if !start.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("February 2026 = [%v, %v)", start, end)
	}
	start, end = w.Bounds(time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC))
	if !start.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("December 2026 = [%v, %v)", start, end)
	}
}

func TestEveryIsAlignedOnTheEpoch(t *testing.T) {
	w := budget.Every(time.Hour)
	at := time.Date(2026, 5, 1, 10, 42, 7, 0, time.UTC)
	start, end := w.Bounds(at)
	if !start.Equal(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)) || end.Sub(start) != time.Hour {
		t.Errorf("Every(1h) at %v = [%v, %v)", at, start, end)
	}
	before := time.Unix(-1, 0)
	if s, e := budget.Every(time.Minute).Bounds(before); !s.Equal(time.Unix(-60, 0)) || !e.Equal(time.Unix(0, 0)) {
		t.Errorf("before the epoch: [%v, %v)", s.Unix(), e.Unix())
	}
	defer func() {
		if recover() == nil {
			t.Error("Every(0) did not panic")
		}
	}()
	budget.Every(0)
}
