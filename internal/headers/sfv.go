package headers

import "strings"

// This file parses the part of Structured Field Values (RFC 8941, and the
// date and display-string types RFC 9651 adds) that the IETF RateLimit
// fields need: a List of Items or Inner Lists with Parameters. Every construct
// is checked for syntax, as a field with any syntax error must be ignored
// whole; only the bare item of a member and the parameters q, w, r, t and
// qu are kept.

type sfKind uint8

const (
	sfNone sfKind = iota // absent parameter
	sfInteger
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplayString
	sfInnerList
)

// sfValue is a bare item. n holds an Integer or Date; s holds the content of
// a String (unescaped) or a Token.
type sfValue struct {
	kind sfKind
	n    int64
	s    string
}

// sfMember is one member of a List with the parameters this package reads.
// A repeated parameter overwrites the earlier one, as RFC 8941 §4.2.3.2
// requires.
type sfMember struct {
	v              sfValue
	q, w, r, t, qu sfValue
}

// sfList walks the members of one List field value.
type sfList struct {
	s      string
	i      int
	failed bool
}

func newSFList(v string) sfList {
	return sfList{s: trimOWS(v)}
}

// validSFList reports whether v parses as a List.
func validSFList(v string) bool {
	l := newSFList(v)
	var m sfMember
	for l.next(&m) {
	}
	return !l.failed
}

// next parses the next member into m. It returns false at the end of the
// list and on a syntax error, after which failed is true.
func (l *sfList) next(m *sfMember) bool {
	if l.failed || l.i >= len(l.s) {
		return false
	}
	if l.i > 0 {
		// After a member: OWS "," OWS, and a member must follow.
		l.skipOWS()
		if !l.eat(',') {
			return l.fail()
		}
		l.skipOWS()
		if l.i >= len(l.s) {
			return l.fail()
		}
	}
	*m = sfMember{}
	if l.peek() == '(' {
		if !l.innerList() {
			return l.fail()
		}
		m.v.kind = sfInnerList
	} else if !l.bareItem(&m.v) {
		return l.fail()
	}
	if !l.params(m) {
		return l.fail()
	}
	l.skipOWS()
	return true
}

func (l *sfList) fail() bool {
	l.failed = true
	return false
}

func (l *sfList) peek() byte {
	if l.i < len(l.s) {
		return l.s[l.i]
	}
	return 0
}

func (l *sfList) eat(c byte) bool {
	if l.peek() == c && l.i < len(l.s) {
		l.i++
		return true
	}
	return false
}

func (l *sfList) skipSP() {
	for l.i < len(l.s) && l.s[l.i] == ' ' {
		l.i++
	}
}

func (l *sfList) skipOWS() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t') {
		l.i++
	}
}

// innerList parses "(" *SP [item *(1*SP item)] *SP ")" and its parameters,
// discarding them.
func (l *sfList) innerList() bool {
	l.i++ // '('
	var item sfValue
	var ignored sfMember
	for {
		l.skipSP()
		if l.eat(')') {
			return true
		}
		if !l.bareItem(&item) || !l.params(&ignored) {
			return false
		}
		if c := l.peek(); c != ' ' && c != ')' {
			return false
		}
	}
}

// params parses *( ";" *SP key [ "=" bare-item ] ).
func (l *sfList) params(m *sfMember) bool {
	for l.eat(';') {
		l.skipSP()
		key, ok := l.key()
		if !ok {
			return false
		}
		v := sfValue{kind: sfBoolean, n: 1} // a parameter without value is true
		if l.eat('=') && !l.bareItem(&v) {
			return false
		}
		switch key {
		case "q":
			m.q = v
		case "w":
			m.w = v
		case "r":
			m.r = v
		case "t":
			m.t = v
		case "qu":
			m.qu = v
		}
	}
	return true
}

// key parses ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func (l *sfList) key() (string, bool) {
	start := l.i
	if c := l.peek(); !(c >= 'a' && c <= 'z' || c == '*') {
		return "", false
	}
	for l.i++; l.i < len(l.s); l.i++ {
		c := l.s[l.i]
		if !(c >= 'a' && c <= 'z' || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
	}
	return l.s[start:l.i], true
}

