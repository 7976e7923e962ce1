package tiktoken_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/tiktoken"
)

// ExampleForModel gives a Transport's LLM calls the model's own token
// counts: each call reserves the tokens its prompt really has, not a guess
// from its length, so a tokens-per-minute bucket is neither overrun by
// dense text nor held up by sparse text.
func ExampleForModel() {
	enc, err := tiktoken.ForModel("gpt-4o")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(enc.Name(), enc.CountTokens("hello world"))

	tokens, err := throttle.New(200_000, throttle.Per(200_000, time.Minute), throttle.WithName("tokens"))
	if err != nil {
		log.Fatal(err)
	}
	lim, err := throttle.NewLimiter(tokens)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(lim),
		httpthrottle.WithAccounting(llm.Config{Tokenizer: enc}))
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	_ = client // the SDK's client, built over this http.Client
	// Output:
	// o200k_base 2
}
