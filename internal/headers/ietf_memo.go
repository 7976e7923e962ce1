package headers

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/fields"
)

// The sizes of an IETFMemo's tables: of RateLimit-Policy fields, by a hash
// of the limits; of RateLimit fields, by remaining (rows) and reset in
// seconds (columns), so that a limit of up to stateRows tokens whose
// resets are under stateCols seconds has every state it can be in kept at
// once, and a larger one the states near full, where a limit with room to
// spare spends its time; and of Retry-After values, by the wait in seconds.
const (
	policySlots = 16
	stateRows   = 256
	stateCols   = 64
	retrySlots  = 256
)

// IETFMemo memoizes, for a server's middleware, the RateLimit-Policy and
// RateLimit values of a status (and the Retry-After of a wait), so that an
// answer whose values were seen before formats none. A memo is a
// pure function of what it was made from, which it keeps and compares on
// every use: RateLimit-Policy of the statuses' names, units and rates,
// RateLimit of their names, remaining tokens and resets in whole seconds,
// Retry-After of the wait in whole seconds. A limit whose rate or capacity
// changes (SetRate, SetCapacity) is thus never given a stale value: a
// changed rate makes the policy anew, and remaining and reset are read on
// every request. The tables are direct-mapped, slots indexed by a hash of
// what their values are made from, so that limiters of other limits
// (several routes', say) mostly keep their own: a value made for other
// statuses in the same slot is replaced. Values are slices of capacity equal to
// their length, put into response headers as they are, so that an Add to
// the field makes a new slice.
type IETFMemo struct {
	policy [policySlots]atomic.Pointer[policyMemo]
	states [stateRows]atomic.Pointer[[stateCols]atomic.Pointer[stateLines]] // rows made on first use
	retry  [retrySlots]atomic.Pointer[retryMemo]
	never  []string // X-Should-Retry: false, for a wait of -1
}

// policyMemo is the RateLimit-Policy field of statuses with these names,
// units and rates.
type policyMemo struct {
	names, units []string
	rates        []throttle.Rate
	v            []string
}

// stateLines is the RateLimit field of statuses with these names whose
// remaining tokens and resets in whole seconds are key, in pairs.
type stateLines struct {
	names []string
	key   []int64
	v     []string
}

// retryMemo is the Retry-After value of a wait of secs whole seconds.
type retryMemo struct {
	secs int64
	v    []string
}

// NewIETFMemo returns an empty memo.
func NewIETFMemo() *IETFMemo {
	return &IETFMemo{never: []string{"false"}}
}

// Write sets the RateLimit-Policy and RateLimit fields of status, one
// policy per limit, from memos where it has them; with no status it
// removes them.
func (m *IETFMemo) Write(hd http.Header, status []throttle.LimitStatus) {
	if len(status) == 0 {
		delete(hd, "Ratelimit-Policy")
		delete(hd, "Ratelimit")
		return
	}
	hd["Ratelimit-Policy"] = m.policyOf(status)
	hd["Ratelimit"] = m.stateOf(status)
}

// policyOf returns the RateLimit-Policy field of status.
func (m *IETFMemo) policyOf(status []throttle.LimitStatus) []string {
	var mix uint64
	for _, s := range status {
		mix = (mix ^ nameHash(s.Name) ^ uint64(s.Rate.Tokens())*0x9e3779b97f4a7c15 ^ uint64(s.Rate.Period())*0xc2b2ae3d27d4eb4f) * 0xff51afd7ed558ccd
	}
	slot := &m.policy[(mix>>32)%policySlots]
	if p := slot.Load(); p != nil && p.matches(status) {
		return p.v
	}
	p := &policyMemo{
		names: make([]string, len(status)),
		units: make([]string, len(status)),
		rates: make([]throttle.Rate, len(status)),
		v:     make([]string, len(status)),
	}
	for i, s := range status {
		p.names[i], p.units[i], p.rates[i] = s.Name, s.Unit, s.Rate
		q, window := fields.PolicyWindow(s.Rate.Tokens(), s.Rate.Period())
		p.v[i] = fields.IETFPolicy(fields.Quote(fields.PolicyName(s.Name)), s.Unit, q, window)
	}
	slot.Store(p) // a race stores an equal value, or one for other limits
	return p.v
}

func (p *policyMemo) matches(status []throttle.LimitStatus) bool {
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

// nameHash is a cheap hash of a limit's name, from its length and its
// first and last bytes: enough to tell apart the few limits one handler
// serves.
func nameHash(name string) uint64 {
	h := uint64(len(name)) * 0x94d049bb133111eb
	if name != "" {
		h ^= uint64(name[0])<<8 | uint64(name[len(name)-1])
	}
	return h
}

// stateOf returns the RateLimit field of status.
func (m *IETFMemo) stateOf(status []throttle.LimitStatus) []string {
	// The slot: the first status's remaining and reset, mixed with the
	// others' and with the names.
	var mix uint64
	for i, s := range status {
		mix = (mix ^ nameHash(s.Name)) * 0xff51afd7ed558ccd
		if i > 0 {
			mix = (mix ^ uint64(s.Remaining)*0x9e3779b97f4a7c15 ^ uint64(ietfSeconds(s.Reset))*0xc2b2ae3d27d4eb4f) * 0xff51afd7ed558ccd
		}
	}
	r0, t0 := uint64(status[0].Remaining), uint64(ietfSeconds(status[0].Reset))
	row := &m.states[(r0^mix>>32)%stateRows]
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
	e := &stateLines{names: make([]string, len(status)), key: make([]int64, 2*len(status)), v: make([]string, len(status))}
	for i, s := range status {
		reset := ietfReset(s.Reset)
		e.names[i], e.key[2*i], e.key[2*i+1] = s.Name, s.Remaining, fields.CeilDiv(reset, time.Second)
		e.v[i] = fields.IETFState(fields.Quote(fields.PolicyName(s.Name)), s.Remaining, reset)
	}
	slot.Store(e)
	return e.v
}

func (e *stateLines) matches(status []throttle.LimitStatus) bool {
	if len(e.names) != len(status) {
		return false
	}
	for i, s := range status {
		if e.key[2*i] != s.Remaining || e.key[2*i+1] != ietfSeconds(s.Reset) || e.names[i] != s.Name {
			return false
		}
	}
	return true
}

// ietfReset is the reset written for reset: never (-1) as the
// longest duration.
func ietfReset(reset time.Duration) time.Duration {
	if reset < 0 {
		return time.Duration(1<<63 - 1)
	}
	return reset
}

// ietfSeconds is the t written for reset, before clamping.
func ietfSeconds(reset time.Duration) int64 { return fields.CeilDiv(ietfReset(reset), time.Second) }

// SetRetry sets Retry-After to wait, or X-Should-Retry to false if wait is
// -1 (never), from memos where it has them.
func (m *IETFMemo) SetRetry(hd http.Header, wait time.Duration) {
	if wait < 0 {
		hd["X-Should-Retry"] = m.never
		return
	}
	secs := fields.CeilDiv(wait, time.Second)
	slot := &m.retry[uint64(secs)%retrySlots]
	if e := slot.Load(); e != nil && e.secs == secs {
		hd["Retry-After"] = e.v
		return
	}
	e := &retryMemo{secs: secs, v: []string{fields.RetryAfter(wait)}}
	slot.Store(e)
	hd["Retry-After"] = e.v
}
