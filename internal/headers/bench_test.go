package headers

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// openAIResponse is the header of a typical OpenAI chat completion response.
func openAIResponse() http.Header {
	return header(
		"Date", "Sun, 01 Jun 2025 12:00:00 GMT",
		"Content-Type", "application/json",
		"Transfer-Encoding", "chunked",
		"Connection", "keep-alive",
		"Access-Control-Expose-Headers", "X-Request-ID",
		"Openai-Organization", "user-abc123",
		"Openai-Processing-Ms", "452",
		"Openai-Version", "2020-10-01",
		"Strict-Transport-Security", "max-age=15724800; includeSubDomains",
		"X-Ratelimit-Limit-Requests", "10000",
		"X-Ratelimit-Limit-Tokens", "2000000",
		"X-Ratelimit-Remaining-Requests", "9999",
		"X-Ratelimit-Remaining-Tokens", "1999970",
		"X-Ratelimit-Reset-Requests", "6ms",
		"X-Ratelimit-Reset-Tokens", "0s",
		"X-Request-Id", "req_0123456789abcdef0123456789abcdef",
		"Cf-Cache-Status", "DYNAMIC",
		"Server", "cloudflare",
		"Cf-Ray", "8a1b2c3d4e5f6a7b-AMS",
		"Alt-Svc", `h3=":443"; ma=86400`,
	)
}

func benchmarkParse(b *testing.B, h http.Header) {
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		Parse(h, now, time.Minute)
	}
}

func BenchmarkParseOpenAI(b *testing.B) { benchmarkParse(b, openAIResponse()) }

func BenchmarkParseOpenAI429(b *testing.B) {
	h := openAIResponse()
	h.Set("Retry-After", "20")
	h.Set("Retry-After-Ms", "19874")
	h.Set("X-Should-Retry", "true")
	benchmarkParse(b, h)
}

func BenchmarkParseAnthropic(b *testing.B) {
	h := header("Date", "Sun, 01 Jun 2025 12:00:00 GMT", "Content-Type", "application/json", "Request-Id", "req_01")
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		SetAnthropic(h, kind, 4000, 3999, 1500*time.Millisecond, testNow)
	}
	benchmarkParse(b, h)
}

func BenchmarkParseIETF(b *testing.B) {
	h := header("Content-Type", "application/json")
	SetIETF(h, "permin", 50, time.Minute, 49, 30*time.Second)
	AddIETF(h, "perday", 1000, 24*time.Hour, 900, time.Hour)
	benchmarkParse(b, h)
}

func BenchmarkParseNoSignals(b *testing.B) {
	benchmarkParse(b, header("Date", "Sun, 01 Jun 2025 12:00:00 GMT", "Content-Type", "text/html", "Content-Length", "512"))
}

// manyPolicies is a header with n RateLimit-Policy items, one a line as a
// hostile or broken server might send them, with a RateLimit for each.
func manyPolicies(n int) http.Header {
	h := http.Header{}
	for i := range n {
		AddIETF(h, "p"+strconv.Itoa(i), 100, time.Minute, 50, 30*time.Second)
	}
	return h
}

// BenchmarkManyPolicies compares Parse on a header of 10,000 and 100,000
// policies with a walk over the same values that reads every byte once
// (http.Header.Values and a byte loop): the least any reader of the field
// does. Parse must stay linear, within a small factor of the walk.
func BenchmarkManyPolicies(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		h := manyPolicies(n)
		b.Run("n="+strconv.Itoa(n)+"/parse", func(b *testing.B) {
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				Parse(h, now, time.Minute)
			}
		})
		b.Run("n="+strconv.Itoa(n)+"/walk", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				walkValues(h)
			}
		})
	}
}

var walkSink int

// walkValues reads every byte of the two fields' values.
func walkValues(h http.Header) {
	n := 0
	for _, k := range []string{"Ratelimit-Policy", "Ratelimit"} {
		for _, v := range h.Values(k) {
			for i := 0; i < len(v); i++ {
				if v[i] == ';' {
					n++
				}
			}
		}
	}
	walkSink += n
}
