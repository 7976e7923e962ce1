package budget

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// ErrUnknownModel is the error of a Prices that has no price for a model.
var ErrUnknownModel = errors.New("budget: no price for the model")

// Usage is what one LLM call used, as its response's usage reports it,
// with input tokens read from a cache apart: OpenAI's prompt_tokens
// include its cached_tokens (give Input as prompt_tokens less
// cached_tokens), Anthropic's input_tokens exclude its
// cache_read_input_tokens.
type Usage struct {
	Model       string
	Input       int64 // input tokens not read from a cache
	CachedInput int64 // input tokens read from a cache
	Output      int64
}

// Price is what a million tokens of each kind cost, in the budget's unit:
// in micro-dollars, $3 per million input tokens is Input 3_000_000.
type Price struct {
	Input, CachedInput, Output int64
}

// Prices is a price table by model: a key is a model's name, or a prefix
// of names ending in "*" ("claude-opus-4*"); an exact name wins over a
// prefix, and a longer prefix over a shorter one.
type Prices map[string]Price

// Cost returns what u cost, rounded up to a whole unit: the hook that
// makes a Budget's unit money. Reserve Cost of the prompt and max_tokens
// before a call, and settle Cost of the usage its response reports.
func (p Prices) Cost(u Usage) (int64, error) {
	price, ok := p.lookup(u.Model)
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownModel, u.Model)
	}
	if u.Input < 0 || u.CachedInput < 0 || u.Output < 0 {
		return 0, fmt.Errorf("budget: negative token count in %+v", u)
	}
	var hi, lo uint64
	for _, t := range [...][2]int64{{u.Input, price.Input}, {u.CachedInput, price.CachedInput}, {u.Output, price.Output}} {
		h, l := bits.Mul64(uint64(t[0]), uint64(max(0, t[1])))
		var c uint64
		lo, c = bits.Add64(lo, l, 0)
		hi += h + c
	}
	const million = 1_000_000
	if hi >= million {
		return 0, fmt.Errorf("budget: the cost of %+v overflows", u)
	}
	q, r := bits.Div64(hi, lo, million)
	if r > 0 {
		q++
	}
	if q > 1<<63-1 {
		return 0, fmt.Errorf("budget: the cost of %+v overflows", u)
	}
	return int64(q), nil
}

// lookup finds model's price: its own, else the longest prefix's.
func (p Prices) lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok && !strings.HasSuffix(model, "*") {
		return pr, true
	}
	best, found := -1, Price{}
	for k, pr := range p {
		prefix, ok := strings.CutSuffix(k, "*")
		if ok && len(prefix) > best && strings.HasPrefix(model, prefix) {
			best, found = len(prefix), pr
		}
	}
	return found, best >= 0
}
