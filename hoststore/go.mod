module github.com/throttlekit/throttle/hoststore

go 1.26.0

replace github.com/throttlekit/throttle => ../

require (
	github.com/gofrs/flock v0.13.2
	github.com/jonboulle/clockwork v0.5.0
	github.com/throttlekit/throttle v0.1.0
	go.uber.org/goleak v1.3.0
)

require golang.org/x/sys v0.49.0 // indirect
