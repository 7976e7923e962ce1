package httpthrottle

import (
	"net/http"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
)

// Some vendors say in a refusal's body what the header does not (Gemini's
// RetryInfo, OpenAI's and Anthropic's billing codes, GitHub's secondary
// limit): so a bounded prefix of a 429's or 403's body is read, for a
// bounded time, before the Transport decides, and handed back intact.

// refusalBytes is the most of a refusal's body read before deciding. Error
// bodies are a few hundred bytes; Gemini's, with its details, about one
// KiB.
const refusalBytes = 16 << 10

// refusalWait is how long the Transport waits for a refusal's body once the
// header has come. It is real time, not the Limiter's clock: it bounds
// network I/O, not a quota. Error bodies come in the packet of the header
// or just after it.
const refusalWait = 200 * time.Millisecond

// readRefusal reads what the body of a 429 or 403 says into x, and merges
// a wait it names into the response's signals: Gemini's RetryInfo counts
// as a Retry-After when the header has none.
func (x *exchange) readRefusal(resp *http.Response) {
	x.refusal, x.stalled = headers.Refusal{}, false
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	head, stalled := headers.Peek(resp, refusalBytes, x.t.refusalWait)
	if stalled {
		x.stalled = true
		return
	}
	x.refusal = headers.ParseRefusal(head, x.t.maxPause)
	if r := &x.refusal; r.HasRetryDelay && !x.sig.HasRetryAfter {
		x.sig.RetryAfter, x.sig.HasRetryAfter = r.RetryDelay, true
		x.sig.Capped = x.sig.Capped || r.Capped
	}
}
