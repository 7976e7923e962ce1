package httpthrottle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/throttlekit/throttle"
)

// LLM accounts for calls to OpenAI-, Anthropic- and Gemini-style JSON
// APIs, which count requests and tokens per minute: a call reserves an
// estimate of its tokens before it is sent, and is settled against the
// usage the response reports. Use it on a Transport with WithLLM, or on
// LimitHandler with LimitCost(LLM{}.Cost).
//
// Each bucket of the Limiter counts one unit, chosen by its name: the
// buckets named in TokenLimits count input plus output tokens, a bucket
// named "input-tokens" counts input tokens, one named "output-tokens"
// output tokens, and every other bucket counts 1 per request.
//
// The estimate reads the JSON request body without consuming it. The input
// is the text of its string values (the prompt, system text, tool calls),
// except those of "model", "role", "type" and other names, counted by the
// Tokenizer, or as characters divided by CharsPerToken (rounded up) when
// that is set, or else by the shapes byte-pair encodings give text (a
// common word is a token, digits go by threes, punctuation by twos, four
// Chinese, Japanese or Korean characters are three tokens; within about
// 15% of OpenAI's o200k_base on prose, code, JSON and CJK); plus
// the keys of tool definitions and schemas; plus 3 tokens a message (1 more
// for a name) and 3 for the reply, as OpenAI documents its framing; plus
// images, audio and files by the vendors' documented rules rather than by
// their bytes (OpenAI: 85 tokens for a low-detail image, else 85 + 170 per
// 512-pixel tile of the image fitted in 2048x2048 with its short side at
// 768, 1105 when the size is unknown; Anthropic: width x height / 750 with
// the long side fitted in 1568, at most 1600; Gemini: 258 per 768-pixel
// tile; audio at 10 tokens a second for OpenAI and 32 for Gemini; a PDF at
// 3000 tokens a page). The output is its max_tokens, max_completion_tokens,
// max_output_tokens or generationConfig.maxOutputTokens, else
// DefaultMaxTokens. A body that is not a JSON object, or that cannot be
// read without consuming it (a client request without GetBody), is
// estimated from its length; a request without a body costs no tokens.
//
// A token cost is at most the bucket's capacity, unless RefuseOversized is
// set: the estimate is a guess, and by default the server, not the client,
// refuses a call too large for it. A request whose input estimate alone
// exceeds a bucket's capacity costs 1 token there rather than a full
// bucket, so that it holds up none of the calls queued behind it while it
// goes to its certain refusal.
type LLM struct {
	// TokenLimits names the buckets that count input plus output tokens.
	// Empty means {"tokens"}.
	TokenLimits []string
	// DefaultMaxTokens is the output reserved for a call whose body sets no
	// maximum. Zero means 4096.
	DefaultMaxTokens int64
	// CharsPerToken, if set, is the characters of prompt counted as one
	// token when there is no Tokenizer; zero counts by the shape of the
	// text. It is also the characters of streamed text counted as a token
	// for a response that carried text without reporting its usage, and of
	// a body that is not JSON; there zero means 4.
	CharsPerToken int64
	// Tokenizer, if set, counts the tokens of each piece of prompt text.
	Tokenizer Tokenizer
	// RefuseOversized makes Cost fail, with an error matching
	// ErrCostExceedsCapacity, for a request whose estimate exceeds the
	// capacity of a token bucket, instead of capping the cost there: such a
	// request is then never sent (and never answered "Request too large").
	RefuseOversized bool
}

// maxLLMBody is the most of a request body read to estimate its tokens.
const maxLLMBody = 8 << 20

// WithLLM makes the Transport estimate each request's tokens with c.Cost and
// settle its permit after every attempt. A 2xx JSON or event-stream
// response is handed to the caller at once, untouched, and settled from the
// usage it reports as the caller reads it, when the caller reaches its end
// or closes it: the usage object of a JSON body (OpenAI, Anthropic, and
// Gemini's usageMetadata, in one object or in the array of chunks of
// streamGenerateContent), or of a stream's events (the final chunk of an
// OpenAI chat completion with stream_options.include_usage, the Responses
// API's response.completed, Anthropic's message_start and message_delta,
// Gemini's usageMetadata). A stream that reports no output is settled from
// the text it carried (CharsPerToken characters a token), plus the input
// estimate when it reports no input; a stream closed before its end is
// settled from what was read. A JSON body without usage keeps its
// estimate. The reader keeps no more than a few hundred bytes of state and
// allocates nothing per read.
//
// A response of status 400 or more is settled to no tokens (the request
// cost stays). A 429 about the request rather than the client's pace (its
// error says "Request too large", or it reports a token limit below the
// request's input estimate) neither pauses nor drains the Limiter and is
// not retried.
func WithLLM(c LLM) TransportOption {
	return func(t *Transport) {
		t.cost = c.Cost
		t.settle = c.settle
	}
}

