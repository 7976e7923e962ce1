package throttle

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// LLM accounts for calls to OpenAI-style and Anthropic-style JSON APIs,
// which count requests and tokens per minute: a call reserves an estimate
// of its tokens before it is sent, and is settled against the usage the
// response reports. Use it on a Transport with WithLLM, or on LimitHandler
// with LimitCost(LLM{}.Cost).
//
// Each bucket of the Limiter counts one unit, chosen by its name: the
// buckets named in TokenLimits count input plus output tokens, a bucket
// named "input-tokens" counts input tokens, one named "output-tokens"
// output tokens, and every other bucket counts 1 per request.
//
// The estimate reads the JSON request body without consuming it: the input
// is the characters of its string values (the prompt, system text, tool
// definitions), except those of "model", "role" and "type", divided by
// CharsPerToken and rounded up; the output is its max_tokens,
// max_completion_tokens or max_output_tokens, else DefaultMaxTokens. A body
// that is not a JSON object, or that cannot be read without consuming it (a
// client request without GetBody), is estimated from its length; a request
// without a body costs no tokens. A token cost is at most the bucket's
// capacity: the estimate is a guess, and the server, not the client,
// refuses a call too large for it.
type LLM struct {
	// TokenLimits names the buckets that count input plus output tokens.
	// Empty means {"tokens"}.
	TokenLimits []string
	// DefaultMaxTokens is the output reserved for a call whose body sets no
	// maximum. Zero means 4096.
	DefaultMaxTokens int64
	// CharsPerToken is the characters of prompt counted as one token. Zero
	// means 4.
	CharsPerToken int64
}

// maxLLMBody is the most of a request or response body read to estimate or
// settle tokens.
const maxLLMBody = 8 << 20

// WithLLM makes the Transport estimate each request's tokens with c.Cost and
// settle its permit after every attempt: against the usage of a
// non-streaming JSON 2xx response (read into memory, the caller still gets
// the whole body), to no tokens for a response of status 400 or more (the
// request cost stays), and not at all otherwise (a stream keeps the
// estimate).
func WithLLM(c LLM) TransportOption {
	return func(t *Transport) {
		t.cost = c.Cost
		t.settle = c.settle
	}
}

// Cost is a CostFunc: the cost of r on each bucket of l, as LLM describes.
func (c LLM) Cost(r *http.Request, l *Limiter) ([]int64, error) {
	body, complete, err := readRequestBody(r)
	if err != nil {
		return nil, err
	}
	in, out, ok := c.Estimate(body)
	if len(body) == 0 && complete && r.ContentLength <= 0 {
		// No body, no prompt: a GET of a list of models, say.
		in, out, ok = 0, 0, true
	}
	if !ok || !complete {
		in = divUp(max(int64(len(body)), r.ContentLength), c.charsPerToken())
		out = c.defaultMaxTokens()
	}
	costs := make([]int64, len(l.bs))
	for i, b := range l.bs {
		var n int64
		switch c.unitOf(b.name) {
		case llmRequests:
			costs[i] = 1
			continue
		case llmTokens:
			n = in + out
		case llmInput:
			n = in
		case llmOutput:
			n = out
		}
		if n > 0 {
			costs[i] = min(n, b.Capacity())
		}
	}
	return costs, nil
}

// Estimate returns the input and output tokens of a JSON request body, as
// LLM describes; ok is false when the body is not a JSON object.
func (c LLM) Estimate(body []byte) (input, output int64, ok bool) {
	var v map[string]any
	if json.Unmarshal(body, &v) != nil || v == nil {
		return 0, 0, false
	}
	output = c.defaultMaxTokens()
	for _, k := range [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if f, ok := v[k].(float64); ok && f >= 0 && f < 1<<53 {
			output = int64(f)
			break
		}
	}
	return divUp(promptChars(v, ""), c.charsPerToken()), output, true
}

// promptChars counts the characters of the string values in v, except those
// under keys that are not prompt text.
func promptChars(v any, key string) int64 {
	switch v := v.(type) {
	case string:
		switch key {
		case "model", "role", "type":
			return 0
		}
		return int64(len([]rune(v)))
	case []any:
		var n int64
		for _, e := range v {
			n += promptChars(e, key)
		}
		return n
	case map[string]any:
		var n int64
		for k, e := range v {
			n += promptChars(e, k)
		}
		return n
	}
	return 0
}

// Usage is the token usage an LLM API reports in a response.
type Usage struct {
	Input  int64 // prompt tokens, cache writes included
	Output int64 // completion tokens
}

