module github.com/throttlekit/throttle/statuspage/browsertest

go 1.26.0

require (
	github.com/chromedp/chromedp v0.24.0
	github.com/jonboulle/clockwork v0.5.0
	github.com/throttlekit/throttle v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

replace github.com/throttlekit/throttle => ../..
