package httpthrottle

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/throttlekit/throttle/internal/headers"
)

// usageBody is the body of a 2xx response handed to the caller unchanged,
// which reads the usage from the bytes as the caller reads them and settles
// the permit when the caller reaches EOF or closes the body, whichever
// comes first.
type usageBody struct {
	rc  io.ReadCloser
	c   LLM
	p   settler
	req *http.Request // the request sent, to estimate its input again if need be
	// clamped counts the usages settled as a capacity (TransportStats.Clamped).
	clamped *atomic.Int64

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
	b.c.settleUsage(b.p, u, b.clamped)
}

// keep ends the permit at its estimate.
func (b *usageBody) keep() {
	if b.p != nil {
		b.p.Keep()
	}
}

// settleUsage settles p to u on the token buckets; requests stay as taken.
// A figure above a limit's capacity is settled as the capacity and counted
// in clamped: no call really uses more than a quota the server enforces,
// and a garbage figure settled as it is would be a debt refilled for
// centuries.
func (c LLM) settleUsage(p settler, u Usage, clamped *atomic.Int64) {
	var small [4]int64
	actual := append(small[:0], p.TakenCosts()...)
	over := false
	for i := range actual {
		var n int64
		switch c.unitOf(p.LimitName(i)) {
		case llmTokens:
			n = satAdd(u.Input, u.Output)
		case llmInput:
			n = u.Input
		case llmOutput:
			n = u.Output
		default:
			continue
		}
		if capacity := p.LimitCapacity(i); n > capacity && capacity > 0 {
			n, over = capacity, true
		}
		actual[i] = n
	}
	if over && clamped != nil {
		clamped.Add(1)
	}
	p.Settle(actual...)
}

// settle corrects the permit of one attempt against what its response
// reports: a 2xx JSON or event-stream body as the caller reads it, a status
// of 400 or more (to no tokens) through refund, which the caller runs
// once it has paused for a refusal. It reports whether the response
// refuses the request itself rather than the client's pace: a 429 whose
// body says the request is too large, or which reports a token limit below
// the request's estimate.
func (c LLM) settle(resp *http.Response, p settler, sig *headers.Signals, clamped *atomic.Int64) (aboutRequest bool, refund func()) {
	switch {
	case resp.StatusCode >= 400:
		if resp.StatusCode == http.StatusTooManyRequests {
			aboutRequest = c.tooLarge(resp, sig)
		}
		return aboutRequest, func() { c.settleUsage(p, Usage{}, nil) }
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && resp.Body != nil && resp.Body != http.NoBody:
		if c.readUsage(resp, &usageBody{p: p, clamped: clamped}) {
			return false, nil
		}
		p.Keep()
	default:
		p.Keep()
	}
	return false, nil
}

// readUsage hands resp's body to the caller through b, which reads the
// usage as the caller reads and settles at EOF or Close, when the body is
// JSON or an event stream, and reports whether it did; it leaves any other
// body alone.
func (c LLM) readUsage(resp *http.Response, b *usageBody) bool {
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
func (c LLM) tooLarge(resp *http.Response, sig *headers.Signals) bool {
	if resp.Request != nil {
		if in, _, err := c.estimateRequest(resp.Request); err == nil {
			// The input alone: the output reserved may be a default the
			// vendor does not count.
			for _, q := range sig.Quotas {
				u, _ := serverUnit(q.Name)
				if q.Limit > 0 && (u == llmTokens || u == llmInput) && in > q.Limit {
					return true
				}
			}
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	if head, _, ok := peekedHead(resp.Body); ok {
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