// ParseUsage reads the "usage" object of a JSON response body: OpenAI's
// prompt_tokens and completion_tokens (Chat Completions) or input_tokens and
// output_tokens (Responses), or Anthropic's input_tokens,
// cache_creation_input_tokens and output_tokens. ok is false when the body
// has no such object.
func ParseUsage(body []byte) (u Usage, ok bool) {
	var v struct {
		Usage *struct {
			PromptTokens     *int64 `json:"prompt_tokens"`
			CompletionTokens *int64 `json:"completion_tokens"`
			InputTokens      *int64 `json:"input_tokens"`
			OutputTokens     *int64 `json:"output_tokens"`
			CacheCreation    int64  `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &v) != nil || v.Usage == nil {
		return Usage{}, false
	}
	x := v.Usage
	switch {
	case x.PromptTokens != nil || x.CompletionTokens != nil:
		u = Usage{Input: usageCount(x.PromptTokens), Output: usageCount(x.CompletionTokens)}
	case x.InputTokens != nil || x.OutputTokens != nil:
		u = Usage{Input: usageCount(x.InputTokens) + max(x.CacheCreation, 0), Output: usageCount(x.OutputTokens)}
	default:
		return Usage{}, false
	}
	if u.Input < 0 || u.Output < 0 {
		return Usage{}, false
	}
	return u, true
}

func usageCount(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// settle corrects the permit of one attempt against what its response
// reports.
func (c LLM) settle(resp *http.Response, p *Permit) {
	actual := slices.Clone(p.costs)
	switch {
	case resp.StatusCode >= 400:
		for i, b := range p.bs {
			if c.unitOf(b.name) != llmRequests {
				actual[i] = 0
			}
		}
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && isJSON(resp.Header.Get("Content-Type")):
		body, complete, err := readResponseBody(resp)
		if err != nil || !complete {
			return
		}
		u, ok := ParseUsage(body)
		if !ok {
			return
		}
		for i, b := range p.bs {
			switch c.unitOf(b.name) {
			case llmTokens:
				actual[i] = u.Input + u.Output
			case llmInput:
				actual[i] = u.Input
			case llmOutput:
				actual[i] = u.Output
			}
		}
	default:
		return
	}
	p.Settle(actual...)
}

type llmUnit uint8

const (
	llmRequests llmUnit = iota
	llmTokens
	llmInput
	llmOutput
)

func (c LLM) unitOf(name string) llmUnit {
	switch {
	case len(c.TokenLimits) == 0 && name == "tokens", slices.Contains(c.TokenLimits, name):
		return llmTokens
	case name == "input-tokens":
		return llmInput
	case name == "output-tokens":
		return llmOutput
	}
	return llmRequests
}

func (c LLM) charsPerToken() int64 {
	if c.CharsPerToken > 0 {
		return c.CharsPerToken
	}
	return 4
}

func (c LLM) defaultMaxTokens() int64 {
	if c.DefaultMaxTokens > 0 {
		return c.DefaultMaxTokens
	}
	return 4096
}

func divUp(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// isJSON reports whether a Content-Type is JSON: application/json or a
// +json type.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// ModelKey returns the "model" of a JSON request body, to key limiters by
// model with PerKey. It reads the body without consuming it, as LLM.Cost
// does; a request without a readable model gets the empty key.
func ModelKey(r *http.Request) string {
	body, _, err := readRequestBody(r)
	if err != nil {
		return ""
	}
	var v struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &v)
	return v.Model
}

// readRequestBody returns up to maxLLMBody bytes of r's body without
// consuming it, and whether that is the whole body. A client request is
// read through GetBody (without it the body cannot be read and nil is
// returned); a server request (RequestURI set) is read and its Body
// replaced by one that yields the same bytes.
func readRequestBody(r *http.Request) (body []byte, complete bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true, nil
	}
	if r.RequestURI == "" {
		if r.GetBody == nil {
			return nil, false, nil
		}
		rc, err := r.GetBody()
		if err != nil {
			return nil, false, err
		}
		defer rc.Close()
		body, err = io.ReadAll(io.LimitReader(rc, maxLLMBody+1))
		if err != nil {
			return nil, false, err
		}
		if len(body) > maxLLMBody {
			return body[:maxLLMBody], false, nil
		}
		return body, true, nil
	}
	body, complete, r.Body, err = readBack(r.Body)
	return body, complete, err
}

// readResponseBody reads up to maxLLMBody bytes of resp's body and puts
// back a body that yields the whole of it.
func readResponseBody(resp *http.Response) (body []byte, complete bool, err error) {
	body, complete, resp.Body, err = readBack(resp.Body)
	return body, complete, err
}

// readBack reads up to maxLLMBody bytes of rc and returns them with a
// ReadCloser that yields what was read followed by the rest of rc. A
// complete body is closed at once, which frees its connection.
func readBack(rc io.ReadCloser) (body []byte, complete bool, back io.ReadCloser, err error) {
	body, err = io.ReadAll(io.LimitReader(rc, maxLLMBody+1))
	if err != nil {
		// Give back what was read; the reader reports the error again.
		return nil, false, bodyReadCloser{io.MultiReader(bytes.NewReader(body), rc), rc}, err
	}
	if len(body) <= maxLLMBody {
		rc.Close()
		return body, true, io.NopCloser(bytes.NewReader(body)), nil
	}
	return body[:maxLLMBody], false, bodyReadCloser{io.MultiReader(bytes.NewReader(body), rc), rc}, nil
}

type bodyReadCloser struct {
	io.Reader
	io.Closer
}
