package trace

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrOrder is returned for a request time earlier than the one before it.
var ErrOrder = errors.New("earlier than the previous request")

// bom is the UTF-8 encoding of U+FEFF, the byte-order mark.
const bom = "\ufeff"

// Request is one line of a trace.
type Request struct {
	Time time.Duration // since time 0 of the trace, exact to the nanosecond
	Cost int64         // 1 when the line gives none
	Key  string        // "" when the line gives none
	// HasCost reports whether the line gave a cost.
	HasCost bool
}

// Error reports a bad line of a trace.
type Error struct {
	Line  int    // 1-based line number
	Field string // "time", "cost", "key" or "line"
	Value string // the text of the field
	Err   error  // one of the package's errors, or a CSV error
}

func (e *Error) Error() string {
	if e.Field == "line" {
		return fmt.Sprintf("trace line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("trace line %d: %s %q: %v", e.Line, e.Field, e.Value, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Reader reads a request trace in CSV: one request per record, with fields
// time (decimal seconds, non-negative, never decreasing), then an optional
// cost (a positive whole number, default 1), then an optional key (any
// text). Blank lines and lines starting with '#' are skipped, spaces around
// numbers are ignored, and a first record whose first field is "time" is
// taken as a header and skipped. Memory does not grow with the trace.
type Reader struct {
	r      *csv.Reader
	prev   time.Duration
	first  bool
	keyBuf string
}

// NewReader returns a Reader reading from r. A UTF-8 byte-order mark at
// the start, as spreadsheet programs write, is skipped.
func NewReader(r io.Reader) *Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(bom)); err == nil && string(b) == bom {
		br.Discard(len(bom))
	}
	c := csv.NewReader(br)
	c.FieldsPerRecord = -1
	c.Comment = '#'
	c.ReuseRecord = true
	return &Reader{r: c, first: true}
}

// Line returns the line number of the record Next returned last.
func (r *Reader) Line() int {
	line, _ := r.r.FieldPos(0)
	return line
}

// Next returns the next request, io.EOF at the end of the trace, or an
// *Error for a malformed line.
func (r *Reader) Next() (Request, error) {
	for {
		rec, err := r.r.Read()
		if err == io.EOF {
			return Request{}, io.EOF
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Request{}, &Error{Line: pe.Line, Field: "line", Err: pe.Err}
			}
			return Request{}, err
		}
		if r.first {
			r.first = false
			if strings.EqualFold(strings.TrimSpace(rec[0]), "time") {
				continue
			}
		}
		return r.parse(rec)
	}
}

func (r *Reader) parse(rec []string) (Request, error) {
	line := r.Line()
	if len(rec) > 3 {
		return Request{}, &Error{Line: line, Field: "line", Err: fmt.Errorf("%d fields, want at most 3 (time, cost, key)", len(rec))}
	}
	ts := strings.TrimSpace(rec[0])
	t, err := ParseSeconds(ts)
	if err != nil {
		return Request{}, &Error{Line: line, Field: "time", Value: ts, Err: err}
	}
	if t < r.prev {
		return Request{}, &Error{Line: line, Field: "time", Value: ts, Err: ErrOrder}
	}
	r.prev = t
	req := Request{Time: t, Cost: 1}
	if len(rec) > 1 {
		if cs := strings.TrimSpace(rec[1]); cs != "" {
			c, err := ParseCost(cs)
			if err != nil {
				return Request{}, &Error{Line: line, Field: "cost", Value: cs, Err: err}
			}
			req.Cost, req.HasCost = c, true
		}
	}
	if len(rec) > 2 {
		// Keep the previous string when the key repeats, which saves an
		// allocation per line on traces sorted or grouped by key.
		if rec[2] != r.keyBuf {
			r.keyBuf = strings.Clone(rec[2])
		}
		req.Key = r.keyBuf
	}
	return req, nil
}

// ErrCost is returned for a cost of zero.
var ErrCost = errors.New("must be positive")

// ParseCost parses a positive whole number of tokens, such as "1", "1500"
// or "2e3".
func ParseCost(s string) (int64, error) {
	d, err := ParseDecimal(s)
	if err != nil {
		return 0, err
	}
	if d.IsZero() {
		return 0, ErrCost
	}
	return d.Scaled(0)
}
