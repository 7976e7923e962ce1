// Package llm accounts for calls to OpenAI-, Anthropic- and Gemini-style
// JSON APIs, which count requests and tokens per minute, on an
// httpthrottle.Transport: a [Config] is an httpthrottle.Accounting that
// reserves an estimate of each call's tokens before it is sent and settles
// it to the usage the response reports.
//
//	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(lim),
//		httpthrottle.WithAccounting(llm.Config{}))
//
// It is a package of its own so that a Transport that counts no tokens
// links none of what the estimate needs (image decoders, to size the
// images of a prompt).
//
// # Every type, one line each
//
//   - [Config]: which limit counts requests and which tokens, and how
//     tokens are estimated; [Config.Cost] is its estimate as an
//     httpthrottle.CostFunc (for Handler's WithCost).
//   - [Outputs], made by [NewOutputs]: the output tokens calls of each
//     model really use, reserved instead of their max_tokens.
//   - [Usage], read by [ParseUsage]: the tokens a response reports.
//   - [Tokenizer]: counts prompt text exactly (the tiktoken module's).
//   - [ModelKey] keys limiters by the model a request names.
package llm
