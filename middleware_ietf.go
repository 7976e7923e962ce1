package throttle

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
)

// The sizes of a limitIETF's tables of RateLimit values, indexed by
// remaining (rows) and reset in seconds (columns), and of Retry-After
// values, by the wait in seconds: a limit of up to stateRows tokens whose
// resets are under stateCols seconds has every state it can be in kept at
// once, and a larger one the states near full, where a limit with room to
// spare spends its time.
const (
	stateRows  = 256
	stateCols  = 64
	retrySlots = 256
)

// limitIETF memoizes, for LimitHandler over a Limiter, the header values
// WriteIETF writes for a status (and refuse the Retry-After of a wait), so
// that an answer whose values were seen before formats none. A memo is a
// pure function of what it was made from, which it keeps and compares on
// every use: RateLimit-Policy of the statuses' names and rates, RateLimit
// of their names, remaining tokens and resets in whole seconds,
// Retry-After of the wait in whole seconds. A limit whose rate or capacity
// changes (SetRate, SetCapacity) is thus never given a stale value: a
// changed rate makes the policy anew, and remaining and reset are read on
// every request. The tables are direct-mapped: a value made for another
// state in the same slot is replaced. As in ietfCache, values are slices
// of capacity equal to their length, put into response headers as they
// are, so that an Add to the field makes a new slice.
type limitIETF struct {
	policy atomic.Pointer[policyMemo]
	states atomic.Pointer[stateMemo]
	retry  [retrySlots]atomic.Pointer[retryMemo]
	never  []string // X-Should-Retry: false, for a wait of -1
}

// policyMemo is the RateLimit-Policy field of statuses with these names
// and rates.
type policyMemo struct {
	names, units []string
	rates        []Rate
	v            []string
}

// stateMemo is the RateLimit values of statuses with these names.
type stateMemo struct {
	names  []string
	quoted []string // each name as WriteIETF writes it
	rows   [stateRows]atomic.Pointer[[stateCols]atomic.Pointer[stateLines]]
}

// stateLines is the RateLimit field of statuses whose remaining tokens and
// resets in whole seconds are key, in pairs.
type stateLines struct {
	key []int64
	v   []string
}

// retryMemo is the Retry-After value of a wait of secs whole seconds.
type retryMemo struct {
	secs int64
	v    []string
}

func newLimitIETF() *limitIETF {
	return &limitIETF{never: []string{"false"}}
}

// write writes status as WriteIETF does, from memos where it has them.
func (m *limitIETF) write(hd http.Header, status []LimitStatus) {
	if len(status) == 0 {
		WriteIETF(hd, status)
		return
	}
	hd["Ratelimit-Policy"] = m.policyOf(status)
	hd["Ratelimit"] = m.stateOf(status)
}

// policyOf returns the RateLimit-Policy field of status.
func (m *limitIETF) policyOf(status []LimitStatus) []string {
	if p := m.policy.Load(); p != nil && p.matches(status) {
		return p.v
	}
	p := &policyMemo{
		names: make([]string, len(status)),
		units: make([]string, len(status)),
		rates: make([]Rate, len(status)),
		v:     make([]string, len(status)),
	}
	for i, s := range status {
		p.names[i], p.units[i], p.rates[i] = s.Name, s.Unit, s.Rate
		q, window := policyWindow(s.Rate)
		p.v[i] = headers.IETFPolicy(headers.QuoteSF(ietfName(s.Name)), s.Unit, q, window)
	}
	m.policy.Store(p) // a race stores an equal value, or one for other limits
	return p.v
}

func (p *policyMemo) matches(status []LimitStatus) bool {
	if len(p.names) != len(status) {
		return false
	}
	for i, s := range status {
		if s.Name != p.names[i] || s.Rate != p.rates[i] || s.Unit != p.units[i] {
			return false
		}
	}
	return true
}

// stateOf returns the RateLimit field of status.
func (m *limitIETF) stateOf(status []LimitStatus) []string {
	tb := m.states.Load()
	if tb == nil || !tb.named(status) {
		tb = &stateMemo{names: make([]string, len(status)), quoted: make([]string, len(status))}
		for i, s := range status {
			tb.names[i], tb.quoted[i] = s.Name, headers.QuoteSF(ietfName(s.Name))
		}
		m.states.Store(tb)
	}
	// The slot: the first status's remaining and reset, mixed with the
	// others'.
	var mix uint64
	for _, s := range status[1:] {
		mix = (mix ^ uint64(s.Remaining)*0x9e3779b97f4a7c15 ^ uint64(ietfSeconds(s.Reset))*0xc2b2ae3d27d4eb4f) * 0xff51afd7ed558ccd
	}
	r0, t0 := uint64(status[0].Remaining), uint64(ietfSeconds(status[0].Reset))
	row := &tb.rows[(r0^mix>>32)%stateRows]
	cols := row.Load()
	if cols == nil {
		cols = new([stateCols]atomic.Pointer[stateLines])
		if !row.CompareAndSwap(nil, cols) {
			cols = row.Load()
		}
	}
	slot := &cols[(t0^mix)%stateCols]
	if e := slot.Load(); e != nil && e.matches(status) {
		return e.v
	}
	e := &stateLines{key: make([]int64, 2*len(status)), v: make([]string, len(status))}
	for i, s := range status {
		reset := ietfReset(s.Reset)
		e.key[2*i], e.key[2*i+1] = s.Remaining, ceilSeconds(reset)
		e.v[i] = headers.IETFState(tb.quoted[i], s.Remaining, reset)
	}
	slot.Store(e)
	return e.v
}

func (tb *stateMemo) named(status []LimitStatus) bool {
	if len(tb.names) != len(status) {
		return false
	}
	for i, s := range status {
		if s.Name != tb.names[i] {
			return false
		}
	}
	return true
}

func (e *stateLines) matches(status []LimitStatus) bool {
	for i, s := range status {
		if e.key[2*i] != s.Remaining || e.key[2*i+1] != ietfSeconds(s.Reset) {
			return false
		}
	}
	return true
}

// ietfReset is the reset WriteIETF writes for reset: never (-1) as the
// longest duration.
func ietfReset(reset time.Duration) time.Duration {
	if reset < 0 {
		return time.Duration(1<<63 - 1)
	}
	return reset
}

// ietfSeconds is the t WriteIETF writes for reset, before clamping.
func ietfSeconds(reset time.Duration) int64 { return ceilSeconds(ietfReset(reset)) }

// setRetry sets Retry-After to wait, or X-Should-Retry to false if wait is
// -1 (never), as refuse does, from memos where it has them.
func (m *limitIETF) setRetry(hd http.Header, wait time.Duration) {
	if wait < 0 {
		hd["X-Should-Retry"] = m.never
		return
	}
	secs := ceilSeconds(wait)
	slot := &m.retry[uint64(secs)%retrySlots]
	if e := slot.Load(); e != nil && e.secs == secs {
		hd["Retry-After"] = e.v
		return
	}
	e := &retryMemo{secs: secs, v: []string{headers.RetryAfter(wait)}}
	slot.Store(e)
	hd["Retry-After"] = e.v
}
