module github.com/throttlekit/throttle/hoststore

go 1.26.0

replace github.com/throttlekit/throttle => ../

require (
	github.com/jonboulle/clockwork v0.5.0
	github.com/throttlekit/throttle v0.1.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
