package statuspage

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// TestHistoryBounded checks that a limiter's history and events hold at
// most maxHistoryBytes however long the span asked and the run, and that a
// sample allocates nothing, so that nothing grows with the run's length.
func TestHistoryBounded(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := New(WithClock(clk), WithHistory(time.Millisecond, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, n := range []int{1, 3} {
		var bs []*throttle.Bucket
		for i := range n {
			b, _ := throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName(string(rune('a'+i))), throttle.WithObserver(p.Observer("x")))
			bs = append(bs, b)
		}
		l, _ := throttle.NewLimiter(bs...)
		p.Register("x", l)
		e := p.entry("x")
		buf := make([]throttle.LimitStatus, 0, n)
		for range 300000 {
			buf = e.sample(clk.Now(), p.every, buf[:0])
		}
		if got := e.bytes(); got > maxHistoryBytes || got < maxHistoryBytes*9/10 {
			t.Errorf("%d limits: the history holds %d bytes, want at most %d and near it", n, got, maxHistoryBytes)
		}
		if a := testing.AllocsPerRun(100, func() { buf = e.sample(clk.Now(), p.every, buf[:0]) }); a != 0 {
			t.Errorf("a sample allocates %v times", a)
		}
	}
}
