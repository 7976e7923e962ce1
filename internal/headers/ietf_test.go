package headers

import (
	"reflect"
	"strconv"
	"testing"
	"time"
)

func policy(name string, q int64, w time.Duration) Quota {
	return Quota{Family: FamilyIETF, Name: name, Limit: q, Remaining: -1, Reset: -1, Window: w}
}

func limit(name string, r int64, t time.Duration) Quota {
	return Quota{Family: FamilyIETF, Name: name, Limit: -1, Remaining: r, Reset: t, Window: -1}
}

func TestParseRateLimitPolicy(t *testing.T) {
	cases := []struct {
		in   string
		want []Quota
		ok   bool
	}{
		{`"default";q=100;w=60`, []Quota{policy("default", 100, time.Minute)}, true},
		{`"permin";q=50;w=60, "perhr";q=1000;w=3600`, []Quota{policy("permin", 50, time.Minute), policy("perhr", 1000, time.Hour)}, true},
		{`"permin";q=50;w=60,"perhr";q=1000;w=3600`, []Quota{policy("permin", 50, time.Minute), policy("perhr", 1000, time.Hour)}, true},
		{"  \"a\";q=1 \t,\t \"b\";q=2  ", []Quota{policy("a", 1, -1), policy("b", 2, -1)}, true},
		{`"a";q=10`, []Quota{policy("a", 10, -1)}, true},
		{`"a";q=0;w=1`, []Quota{policy("a", 0, time.Second)}, true},
		{`"a";q=10;w=60;qu="requests";pk=:cHsdsRa894==:`, []Quota{policy("a", 10, time.Minute)}, true},
		{`"a";q=10;qu=requests;x=?1;y;z=1.5;d=@1659578233;s=%"f%c3%bc"`, []Quota{policy("a", 10, -1)}, true},
		{`"b";q=1000;w=60;qu="content-bytes", "c";q=5;qu=concurrent-requests`, []Quota{
			{Family: FamilyIETF, Name: "b", Unit: "content-bytes", Limit: 1000, Remaining: -1, Reset: -1, Window: time.Minute},
			{Family: FamilyIETF, Name: "c", Unit: "concurrent-requests", Limit: 5, Remaining: -1, Reset: -1, Window: -1},
		}, true},
		{`"a";q=10;qu=5, "b";q=1`, []Quota{policy("b", 1, -1)}, false}, // qu must be a String
		{`default;q=10`, []Quota{policy("default", 10, -1)}, true},     // token name (older drafts)
		{`*tok/en:x;q=10`, []Quota{policy("*tok/en:x", 10, -1)}, true},
		{`"a";q=1;q=5`, []Quota{policy("a", 5, -1)}, true}, // the last parameter wins
		{`"a"; q=1`, []Quota{policy("a", 1, -1)}, true},
		{`"esc\"aped\\";q=1`, []Quota{policy(`esc"aped\`, 1, -1)}, true},
		{`"";q=1`, []Quota{policy("", 1, -1)}, true},
		{`"a";q=999999999999999;w=999999999999999`, []Quota{policy("a", 999999999999999, maxDur)}, true},
		{"", nil, true}, // an empty List
		{"   ", nil, true},
		// Syntax errors: the whole value is ignored.
		{`"a";q=1,`, nil, false},
		{`,"a";q=1`, nil, false},
		{`"a";q=1, , "b";q=2`, nil, false},
		{`"a" ;q=1`, nil, false},
		{`"a";q=1 "b";q=2`, nil, false},
		{`"unterminated;q=1`, nil, false},
		{`"a";Q=1`, nil, false},
		{`"a";q=1.`, nil, false},
		{`"a";q=1.2345`, nil, false},
		{`"a";q=1234567890123456`, nil, false}, // 16 digits
		{`"a";q=1234567890123.5`, nil, false},  // 13 integer digits in a Decimal
		{`"a";q=--1`, nil, false},
		{`"a";q=-`, nil, false},
		{"\"bad\x01\";q=1", nil, false},
		{"\"caf\xc3\xa9\";q=1", nil, false},
		{`"a\n";q=1`, nil, false},
		{`"a";q=:abc`, nil, false},
		{`"a";q=:a%c:`, nil, false},
		{`"a";q=?2`, nil, false},
		{`"a";q=@1.5`, nil, false},
		{`"a";s=%"%C3"`, nil, false},
		{`"a";q=1;`, nil, false},
		{`"a";=1`, nil, false},
		{`("x" "y"`, nil, false},
		{`("x""y");q=1`, nil, false},
		{`#;q=1`, nil, false},
		// Members that parse but mean nothing valid are skipped.
		{`("x" "y");q=1`, nil, false},
		{`"a";w=60`, nil, false},
		{`"a";q=-1`, nil, false},
		{`"a";q=1.5`, nil, false},
		{`"a";q="1"`, nil, false},
		{`"a";q`, nil, false},
		{`"a";q=1;w=0`, nil, false},
		{`"a";q=1;w=-5`, nil, false},
		{`"a";q=1;w=1.5`, nil, false},
		{`1;q=5`, nil, false},
		{`"a";q=1, "a";q=2`, []Quota{policy("a", 1, -1)}, false},
		{`"a";w=60, "b";q=2`, []Quota{policy("b", 2, -1)}, false},
	}
	for _, c := range cases {
		got, ok := ParseRateLimitPolicy(c.in)
		if !reflect.DeepEqual(got, c.want) || ok != c.ok {
			t.Errorf("ParseRateLimitPolicy(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	cases := []struct {
		in   string
		want []Quota
		ok   bool
	}{
		{`"default";r=50;t=30`, []Quota{limit("default", 50, 30*time.Second)}, true},
		{`"default";r=50`, []Quota{limit("default", 50, -1)}, true},
		{`"a";r=0;t=0, "b";r=7;t=1`, []Quota{limit("a", 0, 0), limit("b", 7, time.Second)}, true},
		{`"a";t=3;r=1;pk=:AA==:`, []Quota{limit("a", 1, 3*time.Second)}, true},
		{`"a";r=1;t=999999999999999`, []Quota{limit("a", 1, maxDur)}, true},
		{`"a";r=1;t=9223372037`, []Quota{limit("a", 1, maxDur)}, true},
		{`"a";r=1;t=9223372036`, []Quota{limit("a", 1, 9223372036*time.Second)}, true},
		{`"a";t=5`, nil, false},
		{`"a";r=-1`, nil, false},
		{`"a";r=1;t=-1`, nil, false},
		{`"a";r=1;t=1.5`, nil, false},
		{`"a";r=1;t="5"`, nil, false},
		{`"a";r=1;t`, nil, false},
		{`"a";r=1, "a";r=2`, []Quota{limit("a", 1, -1)}, false},
		{`"a";r=1 , "b";r=`, nil, false},
	}
	for _, c := range cases {
		got, ok := ParseRateLimit(c.in)
		if !reflect.DeepEqual(got, c.want) || ok != c.ok {
			t.Errorf("ParseRateLimit(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// A header of 100,000 policies is read up to maxIETFBytes: the first
// policies count, the rest is ignored and reported, and no time or memory
// grows with the rest.
func TestParseManyPoliciesBounded(t *testing.T) {
	h := manyPolicies(100_000)
	s := Parse(h, testNow, time.Minute)
	if len(s.Quotas) == 0 || len(s.Quotas) > maxIETFBytes/10 {
		t.Fatalf("%d quotas from 100,000 policies; want the first few hundred", len(s.Quotas))
	}
	if q := s.Quotas[0]; q.Name != "p0" || q.Limit != 100 || q.Remaining != 50 {
		t.Fatalf("first quota %+v; want p0 100 with 50 left", q)
	}
	want := []string{"Ratelimit-Policy", "Ratelimit"}
	if !reflect.DeepEqual(s.Malformed, want) {
		t.Fatalf("Malformed = %q; want %q", s.Malformed, want)
	}
	// Within the limit, every policy counts, each name once.
	s = Parse(manyPolicies(40), testNow, time.Minute)
	if len(s.Quotas) != 40 || len(s.Malformed) != 0 {
		t.Fatalf("40 policies: %d quotas, malformed %q", len(s.Quotas), s.Malformed)
	}
	for i, q := range s.Quotas {
		if q.Name != "p"+strconv.Itoa(i) || q.Remaining != 50 {
			t.Fatalf("quota %d = %+v", i, q)
		}
	}
}
