module github.com/throttlekit/throttle/benchmarks

go 1.26.0

replace (
	github.com/throttlekit/throttle => ../
	github.com/throttlekit/throttle/hoststore => ../hoststore
	github.com/throttlekit/throttle/redisbucket => ../redisbucket
)

require (
	github.com/go-chi/httprate v0.16.1
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/jonboulle/clockwork v0.5.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sethvargo/go-limiter v0.7.1
	github.com/throttlekit/throttle v0.1.0
	github.com/throttlekit/throttle/hoststore v0.1.0
	github.com/throttlekit/throttle/redisbucket v0.1.0
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.16.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