func (l *sfList) bareItem(v *sfValue) bool {
	switch c := l.peek(); {
	case c == '-' || isDigit(c):
		return l.number(v)
	case c == '"':
		l.i++
		return l.str(v, sfString)
	case c == '*' || isAlpha(c):
		return l.token(v)
	case c == ':':
		return l.bytes(v)
	case c == '?':
		l.i++
		switch l.peek() {
		case '0', '1':
			*v = sfValue{kind: sfBoolean, n: int64(l.s[l.i] - '0')}
			l.i++
			return true
		}
		return false
	case c == '@':
		l.i++
		if !l.number(v) || v.kind != sfInteger {
			return false
		}
		v.kind = sfDate
		return true
	case c == '%':
		l.i++
		if !l.eat('"') {
			return false
		}
		return l.displayString(v)
	}
	return false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fraction digits), RFC 8941 §4.2.4.
func (l *sfList) number(v *sfValue) bool {
	neg := l.eat('-')
	if !isDigit(l.peek()) {
		return false
	}
	var n int64
	digits, fracDigits := 0, -1 // fracDigits >= 0 once '.' is seen
	for ; l.i < len(l.s); l.i++ {
		c := l.s[l.i]
		switch {
		case isDigit(c):
			if fracDigits >= 0 {
				fracDigits++
			} else {
				n = n*10 + int64(c-'0')
				digits++
			}
		case c == '.' && fracDigits < 0:
			if digits > 12 {
				return false
			}
			fracDigits = 0
		default:
			goto done
		}
		if fracDigits < 0 && digits > 15 || fracDigits > 3 {
			return false
		}
	}
done:
	if fracDigits == 0 {
		return false // "1." has no fraction digits
	}
	if neg {
		n = -n
	}
	if fracDigits > 0 {
		*v = sfValue{kind: sfDecimal}
	} else {
		*v = sfValue{kind: sfInteger, n: n}
	}
	return true
}

// str parses the rest of a String after its opening quote: printable ASCII,
// with \" and \\ the only escapes.
func (l *sfList) str(v *sfValue, kind sfKind) bool {
	start := l.i
	escaped := false
	for ; l.i < len(l.s); l.i++ {
		switch c := l.s[l.i]; {
		case c == '\\':
			l.i++
			if l.i == len(l.s) || l.s[l.i] != '"' && l.s[l.i] != '\\' {
				return false
			}
			escaped = true
		case c == '"':
			s := l.s[start:l.i]
			l.i++
			if escaped {
				s = unescapeSF(s)
			}
			*v = sfValue{kind: kind, s: s}
			return true
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false // no closing quote
}

func unescapeSF(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// displayString checks the rest of an RFC 9651 Display String after %":
// printable ASCII except that '%' must start two lower-case hex digits. Its
// content is not needed and is not decoded.
func (l *sfList) displayString(v *sfValue) bool {
	for ; l.i < len(l.s); l.i++ {
		switch c := l.s[l.i]; {
		case c == '%':
			if l.i+2 >= len(l.s) || !isLowerHex(l.s[l.i+1]) || !isLowerHex(l.s[l.i+2]) {
				return false
			}
			l.i += 2
		case c == '"':
			l.i++
			*v = sfValue{kind: sfDisplayString}
			return true
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}

func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }

// token parses ( ALPHA / "*" ) *( tchar / ":" / "/" ).
func (l *sfList) token(v *sfValue) bool {
	start := l.i
	for l.i++; l.i < len(l.s) && isTokenChar(l.s[l.i]); l.i++ {
	}
	*v = sfValue{kind: sfToken, s: l.s[start:l.i]}
	return true
}

func isTokenChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~', ':', '/':
		return true
	}
	return false
}

// bytes parses ":" *base64 ":"; the content is not needed and not decoded.
func (l *sfList) bytes(v *sfValue) bool {
	for l.i++; l.i < len(l.s); l.i++ {
		c := l.s[l.i]
		if c == ':' {
			l.i++
			*v = sfValue{kind: sfBytes}
			return true
		}
		if !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return false
}
