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
// Each limit of the Gate counts one unit, by the role the config gives
// its name: the limits named in RequestLimits count 1 per request (and
// every limit named in no role does too), those in TokenLimits input plus
// output tokens, those in InputTokenLimits input tokens and those in
// OutputTokenLimits output tokens. Each role left empty has its default,
// the name the vendors' headers use: "requests", "tokens", "input-tokens",
// "output-tokens". A server's quota of one of those kinds (OpenAI's
// x-ratelimit-*-tokens, Anthropic's anthropic-ratelimit-input-tokens-*)
// lowers the limit of that role, whatever it is named: the one named as
// the quota if there is one, else the first of the role in cost order.
//
// Nothing is counted silently wrong: a Gate none of whose limits counts
// tokens (no limit named in TokenLimits, InputTokenLimits or
// OutputTokenLimits), or lacking a limit a role names explicitly, is an
// error matching throttle.ErrInvalidOption that names the Gate's limits
// and the names expected: from NewTransport for Shared(g), else from Cost,
// failing the request. An AutoLimiter's Gate is spared the first check
// until it has learned a token limit from the server's headers.
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
	// RequestLimits names the limits that count 1 per request ("rpm", say).
	// Empty means {"requests"}. A limit named in no role counts 1 per
	// request as well, but is not matched to a server's request quota.
	RequestLimits []string
	// TokenLimits names the limits that count input plus output tokens
	// ("tpm", or a per-minute and a per-day limit). Empty means {"tokens"}.
	TokenLimits []string
	// InputTokenLimits names the limits that count input tokens only, as
	// Anthropic counts them. Empty means {"input-tokens"}.
	InputTokenLimits []string
	// OutputTokenLimits names the limits that count output tokens only.
	// Empty means {"output-tokens"}.
	OutputTokenLimits []string
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
	// throttle.ErrCostExceedsCapacity that names the limit, the estimate
	// and the capacity, for a request whose estimate exceeds the
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
// A usage above a limit's capacity is settled as the capacity and counted
// in TransportStats.Clamped: a server's garbage figure (a trillion tokens)
// must not put the client in debt for centuries, and a call cannot really
// use more than a quota the server enforces. A response of status 400 or
// more is settled to no tokens (the request cost stays). A 429 about the request rather than the client's pace (its
// error says "Request too large", or it reports a token limit below the
// request's input estimate) neither pauses nor drains the Limiter and is
// not retried.
//
// WithLLM sets the cost: it cannot be combined with WithCost. See LLM for
// the roles of the Gate's limits, and the errors when none counts tokens.
func WithLLM(c LLM) TransportOption {
	return func(t *Transport) error {
		t.llm = &c
		return nil
	}
}

// Cost is a CostFunc: the cost of r on each limit of g, as LLM describes.
func (c LLM) Cost(r *http.Request, g throttle.Gate) ([]int64, error) {
	in, out, err := c.estimateRequest(r)
	if err != nil {
		return nil, err
	}
	limits := gateLimits(g)
	if err := c.checkGate(g, limits); err != nil {
		return nil, err
	}
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
			return nil, fmt.Errorf("%w: request too large: an estimated %d tokens against the capacity %d of limit %q (LLM.RefuseOversized)", throttle.ErrCostExceedsCapacity, n, capacity, lim.Name)
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

// llmUnits is the number of roles.
const llmUnits = 4

// defaultName returns role u's default name, that of the vendors' headers.
func defaultName(u llmUnit) string {
	switch u {
	case llmTokens:
		return "tokens"
	case llmInput:
		return "input-tokens"
	case llmOutput:
		return "output-tokens"
	}
	return "requests"
}

// names returns the names the config gives role u, and whether it gave
// them (else its default).
func (c LLM) names(u llmUnit) (names []string, explicit bool) {
	var set []string
	switch u {
	case llmRequests:
		set = c.RequestLimits
	case llmTokens:
		set = c.TokenLimits
	case llmInput:
		set = c.InputTokenLimits
	case llmOutput:
		set = c.OutputTokenLimits
	}
	if len(set) == 0 {
		return []string{defaultName(u)}, false
	}
	return set, true
}

// role returns the role of the limit named name, ok false when no role
// names it.
func (c LLM) role(name string) (u llmUnit, ok bool) {
	for _, u := range [...]llmUnit{llmTokens, llmInput, llmOutput, llmRequests} {
		if names, _ := c.names(u); slices.Contains(names, name) {
			return u, true
		}
	}
	return llmRequests, false
}

// unitOf returns what the limit named name counts: a limit in no role
// counts requests.
func (c LLM) unitOf(name string) llmUnit {
	u, _ := c.role(name)
	return u
}

// checkGate is check for the Gate g of a request: an AutoLimiter's is
// spared the want of a token limit, which it learns from the server.
func (c LLM) checkGate(g throttle.Gate, limits []throttle.Limit) error {
	if _, ok := g.(learner); ok {
		return c.checkNames(limits)
	}
	return c.check(limits)
}

// check reports a Gate, of limits, on which c would count no token, or
// lacking a limit c names explicitly: a config naming none of the Gate's
// limits (buckets "rpm" and "tpm", the defaults "requests" and "tokens")
// would otherwise count 1 a request on every limit, silently.
func (c LLM) check(limits []throttle.Limit) error {
	if err := c.checkNames(limits); err != nil {
		return err
	}
	for _, lim := range limits {
		if u, ok := c.role(lim.Name); ok && u != llmRequests {
			return nil
		}
	}
	return invalidOption("WithLLM: no limit of the Gate counts tokens: its limits are %s, and LLM counts tokens on limits named %s (name the Gate's limits in LLM.TokenLimits, InputTokenLimits or OutputTokenLimits)", limitNames(limits), c.tokenNames())
}

// checkNames reports a name given explicitly to a role that no limit has.
func (c LLM) checkNames(limits []throttle.Limit) error {
	for u := range llmUnit(llmUnits) {
		names, explicit := c.names(u)
		if !explicit {
			continue
		}
		for _, n := range names {
			if !slices.ContainsFunc(limits, func(l throttle.Limit) bool { return l.Name == n }) {
				return invalidOption("WithLLM: LLM names the limit %q, but the Gate's limits are %s", n, limitNames(limits))
			}
		}
	}
	return nil
}

// tokenNames formats the names of the roles that count tokens.
func (c LLM) tokenNames() string {
	var all []string
	for _, u := range [...]llmUnit{llmTokens, llmInput, llmOutput} {
		names, _ := c.names(u)
		all = append(all, names...)
	}
	return fmt.Sprintf("%q", all)
}

// limitNames formats the names of limits for an error.
func limitNames(limits []throttle.Limit) string {
	names := make([]string, len(limits))
	for i, l := range limits {
		names[i] = l.Name
	}
	return fmt.Sprintf("%q", names)
}

// first returns the index of the first limit, of n named by name, that c
// gives role u, or -1.
func (c LLM) first(u llmUnit, n int, name func(i int) string) int {
	names, _ := c.names(u)
	for i := range n {
		if slices.Contains(names, name(i)) {
			return i
		}
	}
	return -1
}

// serverUnit returns what a quota the server names counts, in the vendors'
// vocabulary, and ok false for a name of no role ("requests#2", an IETF
// policy's).
func serverUnit(name string) (llmUnit, bool) {
	for u := range llmUnit(llmUnits) {
		if defaultName(u) == name {
			return u, true
		}
	}
	return 0, false
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
