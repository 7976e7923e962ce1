package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
)

// genTrace writes n requests: Poisson arrivals at about perSecond, costs
// between 1 and 2000, and keys drawn from nkeys (no key column when 0).
func genTrace(w io.Writer, n int, perSecond float64, nkeys int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	var ns int64
	buf := make([]byte, 0, 64)
	for range n {
		ns += int64(r.ExpFloat64() / perSecond * 1e9)
		buf = buf[:0]
		buf = fmt.Appendf(buf, "%d.%09d,%d", ns/1e9, ns%1e9, 1+r.IntN(2000))
		if nkeys > 0 {
			buf = fmt.Appendf(buf, ",k%d", r.IntN(nkeys))
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
}

func benchLimits(tb testing.TB) []limitSpec {
	return benchLimitsFrom(tb, "requests=500/1m", "tokens=200000/1m")
}

func benchLimitsFrom(tb testing.TB, specs ...string) []limitSpec {
	var ls limitsFlag
	for _, s := range specs {
		if err := ls.Set(s); err != nil {
			tb.Fatal(err)
		}
	}
	return ls
}

// BenchmarkSimulate1M replays a 1,000,000-request trace (about 10 requests
// a second against 500/min and 200,000 tokens/min, so most wait) from
// memory, CSV parsing included. The target is under 5 s per run.
func BenchmarkSimulate1M(b *testing.B) {
	for _, c := range []struct {
		name    string
		reject  bool
		chart   bool
		keys    int
		compare bool
	}{
		{"wait", false, false, 0, false},
		{"wait+chart", false, true, 0, false},
		{"reject", true, false, 0, false},
		{"wait+1000keys", false, false, 1000, false},
		{"wait+compare", false, false, 0, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var tr bytes.Buffer
			genTrace(&tr, 1_000_000, 10, c.keys, 1)
			cfg := simConfig{limits: benchLimits(b), reject: c.reject, chart: c.chart, compare: c.compare}
			b.ResetTimer()
			for b.Loop() {
				sim, err := simulate(cfg, bytes.NewReader(tr.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				if sim.stats.requests != 1_000_000 {
					b.Fatalf("%d requests", sim.stats.requests)
				}
			}
		})
	}
}

// lineSource produces a trace lazily, so that a test can stream millions of
// requests without holding them.
type lineSource struct {
	n, i int
	ns   int64
	buf  []byte
}

func (s *lineSource) Read(p []byte) (int, error) {
	for len(s.buf) < len(p) && s.i < s.n {
		s.ns += 7_000_000 + int64(s.i%13)*1_000_000
		s.buf = fmt.Appendf(s.buf, "%d.%09d,%d,k%d\n", s.ns/1e9, s.ns%1e9, 1+s.i%1000, s.i%50)
		s.i++
	}
	if len(s.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// heapAfterGC returns the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSimulateMemoryFlat streams a long trace and checks that the live
// heap does not grow with it: sampled after 50,000 and after 400,000
// requests, the difference stays under 256 KiB.
func TestSimulateMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 400,000 requests")
	}
	sim := newSimulator(simConfig{limits: benchLimits(t), chart: true})
	src := &lineSource{n: 400_000}
	tr := newTraceReader(src)
	var at50k uint64
	for n := 1; ; n++ {
		req, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.add(req, tr.Line()); err != nil {
			t.Fatal(err)
		}
		if n == 50_000 {
			at50k = heapAfterGC()
		}
	}
	end := heapAfterGC()
	if end > at50k+256<<10 {
		t.Errorf("live heap grew from %d B at 50,000 requests to %d B at 400,000", at50k, end)
	}
	runtime.KeepAlive(sim)
}
