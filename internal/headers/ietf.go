package headers

import "time"

// ParseRateLimitPolicy parses one RateLimit-Policy field value
// (draft-ietf-httpapi-ratelimit-headers-10), such as
// `"permin";q=50;w=60, "perhr";q=1000;w=3600`, into one Quota per policy with
// Family FamilyIETF, Name the policy name, Limit the q parameter, Window the
// w parameter in seconds (-1 when absent) and Remaining and Reset -1.
//
// The value must be a Structured Field List (RFC 8941); on a syntax error the
// whole value is ignored. A member whose name is neither a String nor a Token
// (tokens are read for the sake of older drafts), whose q is missing or not a
// non-negative Integer, or whose w is present but not a positive Integer, is
// skipped, as is a member repeating an earlier name; other parameters (qu,
// pk, ...) are ignored. ok is false when anything was ignored; the valid
// members are returned either way. Several field lines may be joined with
// ", " into one value, as RFC 9110 allows.
func ParseRateLimitPolicy(v string) (policies []Quota, ok bool) {
	var ix ietfIndex
	return appendPolicies(nil, &ix, v)
}

// ParseRateLimit parses one RateLimit field value
// (draft-ietf-httpapi-ratelimit-headers-10), such as `"default";r=50;t=30`,
// into one Quota per member with Family FamilyIETF, Name the policy name,
// Remaining the r parameter, Reset the t parameter in seconds (-1 when
// absent; it saturates at the largest time.Duration) and Limit and Window -1.
// Syntax errors, invalid members (r missing or not a non-negative Integer, t
// present but not a non-negative Integer, repeated names) and ok are handled
// as by [ParseRateLimitPolicy]. A response's Retry-After takes precedence over
// t.
func ParseRateLimit(v string) (limits []Quota, ok bool) {
	var ix ietfIndex
	return mergeLimits(nil, &ix, v)
}

// appendPolicies appends the policies of v to dst, skipping names already in
// dst[ix.from:].
func appendPolicies(dst []Quota, ix *ietfIndex, v string) ([]Quota, bool) {
	if !validSFList(v) {
		return dst, false
	}
	ok := true
	l := newSFList(v)
	var m sfMember
	for l.next(&m) {
		name, named := sfName(m.v)
		unit, unitOK := sfUnit(m.qu)
		if !named || m.q.kind != sfInteger || m.q.n < 0 ||
			m.w.kind != sfNone && (m.w.kind != sfInteger || m.w.n <= 0) ||
			!unitOK || ix.find(dst, name) >= 0 {
			ok = false
			continue
		}
		window := time.Duration(-1)
		if m.w.kind != sfNone {
			window = decimal{whole: uint64(m.w.n), scale: 1}.duration(time.Second)
		}
		dst = append(dst, Quota{Family: FamilyIETF, Name: name, Unit: unit, Limit: m.q.n, Remaining: -1, Reset: -1, Window: window})
		ix.added(dst)
	}
	return dst, ok
}

// sfUnit reads a policy's qu parameter: "" for requests, the default, and
// the unit otherwise ("content-bytes", "concurrent-requests", or one the
// draft does not list). The draft makes it a String; a Token is taken too,
// as servers send either. Any other type makes the policy invalid.
func sfUnit(v sfValue) (string, bool) {
	switch {
	case v.kind == sfNone:
		return "", true
	case v.kind != sfString && v.kind != sfToken:
		return "", false
	case v.s == "requests":
		return "", true
	}
	return v.s, true
}

// mergeLimits applies the members of RateLimit value v to the IETF quotas in
// dst[ix.from:] with the same name, appending a quota for each name without
// one. A name that already has a Remaining was repeated and is skipped.
func mergeLimits(dst []Quota, ix *ietfIndex, v string) ([]Quota, bool) {
	if !validSFList(v) {
		return dst, false
	}
	ok := true
	l := newSFList(v)
	var m sfMember
	for l.next(&m) {
		name, named := sfName(m.v)
		if !named || m.r.kind != sfInteger || m.r.n < 0 ||
			m.t.kind != sfNone && (m.t.kind != sfInteger || m.t.n < 0) {
			ok = false
			continue
		}
		i := ix.find(dst, name)
		if i < 0 {
			dst = append(dst, Quota{Family: FamilyIETF, Name: name, Limit: -1, Remaining: -1, Reset: -1, Window: -1})
			ix.added(dst)
			i = len(dst) - 1
		} else if dst[i].Remaining >= 0 {
			ok = false
			continue
		}
		dst[i].Remaining = m.r.n
		if m.t.kind != sfNone {
			dst[i].Reset = decimal{whole: uint64(m.t.n), scale: 1}.duration(time.Second)
		}
	}
	return dst, ok
}

func sfName(v sfValue) (string, bool) {
	return v.s, v.kind == sfString || v.kind == sfToken
}

// ietfIndex finds the IETF quota of a name among qs[from:], the quotas of
// one response's RateLimit-Policy and RateLimit fields. A few policies are
// searched in place; past linearIETF of them a map takes over, so that a
// response with 100,000 policies costs time linear in its size, not the
// quadratic time of searching all earlier names for each new one.
type ietfIndex struct {
	from  int
	names map[string]int // name to index in qs, once built
}

// linearIETF is the most quotas searched one by one.
const linearIETF = 16

func (ix *ietfIndex) find(qs []Quota, name string) int {
	if ix.names != nil {
		if i, ok := ix.names[name]; ok {
			return i
		}
		return -1
	}
	for i := ix.from; i < len(qs); i++ {
		if qs[i].Name == name {
			return i
		}
	}
	return -1
}

// added records the quota just appended to qs.
func (ix *ietfIndex) added(qs []Quota) {
	switch n := len(qs) - ix.from; {
	case ix.names != nil:
		ix.names[qs[len(qs)-1].Name] = len(qs) - 1
	case n > linearIETF:
		ix.names = make(map[string]int, 2*n)
		for i := ix.from; i < len(qs); i++ {
			ix.names[qs[i].Name] = i
		}
	}
}
