package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/throttlekit/throttle/internal/errs"
	"io"
	"net/http"
	"reflect"
	"slices"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// Config accounts for calls to OpenAI-, Anthropic- and Gemini-style JSON
// APIs, which count requests and tokens per minute: a call reserves an
// estimate of its tokens before it is sent, and is settled against the
// usage the response reports. It is an httpthrottle.Accounting: use it on
// a Transport with httpthrottle.WithAccounting, or on Handler with
// httpthrottle.WithCost(llm.Config{}.Cost).
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
// failing the request. A Learner (an auto.Limiter's Gate) is spared the first check
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
// DefaultMaxTokens; with Outputs, no more than calls of its model use. A body that is not a JSON object, or that cannot be
// read without consuming it (a client request without GetBody), is
// estimated from its length; a request without a body costs no tokens.
//
// A token cost is at most the bucket's capacity, unless RefuseOversized is
// set: the estimate is a guess, and by default the server, not the client,
// refuses a call too large for it. A request whose input estimate alone
// exceeds a bucket's capacity costs 1 token there rather than a full
// bucket, so that it holds up none of the calls queued behind it while it
// goes to its certain refusal.
type Config struct {
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
	// Outputs, if set, learns the output tokens calls of each model really
	// use, and reserves those for a call rather than its max_tokens (see
	// Outputs). Nil reserves max_tokens.
	Outputs *Outputs
	// RefuseOversized makes Cost fail, with an error matching
	// throttle.ErrCostExceedsCapacity that names the limit, the estimate
	// and the capacity, for a request whose estimate exceeds the
	// capacity of a token bucket, instead of capping the cost there: such a
	// request is then never sent (and never answered "Request too large").
	RefuseOversized bool
}

// maxBody is the most of a request body read to estimate its tokens.
const maxBody = 8 << 20

