package llm

// usageScanner reads the token usage of an LLM API response as its bytes go
// by, in whatever pieces they come: a JSON body (one object, or Gemini's
// array of chunks) or a server-sent event stream whose data fields are JSON.
// It keeps no byte of the body: its state is a few counters, the JSON
// nesting (one bit a level) and the key being read, so that a stream of any
// length costs a fixed few hundred bytes and no allocation.
//
// A usage object is recognised where the vendors put it: "usage" at the top
// of a document (OpenAI Chat Completions and Responses, Anthropic's
// message_delta), under a top-level "message" or "response" (Anthropic's
// message_start, the Responses API's response.completed), and
// "usageMetadata" at the top (Gemini). Every usage object seen updates the
// counts it holds, the latest value winning: streams report cumulative
// counts. The runes of generated text (string values of content, text,
// arguments, partial_json, thinking, delta and refusal) are counted too, for
// a stream that reports no usage.
type usageScanner struct {
	sse bool

	// Server-sent events: where in a line we are.
	line    sseState
	field   [4]byte // the first bytes of the field name
	fieldN  int     // bytes of the field name; beyond len(field) it is not "data"
	afterCR bool    // the previous byte ended a line with CR: an LF now is part of it

	j jsonScanner

	fields usageFields
	text   int64 // runes of generated text
}

type sseState uint8

const (
	sseLineStart sseState = iota
	sseField              // reading a field name
	sseSpace              // after "data:", where one space is skipped
	sseData               // in the value of a data field
	sseSkip               // in a comment or another field's value
)

// jsonScanner follows the structure of one JSON document, closely enough to
// know the key and container of every value, without validating it fully.
type jsonScanner struct {
	state   jsonState
	depth   int
	arrays  uint64              // bit d-1: the container at depth d is an array
	roles   [maxRoleDepth]jrole // role of the container at depth d (d-1)
	key     keyID               // the key of the value about to be read
	keyBuf  [32]byte
	keyN    int   // bytes of the key read; beyond len(keyBuf) it is no key we know
	num     int64 // the integer being read
	numOK   bool  // it is a non-negative integer so far
	inKey   bool  // the string being read is a key
	counted bool  // the runes of the string being read are generated text
	esc     int8  // in a string: 1 after a backslash, 2..5 in \uXXXX
}

const (
	maxDepth     = 64 // deeper documents are not followed (arrays has 64 bits)
	maxRoleDepth = 4  // usage objects sit at depth 3 at most
)

type jsonState uint8

const (
	jValue      jsonState = iota // a value is expected
	jKeyOrEnd                    // after '{'
	jKey                         // after ',' in an object
	jColon                       // after a key
	jAfterValue                  // after a value: ',' or the end of its container
	jValueOrEnd                  // after '['
	jString                      // in a string
	jNumber                      // in a number
	jLiteral                     // in true, false or null
	jError                       // not JSON we can follow: wait for a reset
)

// jrole is what a container is to the usage scanner.
type jrole uint8

const (
	roleOther     jrole = iota
	roleTop             // a top-level object, or an object in a top-level array
	roleTopArray        // a top-level array (Gemini's stream without SSE)
	roleContainer       // "message" or "response" under a top-level object
	roleUsage           // a usage object
)

type keyID uint8

const (
	keyOther keyID = iota
	keyUsage
	keyUsageMetadata
	keyMessage
	keyResponse
	keyText // a key whose string value is generated text
	// Counts of a usage object, in the order of usageFields.n.
	keyPromptTokens
	keyCompletionTokens
	keyInputTokens
	keyOutputTokens
	keyCacheCreation
	keyPromptTokenCount
	keyCandidatesTokenCount
	keyThoughtsTokenCount
	keyToolUsePromptTokenCount
	keyTotalTokenCount
	keyCountEnd
)

func lookupKey(b []byte) keyID {
	switch string(b) {
	case "usage":
		return keyUsage
	case "usageMetadata":
		return keyUsageMetadata
	case "message":
		return keyMessage
	case "response":
		return keyResponse
	case "content", "text", "arguments", "partial_json", "thinking", "delta", "refusal":
		return keyText
	case "prompt_tokens":
		return keyPromptTokens
	case "completion_tokens":
		return keyCompletionTokens
	case "input_tokens":
		return keyInputTokens
	case "output_tokens":
		return keyOutputTokens
	case "cache_creation_input_tokens":
		return keyCacheCreation
	case "promptTokenCount":
		return keyPromptTokenCount
	case "candidatesTokenCount":
		return keyCandidatesTokenCount
	case "thoughtsTokenCount":
		return keyThoughtsTokenCount
	case "toolUsePromptTokenCount":
		return keyToolUsePromptTokenCount
	case "totalTokenCount":
		return keyTotalTokenCount
	}
	return keyOther
}

const nCounts = int(keyCountEnd - keyPromptTokens)

// usageFields are the counts of the usage objects seen, the latest value of
// each winning.
type usageFields struct {
	n       [nCounts]int64
	seen    uint16 // bit i: n[i] was reported
	invalid bool   // a count was negative, fractional or not a number
}

