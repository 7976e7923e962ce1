package tiktoken_test

import (
	"sync"
	"testing"

	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/tiktoken"
)

var (
	o200k, cl100k *tiktoken.Encoding
	loadOnce      sync.Once
)

func encodings(t testing.TB) (*tiktoken.Encoding, *tiktoken.Encoding) {
	loadOnce.Do(func() {
		var err error
		if o200k, err = tiktoken.New(tiktoken.O200kBase); err != nil {
			t.Fatal(err)
		}
		if cl100k, err = tiktoken.New(tiktoken.Cl100kBase); err != nil {
			t.Fatal(err)
		}
	})
	return o200k, cl100k
}

// Counts of OpenAI's tiktoken (Python) for the same strings; a count of -1
// is not checked for that encoding.
func TestCountTokens(t *testing.T) {
	o, c := encodings(t)
	for _, tt := range []struct {
		text      string
		o200, cl1 int
	}{
		{"hello world", 2, 2},
		{"", 0, 0},
		{"hello world!你好，世界！", -1, 10}, // tiktoken-go's own test
		{"tiktoken is great!", -1, 6},  // OpenAI's cookbook
	} {
		if got := o.CountTokens(tt.text); tt.o200 >= 0 && got != tt.o200 {
			t.Errorf("o200k_base %q: %d tokens, want %d", tt.text, got, tt.o200)
		}
		if got := c.CountTokens(tt.text); got != tt.cl1 {
			t.Errorf("cl100k_base %q: %d tokens, want %d", tt.text, got, tt.cl1)
		}
	}
	// A special token's text is counted as text, not refused.
	if n := c.CountTokens("<|endoftext|>"); n <= 1 {
		t.Errorf("<|endoftext|> counted as %d tokens, want its text's", n)
	}
	var _ llm.Tokenizer = o
}

func TestForModel(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o": tiktoken.O200kBase, "gpt-4o-mini-2024-07-18": tiktoken.O200kBase, "gpt-4-0613": tiktoken.Cl100kBase,
		"gpt-3.5-turbo": tiktoken.Cl100kBase, "gpt-5-nano": tiktoken.O200kBase,
	} {
		e, err := tiktoken.ForModel(model)
		if err != nil || e.Name() != want {
			t.Errorf("ForModel(%q) = %v, %v; want %s", model, e, err, want)
		}
	}
	if _, err := tiktoken.ForModel("claude-3"); err == nil {
		t.Error("ForModel found an OpenAI encoding for a Claude model")
	}
	if _, err := tiktoken.New("p50k_base"); err == nil {
		t.Error("New accepted an encoding it does not know")
	}
}

func TestConcurrentCount(t *testing.T) {
	o, _ := encodings(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if n := o.CountTokens("hello world"); n != 2 {
					t.Errorf("%d tokens", n)
				}
			}
		})
	}
	wg.Wait()
}
