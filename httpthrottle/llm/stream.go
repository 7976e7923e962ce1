package llm

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/throttlekit/throttle/httpthrottle"
)

// usageBody is the body of a 2xx response handed to the caller unchanged,
// which reads the usage from the bytes as the caller reads them and settles
// the permit when the caller reaches EOF or closes the body, whichever
// comes first.
type usageBody struct {
	rc  io.ReadCloser
	c   Config
	p   httpthrottle.Attempt
	req *http.Request // the request sent, to estimate its input again if need be

	mu   sync.Mutex // Read and Close may run in different goroutines
	done bool
	s    usageScanner
}

func (b *usageBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 || err == io.EOF {
		b.mu.Lock()
		if !b.done {
			b.s.write(p[:n])
			if err == io.EOF {
				b.finish(true)
			}
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *usageBody) Close() error {
	b.mu.Lock()
	if !b.done {
		b.finish(false)
	}
	b.mu.Unlock()
	return b.rc.Close()
}

// finish settles the permit from what the body carried; eof tells whether
// the caller read all of it.
func (b *usageBody) finish(eof bool) {
	b.done = true
	b.s.end()
	u, inOK, outOK := b.s.fields.usage()
	if !b.s.sse && (!inOK || !outOK) {
		// A JSON body without its usage: nothing better than the estimate.
		b.keep()
		return
	}
	if outOK && (eof || !b.s.sse) && b.c.Outputs != nil && b.req != nil {
		// A whole report of what the call wrote, to learn from.
		b.c.Outputs.record(modelOf(b.req), u.Output)
	}
	if b.s.sse {
		text := divUp(b.s.text, b.c.charsPerToken())
		switch {
		case !outOK:
			// The stream reported no output: count the text it carried.
			u.Output = text
		case !eof:
			// Closed early: the output reported so far (Anthropic's
			// message_start says 1) or the text read, whichever is more.
			u.Output = max(u.Output, text)
		}
		if !inOK {
			if b.req == nil {
				b.keep() // a base transport that does not say what it sent
				return
			}
			in, _, err := b.c.estimateRequest(b.req)
			if err != nil {
				b.keep()
				return
			}
			u.Input = in
		}
	}
	b.c.settleUsage(b.p, u)
}

// keep ends the permit at its estimate.
func (b *usageBody) keep() {
	if b.p != nil {
		b.p.Keep()
	}
}

// settleUsage settles p to u on the token limits; requests stay as taken.
// The Transport settles a figure above a limit's capacity as the capacity.
func (c Config) settleUsage(p httpthrottle.Attempt, u Usage) {
	var small [4]int64
	actual := append(small[:0], p.Costs()...)
	for i := range actual {
		switch c.unitOf(p.LimitName(i)) {
		case unitTokens:
			actual[i] = satAdd(u.Input, u.Output)
		case unitInput:
			actual[i] = u.Input
		case unitOutput:
			actual[i] = u.Output
		}
	}
	p.Settle(actual...)
}

// Settle is httpthrottle.Accounting's Settle: it settles the permit of an
// attempt after its response. A 2xx JSON or event-stream response is
// handed to the caller at once, untouched, and settled from the usage it
// reports as the caller reads it, when the caller reaches its end or
// closes it: the usage object of a JSON body (OpenAI, Anthropic, and
// Gemini's usageMetadata, in one object or in the array of chunks of
// streamGenerateContent), or of a stream's events (the final chunk of an
// OpenAI chat completion with stream_options.include_usage, the Responses
// API's response.completed, Anthropic's message_start and message_delta,
// Gemini's usageMetadata). A stream that reports no output is settled from
// the text it carried (CharsPerToken characters a token), plus the input
// estimate when it reports no input; a stream closed before its end is
// settled from what was read. A JSON body without usage keeps its
// estimate. The reader keeps no more than a few hundred bytes of state and
// allocates nothing per read.
//
// A usage above a limit's capacity is settled as the capacity and counted
// in TransportStats.Clamped (see httpthrottle.Attempt): a server's garbage
// figure (a trillion tokens) must not put the client in debt for
// centuries, and a call cannot really use more than a quota the server
// enforces. A response of status 400 or more is settled to no tokens (the
// request cost stays), through refund. A 429 about the request rather than
// the client's pace (its error says "Request too large", or it reports a
// token limit below the request's input estimate) reports aboutRequest:
// it neither pauses nor drains the Limiter and is not retried.
func (c Config) Settle(resp *http.Response, a httpthrottle.Attempt) (aboutRequest bool, refund func()) {
	switch {
	case resp.StatusCode >= 400:
		if resp.StatusCode == http.StatusTooManyRequests {
			aboutRequest = c.tooLarge(resp, a)
		}
		return aboutRequest, func() { c.settleUsage(a, Usage{}) }
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && resp.Body != nil && resp.Body != http.NoBody:
		if c.readUsage(resp, &usageBody{p: a}) {
			return false, nil
		}
		a.Keep()
	default:
		a.Keep()
	}
	return false, nil
}

// readUsage hands resp's body to the caller through b, which reads the
// usage as the caller reads and settles at EOF or Close, when the body is
// JSON or an event stream, and reports whether it did; it leaves any other
// body alone.
func (c Config) readUsage(resp *http.Response, b *usageBody) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return false
	}
	switch {
	case mt == "text/event-stream":
		b.s.sse = true
	case mt == "application/json" || len(mt) > 5 && mt[len(mt)-5:] == "+json":
	default:
		return false
	}
	b.rc, b.c, b.req = resp.Body, c, resp.Request
	resp.Body = b
	return true
}

// tooLargeBody is the most of a 429's body read to tell a request too large
// from a client too fast.
const tooLargeBody = 16 << 10

// tooLarge reports whether a 429 is one that no wait cures, about the
// request or the account rather than the client's pace: its error says
// "Request too large" (OpenAI's answer to a request above the tokens per
// minute) or request_too_large, or insufficient_quota (OpenAI's answer once
// the account's credit is spent), or a token limit it reports is below the
// request's input estimate, so that the request can never fit.
func (c Config) tooLarge(resp *http.Response, a httpthrottle.Attempt) bool {
	if resp.Request != nil {
		if in, _, err := c.estimateRequest(resp.Request); err == nil {
			// The input alone: the output reserved may be a default the
			// vendor does not count.
			for _, q := range [...]string{defaultName(unitTokens), defaultName(unitInput)} {
				if l := a.ReportedLimit(q); l > 0 && in > l {
					return true
				}
			}
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	if head, ok := a.RefusalHead(); ok {
		// The Transport read the prefix, within its bounds of size and time.
		return saysTooLarge(head)
	}
	head := make([]byte, tooLargeBody)
	n, err := io.ReadFull(resp.Body, head)
	head = head[:n]
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(head))
	case nil:
		resp.Body = bodyReadCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	default:
		resp.Body = bodyReadCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
		return false
	}
	return saysTooLarge(head)
}

// saysTooLarge reports whether the head of a 429's body refuses the request
// or the account: "Request too large", request_too_large, or
// insufficient_quota (which the Transport also tells as a billing refusal).
func saysTooLarge(head []byte) bool {
	lower := bytes.ToLower(head)
	for _, s := range [...]string{"request too large", "request_too_large", "insufficient_quota"} {
		if bytes.Contains(lower, []byte(s)) {
			return true
		}
	}
	return false
}