// Cost is a CostFunc: the cost of r on each limit of g, as LLM describes.
func (c LLM) Cost(r *http.Request, g throttle.Gate) ([]int64, error) {
	in, out, err := c.estimateRequest(r)
	if err != nil {
		return nil, err
	}
	limits := gateLimits(g)
	costs := make([]int64, len(limits))
	for i, lim := range limits {
		var n int64
		switch c.unitOf(lim.Name) {
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
		capacity := lim.Capacity
		switch {
		case n <= capacity:
			costs[i] = n
		case c.RefuseOversized:
			return nil, &OversizedError{Limit: lim.Name, Estimate: n, Capacity: capacity}
		case in > capacity && c.unitOf(lim.Name) != llmOutput:
			// The prompt alone exceeds the quota: the vendor will refuse
			// it whatever the wait. Waiting for a full bucket would hold up
			// every call queued behind it; 1 token keeps it in the
			// accounts, settled from its usage if it is answered after all.
			costs[i] = 1
		default:
			costs[i] = capacity
		}
	}
	return costs, nil
}

// estimateRequest returns the input and output tokens of r, as Cost counts
// them.
func (c LLM) estimateRequest(r *http.Request) (in, out int64, err error) {
	body, complete, err := readRequestBody(r)
	if err != nil {
		return 0, 0, err
	}
	in, out, ok := c.Estimate(body)
	if len(body) == 0 && complete && r.ContentLength <= 0 {
		// No body, no prompt: a GET of a list of models, say.
		return 0, 0, nil
	}
	if !ok || !complete {
		in = divUp(max(int64(len(body)), r.ContentLength), c.charsPerToken())
		out = c.defaultMaxTokens()
	}
	return in, out, nil
}

// OversizedError is the error of Cost, with RefuseOversized, for a request
// whose estimate exceeds a bucket's capacity. It matches
// ErrCostExceedsCapacity with errors.Is.
type OversizedError struct {
	Limit    string // the bucket's name
	Estimate int64  // the request's estimate on it
	Capacity int64  // its capacity
}

func (e *OversizedError) Error() string {
	return fmt.Sprintf("throttle: request too large: an estimated %d tokens against the capacity %d of limit %q", e.Estimate, e.Capacity, e.Limit)
}

// Is reports whether target is ErrCostExceedsCapacity.
func (e *OversizedError) Is(target error) bool { return target == throttle.ErrCostExceedsCapacity }

// Estimate returns the input and output tokens of a JSON request body, as
// LLM describes; ok is false when the body is not a JSON object.
func (c LLM) Estimate(body []byte) (input, output int64, ok bool) {
	var v map[string]any
	if json.Unmarshal(body, &v) != nil || v == nil {
		return 0, 0, false
	}
	output = c.defaultMaxTokens()
	limits := v
	if g, ok := v["generationConfig"].(map[string]any); ok {
		limits = g
	}
	for _, k := range [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens"} {
		if f, ok := limits[k].(float64); ok && f >= 0 && f < 1<<53 {
			output = int64(f)
			break
		}
	}
	e := estimator{c: &c}
	e.body(v)
	return e.total(), output, true
}

// Usage is the token usage an LLM API reports in a response.
type Usage struct {
	Input  int64 // prompt tokens, cache writes included
	Output int64 // completion tokens
}

// ParseUsage reads the usage a JSON response body reports, as WithLLM reads
// it: the "usage" object (at the top, or under "message" or "response") with
// OpenAI's prompt_tokens and completion_tokens (Chat Completions) or
// input_tokens and output_tokens (Responses), or Anthropic's input_tokens,
// cache_creation_input_tokens and output_tokens; or Gemini's
// "usageMetadata", in one object or an array of chunks, with
// promptTokenCount, candidatesTokenCount, thoughtsTokenCount and
// totalTokenCount. ok is false when the body is not whole JSON, holds no
// such object, or a count in it is not a non-negative integer.
func ParseUsage(body []byte) (u Usage, ok bool) {
	var s usageScanner
	s.write(body)
	s.end()
	if !s.complete() {
		return Usage{}, false
	}
	u, inOK, outOK := s.fields.usage()
	if !inOK && !outOK {
		return Usage{}, false
	}
	return u, true
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
