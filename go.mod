module github.com/throttlekit/throttle

go 1.26.0

// What the root package imports, and goleak for its tests: a consumer's
// go.mod gains the first three and its go.sum goleak's two lines, nothing
// else (.ci/consumer.sh checks it). Every other dependency lives in the
// module that needs it.
require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/jonboulle/clockwork v0.5.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.25.0
)
