#!/usr/bin/env bash
# consumer.sh: what a consumer of the root package inherits. A throwaway
# module that imports only github.com/throttlekit/throttle (replaced by this
# checkout), and already uses older openai-go, otel, go-redis and grpc-go,
# is tidied; it must gain the root's three requirements (goleak, for the root's tests,
# adds two go.sum lines but no requirement) and upgrade nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "consumer.sh: $*" >&2; cat go.mod >&2; exit 1; }

cat >go.mod <<MOD
module example.com/consumer

go 1.26.0

replace github.com/throttlekit/throttle => $root
MOD
cat >main.go <<'SRC'
package main

import (
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

func main() {
	b, err := throttle.New(1, throttle.Per(1, time.Second))
	ok, _ := b.TryAcquire(1)
	fmt.Println(ok, err)
}
SRC
GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || fail "go mod tidy failed"
GOWORK=off go build ./... || fail "the consumer does not build"
# Requirements the consumer's go.mod gains besides throttle itself.
reqs=$(GOWORK=off go list -m -f '{{if not .Main}}{{.Path}}{{end}}' $(GOWORK=off go mod edit -print | awk '/^require \(/{b=1;next} b&&/^\)/{b=0} b{print $1} /^require [^(]/{print $2}') | grep -vc '^github.com/throttlekit/throttle$' || true)
sums=$(wc -l <go.sum)
grep -q '^go 1.26.0$' go.mod || fail "the consumer's go line changed"
# go.sum has no lines for throttle itself here (it is replaced); a consumer
# of a published version adds its two.
echo "consumer.sh: a consumer of the root package: $reqs requirements besides throttle, $((sums + 2)) go.sum lines with throttle's own two, go line 1.26.0 kept"
# The integrations' dependencies stay theirs: grpcthrottle's grpc-go
# above all, the heaviest of them, and hoststore's x/sys.
if GOWORK=off go list -m all | grep -qE '^(google.golang.org/grpc|github.com/redis/go-redis/v9|go.opentelemetry.io/otel|golang.org/x/sys) '; then
	fail "the root package pulled in an integration's dependency: $(GOWORK=off go list -m all | grep -E '^(google.golang.org/grpc|github.com/redis/go-redis/v9|go.opentelemetry.io/otel|golang.org/x/sys) ' | tr '\n' ' ')"
fi
((reqs <= 3)) || fail "$reqs requirements besides throttle, want at most 3"
((sums + 2 <= 10)) || fail "$((sums + 2)) go.sum lines, want at most 10"

# A consumer that already uses older versions of what our sub-modules use.
cat >go.mod <<MOD
module example.com/consumer

go 1.26.0

require (
	github.com/openai/openai-go/v3 v3.91.1
	github.com/redis/go-redis/v9 v9.7.0
	go.opentelemetry.io/otel v1.38.0
	google.golang.org/grpc v1.66.2
)

replace github.com/throttlekit/throttle => $root
MOD
cat >deps.go <<'SRC'
package main

import (
	_ "github.com/openai/openai-go/v3"
	_ "github.com/redis/go-redis/v9"
	_ "go.opentelemetry.io/otel"
	_ "google.golang.org/grpc"
)
SRC
GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || fail "go mod tidy failed with the other modules"
for want in 'github.com/openai/openai-go/v3 v3.91.1' 'github.com/redis/go-redis/v9 v9.7.0' 'go.opentelemetry.io/otel v1.38.0' 'google.golang.org/grpc v1.66.2'; do
	GOWORK=off go list -m all | grep -qx "$want" || fail "adding throttle changed $want"
done
grep -q '^go 1.26.0$' go.mod || fail "the consumer's go line changed"
echo "consumer.sh: openai-go v3.91.1, go-redis v9.7.0, otel v1.38.0 and grpc-go v1.66.2 kept"
