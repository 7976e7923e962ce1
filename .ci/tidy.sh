#!/usr/bin/env bash
# tidy.sh [DIR...]: go mod tidy in each module DIR (default: every module of
# go.work), the supported way to tidy one here. Each module requires the
# others at a release version (v0.1.0, say) that may not be published yet,
# so a plain `GOWORK=off go mod tidy` cannot fetch it where no replace
# directive points it at the checkout (cmd/throttle and examples have none:
# `go install pkg@version` refuses a module with one). This serves the
# working tree at that version from a file-based proxy (.ci/modproxy) and
# tidies against it, with everything else from the module cache or the
# module proxy.
#
# A throwaway module cache keeps the tree's modules out of the real one: the
# tree changes under one version, and a cache would keep the first copy it
# saw. The tree's modules are not in the checksum database, and go.sum lines
# for them are dropped first: between releases the tree no longer matches
# the hash recorded at the last tidy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if (($# == 0)); then
	mapfile -t dirs < <(go list -m -f '{{.Dir}}')
else
	dirs=()
	for d in "$@"; do dirs+=("$(cd "$d" && pwd)"); done
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$(go env GOMODCACHE)
flags=$(go env GOFLAGS)
(cd .ci/modproxy && GOWORK=off go run . -work "$root/go.work" -o "$tmp/proxy") >"$tmp/served"

export GOWORK=off GOFLAGS="$flags -modcacherw" GOMODCACHE="$tmp/modcache"
export GOPROXY="file://$tmp/proxy,file://$cache/cache/download,https://proxy.golang.org"
export GONOSUMDB=github.com/throttlekit/throttle
for d in "${dirs[@]}"; do
	[[ -f $d/go.mod ]] || { echo "tidy.sh: $d has no go.mod" >&2; exit 1; }
	echo "tidy.sh: ${d#"$root"/}"
	if [[ -f $d/go.sum ]]; then
		grep -v '^github\.com/throttlekit/throttle[/ ]' "$d/go.sum" >"$tmp/go.sum" || true
		cat "$tmp/go.sum" >"$d/go.sum"
	fi
	(cd "$d" && go mod tidy)
done
