package httpthrottle

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
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

// peekedBody is a response body of which a prefix was read: it yields the
// prefix, then the rest of the body. While the read of the prefix is still
// under way (the body stalled), a Read waits for it, as a Read of the body
// itself would have.
type peekedBody struct {
	rc      io.ReadCloser
	mu      sync.Mutex
	pending chan peekResult // until the prefix has been read
	head    []byte
	off     int
	err     error       // what follows head: nil (read on from rc), io.EOF, or a read error
	whole   atomic.Bool // head is the whole body, and rc is closed
}

type peekResult struct {
	head []byte
	err  error
}

// peek reads up to refusalBytes of resp's body, waiting at most wait for
// them, and replaces the body with one that yields the same bytes. It
// returns what was read, and stalled when the body had not come in time
// (then nothing was read, and the read goes on in the background for the
// caller).
func peek(resp *http.Response, wait time.Duration) (head []byte, stalled bool) {
	rc := resp.Body
	ch := make(chan peekResult, 1)
	go func() {
		buf := make([]byte, refusalBytes)
		n, err := io.ReadFull(rc, buf)
		ch <- peekResult{buf[:n], err}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	b := &peekedBody{rc: rc}
	select {
	case r := <-ch:
		b.set(r)
	case <-timer.C:
		b.pending = ch
		resp.Body = b
		return nil, true
	}
	resp.Body = b
	return b.head, false
}

// set records the read of the prefix; a whole body frees its connection
// (and in-flight slot) at once.
func (b *peekedBody) set(r peekResult) {
	b.head = r.head
	switch r.err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		b.err = io.EOF
		b.whole.Store(true)
		b.rc.Close()
	default:
		b.err = r.err
	}
}

func (b *peekedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending != nil {
		b.set(<-b.pending)
		b.pending = nil
	}
	if b.off < len(b.head) {
		n := copy(p, b.head[b.off:])
		b.off += n
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rc.Read(p)
}

// Close closes the body; a read of the prefix still under way ends with
// it.
func (b *peekedBody) Close() error {
	// No lock: a Read may hold it, waiting for the prefix this Close ends.
	if b.whole.Load() {
		return nil
	}
	return b.rc.Close()
}

// complete reports whether the body is known to be whole in memory, so that
// reading it cannot block.
func (b *peekedBody) complete() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending == nil && b.whole.Load()
}

// readRefusal reads what the body of a 429 or 403 says into x, and merges
// a wait it names into the response's signals: Gemini's RetryInfo counts
// as a Retry-After when the header has none.
func (x *exchange) readRefusal(resp *http.Response) {
	x.refusal, x.stalled = headers.Refusal{}, false
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	head, stalled := peek(resp, x.t.refusalWait)
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

// peekedHead returns the prefix of a body that readRefusal read, and
// whether it is the whole body; ok is false for any other body.
func peekedHead(body io.ReadCloser) (head []byte, whole, ok bool) {
	b, ok := body.(*peekedBody)
	if !ok {
		return nil, false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending != nil {
		return nil, false, true
	}
	return bytes.Clone(b.head[b.off:]), b.whole.Load(), true
}
