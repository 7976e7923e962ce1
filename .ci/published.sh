#!/usr/bin/env bash
# published.sh: the modules install as a consumer would install them once
# tagged. .ci/modproxy serves the working tree, every module of go.work, at
# the version the go.mod files require of each other (it fails, naming the
# go.mod, if one requires a pseudo-version) from a file-based GOPROXY. A
# fresh module outside the tree, with no replace and no workspace, then
# gets the root, redisbucket, hoststore, grpcthrottle and otelthrottle at that
# version, builds and runs the README's program (Example_readme) beside
# imports of the three integrations, and `go install`s cmd/throttle@version,
# which refuses a module whose go.mod has a replace directive.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "published.sh: $*" >&2; exit 1; }
mod=github.com/throttlekit/throttle

(cd "$root/.ci/modproxy" && GOWORK=off go vet . && GOWORK=off go run . -work "$root/go.work" -o "$tmp/proxy") >"$tmp/served" ||
	fail "cannot serve the working tree (above)"
version=$(head -1 "$tmp/served" | cut -d@ -f2)
echo "published.sh: serving $(wc -l <"$tmp/served") modules at $version"

# The real module cache, read as a proxy, saves fetching what is already
# there; the throwaway cache keeps this tree's modules, served under a
# version that does not pin their content, out of the real one.
cache=$(go env GOMODCACHE)
export GOWORK=off GOFLAGS="$(go env GOFLAGS) -modcacherw" GOMODCACHE="$tmp/modcache" GOBIN="$tmp/bin"
export GOPROXY="file://$tmp/proxy,file://$cache/cache/download,https://proxy.golang.org"
export GONOSUMDB=$mod

mkdir "$tmp/consumer"
cd "$tmp/consumer"
cat >go.mod <<'MOD'
module example.com/consumer

go 1.26.0
MOD
go get "$mod@$version" "$mod/redisbucket@$version" "$mod/hoststore@$version" "$mod/grpcthrottle@$version" "$mod/otelthrottle@$version" ||
	fail "go get of the modules at $version failed"
for m in "$mod" "$mod/redisbucket" "$mod/hoststore" "$mod/grpcthrottle" "$mod/otelthrottle"; do
	got=$(go list -m -f '{{.Version}}' "$m")
	[[ $got == "$version" ]] || fail "$m resolved to $got, not $version"
done
if go mod edit -print | grep -q '^replace'; then
	fail "the consumer's go.mod has a replace directive"
fi

# The README's program: Example_readme as func main, its // Output: block
# the output it must print.
sed -e 's/^package throttle_test$/package main/' -e 's/^func Example_readme() {$/func main() {/' \
	"$root/example_readme_test.go" >main.go
grep -q '^func main() {$' main.go || fail "example_readme_test.go has no func Example_readme"
sed -n '/^\t\/\/ Output:$/,/^}$/p' "$root/example_readme_test.go" | sed -e '1d' -e '$d' -e 's#^\t// \{0,1\}##' >want
cat >integrations.go <<SRC
package main

// Each integration compiles in a consumer against the root at the same version.
import (
	_ "$mod/grpcthrottle"
	_ "$mod/hoststore"
	_ "$mod/otelthrottle"
	_ "$mod/redisbucket"
)
SRC
go mod tidy || fail "go mod tidy failed in the consumer"
go vet . || fail "go vet failed in the consumer"
go build -o "$tmp/readme" . || fail "the consumer does not build"
"$tmp/readme" >got
[[ -s want ]] || fail "no // Output: block in example_readme_test.go"
diff -u want got || fail "the README's program printed something else"
echo "published.sh: go get $mod, redisbucket, hoststore, grpcthrottle, otelthrottle @$version; the README's program builds and prints its Output"

go install "$mod/cmd/throttle@$version" || fail "go install $mod/cmd/throttle@$version failed"
got=$("$GOBIN/throttle" replay --capacity 2 --rate 1 0 0 0 1 3)
[[ $got == "true true false true true" ]] || fail "throttle replay printed '$got', want 'true true false true true'"
"$GOBIN/throttle" --version | grep -q " $version " || fail "throttle --version: $("$GOBIN/throttle" --version), want $version"
echo "published.sh: go install $mod/cmd/throttle@$version; throttle replay --capacity 2 --rate 1 0 0 0 1 3 prints $got"
