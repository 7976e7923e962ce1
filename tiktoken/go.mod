module github.com/throttlekit/throttle/tiktoken

go 1.26.0

replace github.com/throttlekit/throttle => ../

require (
	github.com/pkoukk/tiktoken-go v0.1.8
	github.com/pkoukk/tiktoken-go-loader v0.0.2
	github.com/throttlekit/throttle v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.3.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