// Cost is an httpthrottle.CostFunc: the cost of r on each limit of g, as
// Config describes.
func (c Config) Cost(r *http.Request, g throttle.Gate) ([]int64, error) {
	in, out, err := c.estimateRequest(r)
	if err != nil {
		return nil, err
	}
	var limits []throttle.Limit
	if !noGate(g) {
		limits = g.Limits()
	}
	if err := c.checkGate(g, limits); err != nil {
		return nil, err
	}
	costs := make([]int64, len(limits))
	for i, lim := range limits {
		var n int64
		switch c.unitOf(lim.Name) {
		case unitRequests:
			costs[i] = 1
			continue
		case unitTokens:
			n = in + out
		case unitInput:
			n = in
		case unitOutput:
			n = out
		}
		capacity := lim.Capacity
		switch {
		case n <= capacity:
			costs[i] = n
		case c.RefuseOversized:
			return nil, fmt.Errorf("%w: request too large: an estimated %d tokens against the capacity %d of limit %q (llm.Config.RefuseOversized)", throttle.ErrCostExceedsCapacity, n, capacity, lim.Name)
		case in > capacity && c.unitOf(lim.Name) != unitOutput:
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
func (c Config) estimateRequest(r *http.Request) (in, out int64, err error) {
	body, complete, err := readRequestBody(r)
	if err != nil {
		return 0, 0, err
	}
	in, out, ok := c.estimate(body, r.URL.Path)
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
// Config describes; ok is false when the body is not a JSON object.
func (c Config) Estimate(body []byte) (input, output int64, ok bool) {
	return c.estimate(body, "")
}

// estimate is Estimate of the body of a request to path, whose model a
// Gemini URL names.
func (c Config) estimate(body []byte, path string) (input, output int64, ok bool) {
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
	if c.Outputs != nil {
		model, _ := v["model"].(string)
		if model == "" {
			model = pathModel(path)
		}
		if n, ok := c.Outputs.reserved(model); ok {
			output = min(output, n)
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

// ParseUsage reads the usage a JSON response body reports, as WithAccounting reads
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

type unit uint8

const (
	unitRequests unit = iota
	unitTokens
	unitInput
	unitOutput
)

// nUnits is the number of roles.
const nUnits = 4

// defaultName returns role u's default name, that of the vendors' headers.
func defaultName(u unit) string {
	switch u {
	case unitTokens:
		return "tokens"
	case unitInput:
		return "input-tokens"
	case unitOutput:
		return "output-tokens"
	}
	return "requests"
}

// names returns the names the config gives role u, and whether it gave
// them (else its default).
func (c Config) names(u unit) (names []string, explicit bool) {
	var set []string
	switch u {
	case unitRequests:
		set = c.RequestLimits
	case unitTokens:
		set = c.TokenLimits
	case unitInput:
		set = c.InputTokenLimits
	case unitOutput:
		set = c.OutputTokenLimits
	}
	if len(set) == 0 {
		return []string{defaultName(u)}, false
	}
	return set, true
}

// role returns the role of the limit named name, ok false when no role
// names it.
func (c Config) role(name string) (u unit, ok bool) {
	for _, u := range [...]unit{unitTokens, unitInput, unitOutput, unitRequests} {
		if names, _ := c.names(u); slices.Contains(names, name) {
			return u, true
		}
	}
	return unitRequests, false
}

// unitOf returns what the limit named name counts: a limit in no role
// counts requests.
func (c Config) unitOf(name string) unit {
	u, _ := c.role(name)
	return u
}

// checkGate is Check for the Gate g of a request: a Learner's (an auto.Limiter's Gate) is
// spared the want of a token limit, which it learns from the server.
func (c Config) checkGate(g throttle.Gate, limits []throttle.Limit) error {
	if _, learns := g.(httpthrottle.Learner); learns {
		return c.checkNames(limits)
	}
	return c.Check(limits)
}

// Check reports a Gate, of limits, on which c would count no token, or
// lacking a limit c names explicitly: a config naming none of the Gate's
// limits (buckets "rpm" and "tpm", the defaults "requests" and "tokens")
// would otherwise count 1 a request on every limit, silently. It is
// httpthrottle.Accounting's Check.
func (c Config) Check(limits []throttle.Limit) error {
	if err := c.checkNames(limits); err != nil {
		return err
	}
	for _, lim := range limits {
		if u, ok := c.role(lim.Name); ok && u != unitRequests {
			return nil
		}
	}
	return errs.InvalidOptionf("llm.Config: no limit of the Gate counts tokens: its limits are %s, and llm.Config counts tokens on limits named %s (name the Gate's limits in Config.TokenLimits, InputTokenLimits or OutputTokenLimits)", limitNames(limits), c.tokenNames())
}

// checkNames reports a name given explicitly to a role that no limit has.
func (c Config) checkNames(limits []throttle.Limit) error {
	for u := range unit(nUnits) {
		names, explicit := c.names(u)
		if !explicit {
			continue
		}
		for _, n := range names {
			if !slices.ContainsFunc(limits, func(l throttle.Limit) bool { return l.Name == n }) {
				return errs.InvalidOptionf("llm.Config names the limit %q, but the Gate's limits are %s", n, limitNames(limits))
			}
		}
	}
	return nil
}

// tokenNames formats the names of the roles that count tokens.
func (c Config) tokenNames() string {
	var all []string
	for _, u := range [...]unit{unitTokens, unitInput, unitOutput} {
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

// Counts reports whether c gives the limit named limit the role of a
// server's quota named quota, one of "requests", "tokens", "input-tokens"
// and "output-tokens" (false for any other quota). It is
// httpthrottle.Accounting's Counts.
func (c Config) Counts(limit, quota string) bool {
	u, ok := serverUnit(quota)
	if !ok {
		return false
	}
	names, _ := c.names(u)
	return slices.Contains(names, limit)
}

// serverUnit returns what a quota the server names counts, in the vendors'
// vocabulary, and ok false for a name of no role ("requests#2", an IETF
// policy's).
func serverUnit(name string) (unit, bool) {
	for u := range unit(nUnits) {
		if defaultName(u) == name {
			return u, true
		}
	}
	return 0, false
}

func (c Config) charsPerToken() int64 {
	if c.CharsPerToken > 0 {
		return c.CharsPerToken
	}
	return 4
}

func (c Config) defaultMaxTokens() int64 {
	if c.DefaultMaxTokens > 0 {
		return c.DefaultMaxTokens
	}
	return 4096
}

// noGate reports whether g is no Gate: nil, or a nil pointer in an
// interface (a constructor's error ignored).
func noGate(g throttle.Gate) bool {
	if g == nil {
		return true
	}
	v := reflect.ValueOf(g)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func divUp(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// ModelKey returns the "model" of a JSON request body, to key limiters by
// model with PerKey. It reads the body without consuming it, as Config.Cost
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

// readRequestBody returns up to maxBody bytes of r's body without
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
		body, err = io.ReadAll(io.LimitReader(rc, maxBody+1))
		if err != nil {
			return nil, false, err
		}
		if len(body) > maxBody {
			return body[:maxBody], false, nil
		}
		return body, true, nil
	}
	body, complete, r.Body, err = readBack(r.Body)
	return body, complete, err
}

// readBack reads up to maxBody bytes of rc and returns them with a
// ReadCloser that yields what was read followed by the rest of rc. A
// complete body is closed at once, which frees its connection.
func readBack(rc io.ReadCloser) (body []byte, complete bool, back io.ReadCloser, err error) {
	body, err = io.ReadAll(io.LimitReader(rc, maxBody+1))
	if err != nil {
		// Give back what was read; the reader reports the error again.
		return nil, false, bodyReadCloser{io.MultiReader(bytes.NewReader(body), rc), rc}, err
	}
	if len(body) <= maxBody {
		rc.Close()
		return body, true, io.NopCloser(bytes.NewReader(body)), nil
	}
	return body[:maxBody], false, bodyReadCloser{io.MultiReader(bytes.NewReader(body), rc), rc}, nil
}

type bodyReadCloser struct {
	io.Reader
	io.Closer
}
