package llm

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/throttlekit/throttle"
)

// chunkReader returns one event of an OpenAI chat stream per Read, as a
// network connection delivers them, over and over.
type chunkReader struct {
	chunks [][]byte
	i      int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	n := copy(p, r.chunks[r.i%len(r.chunks)])
	r.i++
	return n, nil
}

func (r *chunkReader) Close() error { return nil }

func chatChunks() [][]byte {
	var cs [][]byte
	for i := range 64 {
		cs = append(cs, fmt.Appendf(nil, "data: {\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_eb9dce56a8\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", i))
	}
	return cs
}

// BenchmarkStreamChunk reads one chunk of a stream per op, straight and
// through the usage reader: the difference is the reader's cost per chunk,
// which allocates nothing.
func BenchmarkStreamChunk(b *testing.B) {
	chunks := chatChunks()
	buf := make([]byte, 32<<10)
	for _, through := range []bool{false, true} {
		name := "raw"
		if through {
			name = "usageBody"
		}
		b.Run(name, func(b *testing.B) {
			var r io.Reader = &chunkReader{chunks: chunks}
			if through {
				bucket, _ := throttle.New(1<<40, throttle.Per(1, 1))
				r = &usageBody{rc: &chunkReader{chunks: chunks}, p: takenSettler(bucket, 1), s: usageScanner{sse: true}}
			}
			b.SetBytes(int64(len(chunks[0])))
			b.ReportAllocs()
			for b.Loop() {
				r.Read(buf)
			}
		})
	}
}

// TestUsageBodyCloseWhileReading: Close may come from another goroutine
// while a Read is in progress (an SDK cancelling a stream); the permit is
// settled once.
func TestUsageBodyCloseWhileReading(t *testing.T) {
	bucket, _ := throttle.New(1000, throttle.Per(1, 1), throttle.WithName("tokens"))
	p := takenSettler(bucket, 500)
	bucket.Acquire(t.Context(), 500)
	req, _ := http.NewRequest(http.MethodPost, "http://vendor/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	b := &usageBody{rc: &chunkReader{chunks: chatChunks()}, p: p, req: req, s: usageScanner{sse: true}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for range 1000 {
			b.Read(buf)
		}
	}()
	b.Close()
	<-done
	if err := p.Settle(500); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("settling again: %v, want ErrSettled: the permit was not settled", err)
	}
}
