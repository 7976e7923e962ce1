package httpthrottle

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/throttlekit/throttle"
)

// SDKs that retry on their own (Stainless's openai-go, anthropic-sdk-go)
// retry a refusal twice and send X-Stainless-Retry-Count: the Transport
// leaves their retries to them, still pausing on a 429, and returns its
// own refusals to them as responses that say not to retry (see refusal),
// as they retry any RoundTrip error as a connection error.

// RefusalHeader is the header of a response the Transport made itself for
// a request it refused without sending it, returned instead of the error
// to an SDK that retries on its own (the request carries
// X-Stainless-Retry-Count), which would retry the error as a connection
// error: a 429 or 413 with x-should-retry: false, which the SDK returns
// as its API error at once. Its value is "deadline" (no permit before the
// context's deadline: a 429) or "oversized" (the estimate exceeds a
// bucket's capacity, with llm.Config.RefuseOversized: a 413). A context
// already done gives its error.
//
// The body reads as a JSON error in both vendors' shapes, then fails with
// the refusal's error itself instead of io.EOF: a *WaitError (matching
// context.DeadlineExceeded) or llm.Config.Cost's (matching
// throttle.ErrCostExceedsCapacity). The SDKs return that read error as the
// call's error (anthropic-sdk-go wrapped with %w), so the caller tells the
// limiter's refusal from the vendor's with errors.As or errors.Is.
const RefusalHeader = "Throttle-Refusal"

// WithSDKRetries makes the Transport retry the requests of SDKs that retry
// on their own (those carrying X-Stainless-Retry-Count) like any other:
// use it with the SDK's retries turned off (option.WithMaxRetries(0)).
func WithSDKRetries() Option {
	return forTransport("WithSDKRetries", func(t *Transport) error {
		t.retrySDK = true
		return nil
	})
}

// retriesItself reports whether req comes from an SDK that retries on its
// own.
func retriesItself(req *http.Request) bool {
	_, ok := req.Header["X-Stainless-Retry-Count"]
	return ok
}

// refusal returns the response that stands for err, the Transport's
// refusal of req, to an SDK that would retry the error itself (see
// RefusalHeader); nil when err is to be returned as it is.
func refusal(req *http.Request, err error) *http.Response {
	if !retriesItself(req) {
		return nil
	}
	select {
	case <-req.Context().Done():
		return nil
	default:
	}
	var status int
	var reason, kind string
	var wait *throttle.WaitError
	switch {
	case errors.As(err, &wait):
		status, reason, kind = http.StatusTooManyRequests, "deadline", "rate_limit_error"
	case errors.Is(err, throttle.ErrCostExceedsCapacity):
		status, reason, kind = http.StatusRequestEntityTooLarge, "oversized", "request_too_large"
	default:
		return nil
	}
	// Both vendors' error shapes at once: OpenAI's SDK reads "error",
	// Anthropic's the whole object.
	body, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": kind, "code": "throttle_" + reason, "message": err.Error(), "param": nil},
	})
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Should-Retry", "false")
	h.Set(RefusalHeader, reason)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          &refusalBody{r: bytes.NewReader(body), err: err},
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// refusalBody yields the JSON of a refusal, then err where a body would
// end: see RefusalHeader.
type refusalBody struct {
	r   *bytes.Reader
	err error
}

func (b *refusalBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = b.err
	}
	return n, err
}

func (b *refusalBody) Close() error { return nil }

// noRetryForSDK marks a response that no wait cures (a request too large,
// a spent account) x-should-retry: false for an SDK that retries on its
// own, which would otherwise retry a 429 twice to the same answer, spending
// quota and time; an x-should-retry the server sent is kept.
func noRetryForSDK(req *http.Request, resp *http.Response) {
	if retriesItself(req) && resp.Header != nil && resp.Header.Get("X-Should-Retry") == "" {
		resp.Header.Set("X-Should-Retry", "false")
	}
}
