package headers

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// PeekedBody is a response body of which a prefix was read: it yields the
// prefix, then the rest of the body. While the read of the prefix is still
// under way (the body stalled), a Read waits for it, as a Read of the body
// itself would have.
type PeekedBody struct {
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

// Peek reads up to n bytes of resp's body, waiting at most wait for them
// (real time: it bounds network I/O), and replaces the body with a
// *PeekedBody that yields the same bytes. It
// returns what was read, and stalled when the body had not come in time
// (then nothing was read, and the read goes on in the background for the
// caller).
func Peek(resp *http.Response, n int, wait time.Duration) (head []byte, stalled bool) {
	rc := resp.Body
	ch := make(chan peekResult, 1)
	go func() {
		buf := make([]byte, n)
		n, err := io.ReadFull(rc, buf)
		ch <- peekResult{buf[:n], err}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	b := &PeekedBody{rc: rc}
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
func (b *PeekedBody) set(r peekResult) {
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

func (b *PeekedBody) Read(p []byte) (int, error) {
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
func (b *PeekedBody) Close() error {
	// No lock: a Read may hold it, waiting for the prefix this Close ends.
	if b.whole.Load() {
		return nil
	}
	return b.rc.Close()
}

// Complete reports whether the body is known to be whole in memory, so that
// reading it cannot block.
func (b *PeekedBody) Complete() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending == nil && b.whole.Load()
}

// PeekedHead returns the prefix of a body that Peek read and not yet
// yielded, and whether it is the whole body; ok is false for any other
// body.
func PeekedHead(body io.ReadCloser) (head []byte, whole, ok bool) {
	b, ok := body.(*PeekedBody)
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
