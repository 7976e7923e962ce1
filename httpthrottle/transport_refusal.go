package httpthrottle

import (
	"net/http"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
)

// What a refusal's body says.
//
// Some vendors say in the body what the header does not: Gemini puts the
// wait in a google.rpc.RetryInfo, OpenAI and Anthropic tell a spent account
// from a client too fast only in the error's code, and GitHub names its
// secondary limit only in the message. So the body of a 429 or a 403 is
// read before the Transport decides, but only a bounded prefix of it
// (refusalBytes), and only for as long as it takes to arrive
// (refusalWait): a body that stalls must not hold RoundTrip, and one of
// megabytes must not be read whole. The caller gets the body back intact:
// the bytes read, then the rest as the server sends it.

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
