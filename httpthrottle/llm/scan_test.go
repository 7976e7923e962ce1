package llm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// Streams as the vendors send them (abridged to the fields that matter and
// a few that must not be mistaken for them).
var scanCases = []struct {
	name    string
	sse     bool
	body    string
	want    Usage
	inOK    bool
	outOK   bool
	text    int64 // runes of generated text
	wantErr bool
}{
	{
		name: "openai chat with include_usage", sse: true,
		body: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":null}\n\n" +
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello wor\"}}],\"usage\":null}\n\n" +
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ld \\\"é\\u00e9\\\"\"}}],\"usage\":null}\n\n" +
			"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n" +
			"data: [DONE]\n\n",
		want: Usage{12, 5}, inOK: true, outOK: true, text: 9 + 7,
	},
	{
		name: "openai chat without usage, tool call", sse: true,
		body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}}]}\n\n" +
			"data: [DONE]\n\n",
		text: 5 + 2,
	},
	{
		name: "openai responses", sse: true,
		body: "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null,\"text\":{\"format\":{\"type\":\"text\"}}}}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[{\"content\":[{\"text\":\"Hi\"}]}],\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":1},\"total_tokens\":32}}}\n\n",
		want: Usage{30, 2}, inOK: true, outOK: true, text: 4,
	},
	{
		name: "anthropic", sse: true,
		body: "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\r\n\r\n" +
			"event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n" +
			": a comment\r\n\r\n" +
			"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"abc\"}}\r\n\r\n" +
			"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\r\n\r\n" +
			"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\r\n\r\n" +
			"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n",
		want: Usage{30, 15}, inOK: true, outOK: true, text: 5,
	},
	{
		name: "anthropic, CR line ends, data split over two lines", sse: true,
		body: "event: message_start\rdata: {\"type\":\"message_start\",\rdata: \"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\r\r" +
			"event: message_delta\rdata:{\"usage\":{\"output_tokens\":9}}\r\r",
		want: Usage{7, 9}, inOK: true, outOK: true,
	},
	{
		name: "gemini sse", sse: true,
		body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ab\"}],\"role\":\"model\"}}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":1,\"totalTokenCount\":9}}\r\n\r\n" +
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"cd\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":3,\"thoughtsTokenCount\":2,\"totalTokenCount\":14}}\r\n\r\n",
		want: Usage{8, 6}, inOK: true, outOK: true, text: 4,
	},
	{
		name: "gemini json array",
		body: "[{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ab\"}]}}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":1,\"totalTokenCount\":9}}\n,\r\n" +
			"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"cd\"}]}}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":2,\"totalTokenCount\":10}}]",
		want: Usage{8, 2}, inOK: true, outOK: true, text: 4,
	},
	{
		name: "openai json, pretty-printed",
		body: "{\n  \"id\": \"x\",\n  \"choices\": [{\"message\": {\"content\": \"hi\"}}],\n  \"usage\": {\n    \"prompt_tokens\": 9,\n    \"completion_tokens\": 2\n  }\n}\n",
		want: Usage{9, 2}, inOK: true, outOK: true, text: 2,
	},
	{
		name: "usage deeper than the vendors put it is not read",
		body: `{"choices":[{"usage":{"prompt_tokens":9}}],"data":{"x":{"usage":{"prompt_tokens":9}}}}`,
	},
	{
		name:    "negative count",
		body:    `{"usage":{"prompt_tokens":-1,"completion_tokens":2}}`,
		wantErr: true,
	},
}

func scan(sse bool, body []byte, splits ...int) *usageScanner {
	s := &usageScanner{sse: sse}
	prev := 0
	for _, i := range splits {
		s.write(body[prev:i])
		prev = i
	}
	s.write(body[prev:])
	s.end()
	return s
}

