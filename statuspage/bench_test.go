package statuspage

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// BenchmarkRefresh is what one refresh of the open page costs: a sample
// of every limiter (the sampler's work each second) and one JSON answer,
// with full histories; "limiters=10000" lists the top 25 of 10,000.
func BenchmarkRefresh(b *testing.B) {
	for _, n := range []int{1, 10000} {
		b.Run(fmt.Sprintf("limiters=%d", n), func(b *testing.B) {
			clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			p, err := New(WithClock(clk))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			for i := range n {
				bk, _ := throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
				l, _ := throttle.NewLimiter(bk)
				p.Register(fmt.Sprintf("key-%05d", i), l)
			}
			ents := p.snapshot(nil)
			var buf []throttle.LimitStatus
			for range p.keep {
				for _, e := range ents {
					buf = e.sample(clk.Now(), p.every, buf[:0])
				}
			}
			req := httptest.NewRequest(http.MethodGet, "/?format=json", nil)
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range ents {
					buf = e.sample(clk.Now(), p.every, buf[:0])
				}
				rec := httptest.NewRecorder()
				p.ServeHTTP(rec, req)
				io.Copy(io.Discard, rec.Body)
			}
		})
	}
}
