// Package tiktoken counts tokens exactly as OpenAI's models do, for
// llm.Config's Tokenizer, with the encodings of
// github.com/pkoukk/tiktoken-go embedded by
// github.com/pkoukk/tiktoken-go-loader: nothing is downloaded at run time.
// It is a module of its own, so that programs that estimate tokens from
// characters do not carry the encodings (some 4 MB each).
//
//	enc, err := tiktoken.ForModel("gpt-4o")
//	if err != nil {
//		return err
//	}
//	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(lim), httpthrottle.WithAccounting(llm.Config{Tokenizer: enc}))
//	if err != nil {
//		return err
//	}
//
// ExampleForModel shows it whole.
package tiktoken

import (
	"fmt"
	"strings"

	tk "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// The encodings New knows: those of OpenAI's chat models.
const (
	O200kBase  = "o200k_base"  // gpt-4o, gpt-4.1, gpt-4.5, o1, o3, o4
	Cl100kBase = "cl100k_base" // gpt-4, gpt-3.5-turbo, text-embedding-3
)

// Encoding counts the tokens of text in one of OpenAI's encodings. It
// implements llm.Tokenizer and is safe for concurrent use. Loading an
// encoding takes a moment and some 30 MB: make one and share it.
type Encoding struct {
	name string
	t    *tk.Tiktoken
}

// New loads the encoding of the given name, O200kBase or Cl100kBase, from
// the embedded files.
func New(name string) (*Encoding, error) {
	var special map[string]int
	var pattern string
	switch name {
	case O200kBase:
		special = map[string]int{tk.ENDOFTEXT: 199999, tk.ENDOFPROMPT: 200018}
		pattern = strings.Join([]string{
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
			`\p{N}{1,3}`,
			` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
			`\s*[\r\n]+`,
			`\s+(?!\S)`,
			`\s+`,
		}, "|")
	case Cl100kBase:
		special = map[string]int{tk.ENDOFTEXT: 100257, tk.FIM_PREFIX: 100258, tk.FIM_MIDDLE: 100259, tk.FIM_SUFFIX: 100260, tk.ENDOFPROMPT: 100276}
		pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	default:
		return nil, fmt.Errorf("tiktoken: unknown encoding %q (want %q or %q)", name, O200kBase, Cl100kBase)
	}
	// The offline loader reads the embedded file named like the one the
	// library would download; tiktoken-go's own GetEncoding would need its
	// global loader replaced, which would change it for the whole program.
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
	if err != nil {
		return nil, fmt.Errorf("tiktoken: loading %s: %w", name, err)
	}
	bpe, err := tk.NewCoreBPE(ranks, special, pattern)
	if err != nil {
		return nil, fmt.Errorf("tiktoken: %s: %w", name, err)
	}
	set := make(map[string]any, len(special))
	for k := range special {
		set[k] = true
	}
	enc := &tk.Encoding{Name: name, PatStr: pattern, MergeableRanks: ranks, SpecialTokens: special}
	return &Encoding{name: name, t: tk.NewTiktoken(bpe, enc, set)}, nil
}

// ForModel loads the encoding of an OpenAI model ("gpt-4o",
// "gpt-4o-mini-2024-07-18", "gpt-3.5-turbo"), as tiktoken maps models to
// encodings.
func ForModel(model string) (*Encoding, error) {
	name, ok := tk.MODEL_TO_ENCODING[model]
	if !ok {
		best := ""
		for prefix, n := range tk.MODEL_PREFIX_TO_ENCODING {
			if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
				best, name = prefix, n
			}
		}
	}
	if name == "" {
		// The models named since the table was written use o200k_base.
		if strings.HasPrefix(model, "o") || strings.HasPrefix(model, "gpt-") {
			name = O200kBase
		} else {
			return nil, fmt.Errorf("tiktoken: no encoding known for model %q", model)
		}
	}
	return New(name)
}

// Name returns the encoding's name, such as "o200k_base".
func (e *Encoding) Name() string { return e.name }

// CountTokens returns the tokens of text, special tokens counted as text.
func (e *Encoding) CountTokens(text string) int {
	return len(e.t.EncodeOrdinary(text))
}