func (f *usageFields) has(k keyID) bool  { return f.seen&(1<<(k-keyPromptTokens)) != 0 }
func (f *usageFields) get(k keyID) int64 { return f.n[k-keyPromptTokens] }

// usage returns the usage the fields describe, with whether the input and
// the output were reported.
func (f *usageFields) usage() (u Usage, inOK, outOK bool) {
	if f.invalid {
		return Usage{}, false, false
	}
	switch {
	case f.has(keyPromptTokens) || f.has(keyCompletionTokens):
		// OpenAI Chat Completions.
		return Usage{Input: f.get(keyPromptTokens), Output: f.get(keyCompletionTokens)},
			f.has(keyPromptTokens), f.has(keyCompletionTokens)
	case f.has(keyInputTokens) || f.has(keyOutputTokens):
		// OpenAI Responses, Anthropic: cache writes are input, reads are
		// not counted against the input quota.
		return Usage{Input: satAdd(f.get(keyInputTokens), f.get(keyCacheCreation)), Output: f.get(keyOutputTokens)},
			f.has(keyInputTokens), f.has(keyOutputTokens)
	case f.seen != 0:
		// Gemini: thoughts are billed as output; the total, when larger,
		// covers what the parts leave out.
		in := satAdd(f.get(keyPromptTokenCount), f.get(keyToolUsePromptTokenCount))
		out := satAdd(f.get(keyCandidatesTokenCount), f.get(keyThoughtsTokenCount))
		if t := f.get(keyTotalTokenCount); t-in > out {
			out = t - in
		}
		inOK = f.has(keyPromptTokenCount) || f.has(keyTotalTokenCount)
		outOK = f.has(keyCandidatesTokenCount) || f.has(keyTotalTokenCount)
		return Usage{Input: in, Output: out}, inOK, outOK
	}
	return Usage{}, false, false
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// write scans the next bytes of the body.
func (s *usageScanner) write(p []byte) {
	if !s.sse {
		s.scanJSON(p)
		return
	}
	for i := 0; i < len(p); {
		c := p[i]
		if s.afterCR {
			s.afterCR = false
			if c == '\n' {
				i++
				continue
			}
		}
		switch s.line {
		case sseLineStart:
			switch c {
			case '\n', '\r':
				// A blank line ends the event: its data was one document.
				s.j = jsonScanner{}
				s.afterCR = c == '\r'
				i++
				continue
			case ':':
				s.line = sseSkip
				i++
				continue
			}
			s.line, s.fieldN = sseField, 0
		case sseField:
			switch c {
			case ':':
				s.line = sseSkip
				if s.isData() {
					s.line = sseSpace
				}
			case '\n', '\r':
				// A field with no value: "data" alone adds an empty line.
				if s.isData() {
					s.scanJSON(newline)
				}
				s.endLine(c)
			default:
				if s.fieldN < len(s.field) {
					s.field[s.fieldN] = c
				}
				s.fieldN++
			}
			i++
		case sseSpace:
			s.line = sseData
			if c == ' ' {
				i++
			}
		case sseData:
			// The value runs to the end of the line: scan it in one go.
			j := i
			for j < len(p) && p[j] != '\n' && p[j] != '\r' {
				j++
			}
			s.scanJSON(p[i:j])
			if j < len(p) {
				// Data lines of one event are joined with LF.
				s.scanJSON(newline)
				s.endLine(p[j])
				j++
			}
			i = j
		case sseSkip:
			for i < len(p) && p[i] != '\n' && p[i] != '\r' {
				i++
			}
			if i < len(p) {
				s.endLine(p[i])
				i++
			}
		}
	}
}

var newline = []byte{'\n'}

func (s *usageScanner) isData() bool {
	return s.fieldN == 4 && string(s.field[:]) == "data"
}

func (s *usageScanner) endLine(c byte) {
	s.line = sseLineStart
	s.afterCR = c == '\r'
}

// scanJSON scans bytes of a JSON document.
func (s *usageScanner) scanJSON(p []byte) {
	j := &s.j
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch j.state {
		case jString:
			// The bulk of a body is strings: run through them.
			k := i
			if j.esc == 0 {
				for k < len(p) && p[k] != '"' && p[k] != '\\' {
					k++
				}
				s.stringBytes(p[i:k])
				if k == len(p) {
					return
				}
				i, c = k, p[k]
			}
			s.stringByte(c)
			continue
		case jNumber:
			if '0' <= c && c <= '9' {
				if j.num > (1<<63-1-9)/10 {
					j.numOK = false
				}
				j.num = j.num*10 + int64(c-'0')
				continue
			}
			switch c {
			case '.', 'e', 'E', '+', '-':
				j.numOK = false
				continue
			}
			s.endNumber()
			// c ends the number: read it as what follows a value.
		case jLiteral:
			if 'a' <= c && c <= 'z' {
				continue
			}
			j.state = jAfterValue
		case jError:
			return
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		s.structural(c)
	}
}

// structural reads c, a byte that is not white space outside any string,
// number or literal: the JSON grammar's punctuation, or a value's start.
func (s *usageScanner) structural(c byte) {
	j := &s.j
	switch j.state {
	case jValue, jValueOrEnd:
		if c == ']' && j.state == jValueOrEnd {
			j.pop()
			return
		}
		s.startValue(c)
	case jKeyOrEnd, jKey:
		switch {
		case c == '"':
			j.state, j.inKey, j.keyN, j.esc = jString, true, 0, 0
		case c == '}' && j.state == jKeyOrEnd:
			j.pop()
		default:
			j.state = jError
		}
	case jColon:
		if c != ':' {
			j.state = jError
			return
		}
		j.state = jValue
	case jAfterValue:
		switch {
		case j.depth == 0:
			// Another document (JSON lines): read it too.
			s.startValue(c)
		case c == ',':
			j.state = jKey
			if j.inArray() {
				j.state, j.key = jValue, keyOther
			}
		case c == '}' && !j.inArray(), c == ']' && j.inArray():
			j.pop()
		default:
			j.state = jError
		}
	}
}

// startValue starts the value whose first byte is c.
func (s *usageScanner) startValue(c byte) {
	j := &s.j
	switch {
	case c == '{' || c == '[':
		if j.depth == maxDepth {
			j.state = jError
			return
		}
		role := roleOther
		parent := j.role()
		switch {
		case c == '[':
			if j.depth == 0 {
				role = roleTopArray
			}
		case j.depth == 0 || parent == roleTopArray:
			role = roleTop
		case parent == roleTop && (j.key == keyUsage || j.key == keyUsageMetadata):
			role = roleUsage
		case parent == roleTop && (j.key == keyMessage || j.key == keyResponse):
			role = roleContainer
		case parent == roleContainer && j.key == keyUsage:
			role = roleUsage
		}
		j.depth++
		if j.depth <= maxRoleDepth {
			j.roles[j.depth-1] = role
		}
		if c == '[' {
			j.arrays |= 1 << (j.depth - 1)
			j.state, j.key = jValueOrEnd, keyOther
		} else {
			j.arrays &^= 1 << (j.depth - 1)
			j.state = jKeyOrEnd
		}
	case c == '"':
		j.state, j.inKey, j.esc = jString, false, 0
		j.counted = j.key == keyText && j.depth > 0 && !j.inArray()
	case c == '-' || '0' <= c && c <= '9':
		j.state, j.num, j.numOK = jNumber, 0, c != '-'
		if c != '-' {
			j.num = int64(c - '0')
		}
	case c == 't' || c == 'f' || c == 'n':
		j.state = jLiteral
	default:
		j.state = jError
	}
}

func (j *jsonScanner) role() jrole {
	if j.depth == 0 || j.depth > maxRoleDepth {
		return roleOther
	}
	return j.roles[j.depth-1]
}

func (j *jsonScanner) inArray() bool {
	return j.depth > 0 && j.arrays&(1<<(j.depth-1)) != 0
}

func (j *jsonScanner) pop() {
	j.depth--
	j.state, j.key = jAfterValue, keyOther
}

// stringBytes takes a run of string bytes free of quotes and backslashes.
func (s *usageScanner) stringBytes(b []byte) {
	j := &s.j
	switch {
	case j.inKey:
		if j.keyN < len(j.keyBuf) {
			copy(j.keyBuf[j.keyN:], b)
		}
		j.keyN += len(b)
	case j.counted:
		for _, c := range b {
			if c&0xC0 != 0x80 {
				s.text++
			}
		}
	}
}

// stringByte takes a quote or backslash in a string, or any byte of an
// escape sequence.
func (s *usageScanner) stringByte(c byte) {
	j := &s.j
	switch j.esc {
	case 0:
		if c == '\\' {
			j.esc = 1
			if j.inKey {
				j.keyN = len(j.keyBuf) + 1 // an escaped key is no key we know
			} else if j.counted {
				s.text++
			}
			return
		}
		// The closing quote.
		if j.inKey {
			j.key = keyOther
			if j.keyN <= len(j.keyBuf) {
				j.key = lookupKey(j.keyBuf[:j.keyN])
			}
			j.state = jColon
			return
		}
		j.state = jAfterValue
	case 1:
		j.esc = 0
		if c == 'u' {
			j.esc = 2
		}
	default:
		j.esc = (j.esc + 1) % 6
	}
}

// endNumber records a number that ends here, if it is a usage count.
func (s *usageScanner) endNumber() {
	j := &s.j
	j.state = jAfterValue
	if j.key < keyPromptTokens || j.key >= keyCountEnd || j.role() != roleUsage || j.inArray() {
		return
	}
	if !j.numOK {
		s.fields.invalid = true
		return
	}
	i := j.key - keyPromptTokens
	s.fields.n[i] = j.num
	s.fields.seen |= 1 << i
}

// end finishes the body: a number at its very end is complete.
func (s *usageScanner) end() {
	if s.j.state == jNumber {
		s.endNumber()
	}
}

// complete reports whether the JSON scanned so far is whole documents that
// it could follow.
func (s *usageScanner) complete() bool {
	return s.j.depth == 0 && s.j.state == jAfterValue
}
