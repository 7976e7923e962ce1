package htb

import (
	"time"

	"github.com/jonboulle/clockwork"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(t0) }
