package benchmarks

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// BenchmarkStreamFirstByte measures the time from sending a streamed call to
// reading the first byte of its body, against the fake vendor on loopback,
// with a plain transport and through throttle's Transport with an llm.Config,
// alternating the two call by call. It reports the median of each
// ("plain-p50-µs", "throttle-p50-µs") and their ratio.
func BenchmarkStreamFirstByte(b *testing.B) {
	for _, tt := range []struct{ name, path, body string }{
		{"openai-sse", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say ok."}],"max_tokens":50}`},
		{"gemini-json-array", "/v1beta/models/g:streamGenerateContent", `{"contents":[{"parts":[{"text":"Say ok."}]}],"generationConfig":{"maxOutputTokens":50}}`},
	} {
		b.Run(tt.name, func(b *testing.B) {
			vendor := throttletest.NewServer(throttletest.Config{ReplyTokens: 50, StreamChunkTokens: 5})
			defer vendor.Close()
			plain := &http.Transport{}
			defer plain.CloseIdleConnections()
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			rpm, _ := throttle.New(1<<40, throttle.Per(1<<40, time.Second), throttle.WithName("requests"))
			tpm, _ := throttle.New(1<<40, throttle.Per(1<<40, time.Second), throttle.WithName("tokens"))
			lim, _ := throttle.NewLimiter(rpm, tpm)
			tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(llm.Config{})))
			first := func(rt http.RoundTripper) time.Duration {
				req, _ := http.NewRequest(http.MethodPost, vendor.URL+tt.path, strings.NewReader(tt.body))
				start := time.Now()
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				var one [1]byte
				if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
					b.Fatal(err)
				}
				d := time.Since(start)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return d
			}
			var ps, ts []time.Duration
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					ps, ts = append(ps, first(plain)), append(ts, first(tr))
				} else {
					ts, ps = append(ts, first(tr)), append(ps, first(plain))
				}
			}
			slices.Sort(ps)
			slices.Sort(ts)
			p, t := ps[len(ps)/2], ts[len(ts)/2]
			b.ReportMetric(float64(p)/1e3, "plain-p50-µs")
			b.ReportMetric(float64(t)/1e3, "throttle-p50-µs")
			b.ReportMetric(float64(t)/float64(p), "ratio")
		})
	}
}

// TestChunkedJSONFirstChunk: a JSON body sent in pieces a second apart
// (Gemini's streamGenerateContent without alt=sse) reaches the caller of the
// Transport with an llm.Config piece by piece: its first chunk comes at once, not
// after the whole body. Real clock, about 2 s.
func TestChunkedJSONFirstChunk(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 2 s")
	}
	vendor := throttletest.NewServer(throttletest.Config{ReplyTokens: 10, StreamChunkTokens: 5, StreamInterval: time.Second})
	defer vendor.Close()
	rpm, _ := throttle.New(100, throttle.Per(100, time.Second), throttle.WithName("requests"))
	tpm, _ := throttle.New(100000, throttle.Per(100000, time.Second), throttle.WithName("tokens"))
	lim, _ := throttle.NewLimiter(rpm, tpm)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(llm.Config{})))
	req, _ := http.NewRequest(http.MethodPost, vendor.URL+"/v1beta/models/g:streamGenerateContent",
		strings.NewReader(`{"contents":[{"parts":[{"text":"Say ok."}]}],"generationConfig":{"maxOutputTokens":50}}`))
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	var one [1]byte
	io.ReadFull(resp.Body, one[:])
	firstChunk := time.Since(start)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	all := time.Since(start)
	t.Logf("first byte after %v, whole body after %v", firstChunk, all)
	if firstChunk > 500*time.Millisecond || all < time.Second {
		t.Errorf("first byte after %v, whole body after %v: want the first at once and the body a second later", firstChunk, all)
	}
}
