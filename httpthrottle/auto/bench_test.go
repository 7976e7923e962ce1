package auto

import (
	"net/http"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/internal/headers"
)

// BenchmarkTransportLearns is a call through a Transport over Auto whose
// server reports OpenAI's requests and tokens with room to spare: the
// cost of learning from every response (Learner.Learn), no wait.
func BenchmarkTransportLearns(b *testing.B) {
	h := http.Header{}
	headers.SetOpenAI(h, "requests", 1_000_000_000, 999_999_999, time.Millisecond)
	headers.SetOpenAI(h, "tokens", 1_000_000_000, 999_999_999, time.Millisecond)
	learned := must(New(InitialRate(throttle.Per(1_000_000, time.Second))))
	tr := must(httpthrottle.NewTransport(answered{http.StatusOK, h}, learned))
	req, err := http.NewRequest(http.MethodGet, "https://api.openai.com/v1/models", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
