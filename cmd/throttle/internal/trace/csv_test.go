package trace

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func readAll(s string) ([]Request, error) {
	r := NewReader(strings.NewReader(s))
	var out []Request
	for {
		q, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, q)
	}
}

func TestReader(t *testing.T) {
	got, err := readAll("time,cost,key\n0\n0.5,3\n\n# comment\n 1.5 , 20 ,alice\n2,,bob\n2,1,\"b,ob\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{Time: 0, Cost: 1},
		{Time: 500 * time.Millisecond, Cost: 3, HasCost: true},
		{Time: 1500 * time.Millisecond, Cost: 20, HasCost: true, Key: "alice"},
		{Time: 2 * time.Second, Cost: 1, Key: "bob"},
		{Time: 2 * time.Second, Cost: 1, HasCost: true, Key: "b,ob"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		in    string
		line  int
		field string
		err   error
	}{
		{"abc\n", 1, "time", ErrSyntax},
		{"1\n-1\n", 2, "time", ErrNegative},
		{"2\n1\n", 2, "time", ErrOrder},
		{"1e-10\n", 1, "time", ErrTooFine},
		{"1,0\n", 1, "cost", ErrCost},
		{"1,1.5\n", 1, "cost", ErrNotWhole},
		{"1,x\n", 1, "cost", ErrSyntax},
		{"1,2,k,extra\n", 1, "line", nil},
		{"0\n1,\"unclosed\n", 2, "line", nil},
	}
	for _, tt := range tests {
		_, err := readAll(tt.in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error %v, want *Error", tt.in, err)
			continue
		}
		if e.Line != tt.line || e.Field != tt.field || (tt.err != nil && !errors.Is(err, tt.err)) {
			t.Errorf("%q: error %v (line %d, field %s), want line %d, field %s, %v", tt.in, err, e.Line, e.Field, tt.line, tt.field, tt.err)
		}
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"time,cost,key\n0\n0.5,3\n1,2,k\n", "0\n0\n1\n", "1\n0\n", "\"1\",\"2\"\n", "0,1,\"a\nb\"\n", "# c\n\n3,4\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReader(strings.NewReader(s))
		var prev time.Duration
		for n := 0; ; n++ {
			q, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v is not an *Error", err)
				}
				return
			}
			if q.Time < prev || q.Cost <= 0 || (!q.HasCost && q.Cost != 1) {
				t.Fatalf("request %d: %+v after %v", n, q, prev)
			}
			prev = q.Time
		}
	})
}

// TestReaderBOM: a trace saved by a spreadsheet starts with a UTF-8
// byte-order mark, which is skipped, header or not; elsewhere it is text.
func TestReaderBOM(t *testing.T) {
	for _, in := range []string{"\ufefftime,cost\n0.5,2\n", "\ufeff0.5,2\n"} {
		r := NewReader(strings.NewReader(in))
		q, err := r.Next()
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if q != (Request{Time: 500 * time.Millisecond, Cost: 2, HasCost: true}) || r.Line() != strings.Count(in, "\n") {
			t.Errorf("%q: got %+v on line %d", in, q, r.Line())
		}
	}
	if _, err := readAll("0\n\ufeff1\n"); err == nil || !strings.Contains(err.Error(), "trace line 2: time") {
		t.Errorf("a byte-order mark on line 2: %v, want a bad time", err)
	}
}
