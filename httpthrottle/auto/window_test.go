package auto

import (
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// githubCount is a GitHub response's counters: limit an hour, rem left,
// the window ending reset from now.
func githubCount(limit, rem int64, reset time.Duration, now time.Time) http.Header {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", itoa(limit))
	h.Set("X-Ratelimit-Remaining", itoa(rem))
	h.Set("X-Ratelimit-Used", itoa(limit-rem))
	h.Set("X-Ratelimit-Reset", itoa(now.Add(reset).Unix()))
	h.Set("X-Ratelimit-Resource", "core")
	return h
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// coreBucket returns the learned bucket of the GitHub "core" quota.
func coreBucket(t *testing.T, a *Limiter) *throttle.Bucket {
	t.Helper()
	l, err := a.limiterOf(get(t, "https://api.github.com/repos/o/r"))
	if err != nil {
		t.Fatal(err)
	}
	q := autoOf(l)
	if q.key.resource != "core" {
		t.Fatalf("a repos request went to resource %q", q.key.resource)
	}
	return l.bs[0]
}

// GitHub's counts are exact until the window's end: the remaining calls
// may go at once, none goes once they are spent, and the whole limit is
// there at the reset instant, not at 5,000 an hour.
func TestAutoGitHubWindow(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.github.com/repos/o/r")
	tell(t, a, clk, req, 200, githubCount(5000, 9, 4*time.Second, clk.Now()))
	b := coreBucket(t, a)
	st := b.Status()
	if st.Remaining != 9 || st.Capacity != 5000 {
		t.Fatalf("after a count of 9 left: %d left of %d; want 9 of 5000", st.Remaining, st.Capacity)
	}
	if r := perSec(st.Rate); !near(r, 5000.0/3600) {
		t.Errorf("rate %v/s; want the server's 5000 an hour", r)
	}
	// The nine go at once; the last count says none is left.
	l, _ := a.limiterOf(req)
	for range 9 {
		if ok, err := l.TryAcquire(1); !ok || err != nil {
			t.Fatalf("one of the 9 left was refused: %v", err)
		}
	}
	clk.Advance(time.Second)
	tell(t, a, clk, req, 200, githubCount(5000, 0, 3*time.Second, clk.Now()))
	if p := b.Status().Paused; !p.Equal(clk.Now().Add(3 * time.Second)) {
		t.Errorf("a spent window paused until %v; want its end %v", p, clk.Now().Add(3*time.Second))
	}
	clk.Advance(3 * time.Second)
	// The fake clock runs the restore in a goroutine of its own.
	if got := eventually(func() int64 { return b.Status().Remaining }, 5000); got != 5000 {
		t.Errorf("at the reset %d left; want the whole limit, 5000", got)
	}
}

// A secondary limit while the count holds pauses the quota for its
// retry-after and leaves the learned primary quota as it was.
func TestAutoGitHubSecondary(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.github.com/repos/o/r")
	tell(t, a, clk, req, 200, githubCount(5000, 4999, time.Hour/2, clk.Now()))
	b := coreBucket(t, a)
	before := b.Status()
	h := githubCount(5000, 4990, time.Hour/2, clk.Now())
	h.Set("Retry-After", "2")
	tellAs(t, a, clk, req, http.StatusForbidden, h, true)
	st := b.Status()
	if st.Rate != before.Rate || st.Capacity != before.Capacity {
		t.Errorf("a secondary 403 with 4990 left changed the quota from %v, %d to %v, %d", before.Rate, before.Capacity, st.Rate, st.Capacity)
	}
	if st.Paused.Before(clk.Now().Add(2*time.Second)) || st.Paused.After(clk.Now().Add(2500*time.Millisecond)) {
		t.Errorf("paused until %v from now; want the 2 s asked, lengthened by up to a quarter", st.Paused.Sub(clk.Now()))
	}
}

// The refusals of calls that were in flight together lengthen the pause
// once, not once each.
func TestAutoStretchOnce(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.github.com/repos/o/r")
	tell(t, a, clk, req, 200, githubCount(5000, 4999, time.Hour/2, clk.Now()))
	b := coreBucket(t, a)
	for range 12 {
		h := githubCount(5000, 4990, time.Hour/2, clk.Now())
		h.Set("Retry-After", "2")
		tellAs(t, a, clk, req, http.StatusForbidden, h, true)
	}
	if p := b.Status().Paused.Sub(clk.Now()); p > 2500*time.Millisecond {
		t.Errorf("12 refusals asking 2 s paused for %v; want at most 2.5 s", p)
	}
}

// Calls queued on a host's quota before its first response named their
// resource are of that resource: the host's quota learns the window too,
// rather than sending them at the starting rate.
func TestAutoGitHubQueuedBeforeResource(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.github.com/repos/o/r")
	base, err := a.limiterOf(req)
	if err != nil {
		t.Fatal(err)
	}
	tell(t, a, clk, req, 200, githubCount(5000, 4999, time.Hour/2, clk.Now()))
	st := base.bs[0].Status()
	if st.Remaining < 4999 || st.Capacity != 5000 {
		t.Errorf("the host's quota holds %d of %d after a count of 4999; want the count", st.Remaining, st.Capacity)
	}
}

// eventually returns f() once it is want, or its last value after 10 s of
// yielding to the goroutine that is to make it so.
func eventually(f func() int64, want int64) int64 {
	end := time.Now().Add(10 * time.Second)
	got := f()
	for got != want && time.Now().Before(end) {
		runtime.Gosched()
		got = f()
	}
	return got
}