func TestUsageScanner(t *testing.T) {
	for _, tt := range scanCases {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			check := func(s *usageScanner, how string) {
				t.Helper()
				u, inOK, outOK := s.fields.usage()
				if u != tt.want || inOK != tt.inOK || outOK != tt.outOK || s.fields.invalid != tt.wantErr {
					t.Errorf("%s: usage %+v, %v, %v (invalid %v); want %+v, %v, %v (invalid %v)",
						how, u, inOK, outOK, s.fields.invalid, tt.want, tt.inOK, tt.outOK, tt.wantErr)
				}
				if s.text != tt.text {
					t.Errorf("%s: %d runes of text, want %d", how, s.text, tt.text)
				}
			}
			check(scan(tt.sse, body), "whole")
			// Events split across reads at any byte, and in two places.
			for i := range body {
				check(scan(tt.sse, body, i), "split at "+strconv.Itoa(i))
			}
			for i := 0; i < len(body); i += 7 {
				for j := i; j < len(body); j += 11 {
					check(scan(tt.sse, body, i, j), "split at "+strconv.Itoa(i)+" and "+strconv.Itoa(j))
				}
			}
		})
	}
}

// refUsage is ParseUsage written with encoding/json, for bodies it accepts.
func refUsage(body []byte) (Usage, bool) {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return Usage{}, false
	}
	var f usageFields
	record := func(u any) {
		m, ok := u.(map[string]any)
		if !ok {
			return
		}
		for k, x := range m {
			id := lookupKey([]byte(k))
			if id < keyPromptTokens || id >= keyCountEnd {
				continue
			}
			n, ok := x.(float64)
			if !ok {
				continue
			}
			if n < 0 || n != float64(int64(n)) || n >= 1<<53 {
				f.invalid = true
				continue
			}
			f.n[id-keyPromptTokens] = int64(n)
			f.seen |= 1 << (id - keyPromptTokens)
		}
	}
	top := func(o any) {
		m, ok := o.(map[string]any)
		if !ok {
			return
		}
		// The order of keys matters when several hold usage: the reference
		// handles one only.
		record(m["usage"])
		record(m["usageMetadata"])
		for _, c := range []string{"message", "response"} {
			if cm, ok := m[c].(map[string]any); ok {
				record(cm["usage"])
			}
		}
	}
	if a, ok := v.([]any); ok {
		for _, o := range a {
			top(o)
		}
	} else {
		top(v)
	}
	u, inOK, outOK := f.usage()
	return u, inOK || outOK
}

func FuzzParseUsageAgainstJSON(f *testing.F) {
	for _, tt := range scanCases {
		if !tt.sse {
			f.Add([]byte(tt.body), 3)
		}
	}
	f.Add([]byte(`{"usage":{"input_tokens":10,"cache_creation_input_tokens":6,"output_tokens":2}}`), 0)
	f.Add([]byte(`{"message":{"usage":{"input_tokens":1}}}`), 5)
	f.Fuzz(func(t *testing.T, body []byte, split int) {
		u, ok := ParseUsage(body)
		if ok && (u.Input < 0 || u.Output < 0) {
			t.Fatalf("ParseUsage(%q) = %+v", body, u)
		}
		if split >= 0 && split <= len(body) {
			whole, parts := scan(false, body), scan(false, body, split)
			if whole.fields != parts.fields || whole.text != parts.text {
				t.Fatalf("split at %d changed the scan of %q", split, body)
			}
		}
		if !json.Valid(body) || bytes.Count(body, []byte("usage")) > 1 {
			return
		}
		// Large numbers and fractions are where float64 and the scanner
		// disagree on purpose.
		if bytes.ContainsAny(body, ".eE") || len(body) > 0 && bytes.Contains(body, []byte("000000000000000")) {
			return
		}
		ru, rok := refUsage(body)
		if u != ru || ok != rok {
			t.Fatalf("ParseUsage(%q) = %+v, %v; encoding/json says %+v, %v", body, u, ok, ru, rok)
		}
	})
}

func FuzzUsageScannerSSE(f *testing.F) {
	for _, tt := range scanCases {
		if tt.sse {
			f.Add([]byte(tt.body), 10, 20)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, i, j int) {
		if i < 0 || j < i || j > len(body) {
			i, j = 0, len(body)
		}
		a, b := scan(true, body), scan(true, body, i, j)
		if a.fields != b.fields || a.text != b.text {
			t.Fatalf("splits at %d, %d changed the scan of %q: %+v then %+v", i, j, body, a.fields, b.fields)
		}
		u, _, _ := a.fields.usage()
		if u.Input < 0 || u.Output < 0 || a.text < 0 {
			t.Fatalf("negative counts %+v, %d", u, a.text)
		}
	})
}
