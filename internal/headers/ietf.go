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
	return appendPolicies(nil, v)
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
	return mergeLimits(nil, 0, v)
}

// appendPolicies appends the policies of v to dst, skipping names already in
// dst.
func appendPolicies(dst []Quota, v string) ([]Quota, bool) {
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
			!unitOK || findIETF(dst, 0, name) >= 0 {
			ok = false
			continue
		}
		window := time.Duration(-1)
		if m.w.kind != sfNone {
			window = decimal{whole: uint64(m.w.n), scale: 1}.duration(time.Second)
		}
		dst = append(dst, Quota{Family: FamilyIETF, Name: name, Unit: unit, Limit: m.q.n, Remaining: -1, Reset: -1, Window: window})
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
// dst[from:] with the same name, appending a quota for each name without one.
// A name that already has a Remaining was repeated and is skipped.
func mergeLimits(dst []Quota, from int, v string) ([]Quota, bool) {
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
		i := findIETF(dst, from, name)
		if i < 0 {
			dst = append(dst, Quota{Family: FamilyIETF, Name: name, Limit: -1, Remaining: -1, Reset: -1, Window: -1})
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

func findIETF(qs []Quota, from int, name string) int {
	for i := from; i < len(qs); i++ {
		if qs[i].Family == FamilyIETF && qs[i].Name == name {
			return i
		}
	}
	return -1
}
