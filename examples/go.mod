module github.com/throttlekit/throttle/examples

go 1.26.0

require (
	github.com/openai/openai-go/v3 v3.99.0
	github.com/throttlekit/throttle v0.1.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)
