#!/usr/bin/env bash
# release.sh vX.Y.Z: release every module of go.work together at one
# version, as go-redis does. On a clean tree it makes every go.mod require
# the repository's other modules at vX.Y.Z (go mod edit), tidies every
# module against the tree served at vX.Y.Z (.ci/tidy.sh), which records in
# the go.sum of cmd/throttle and examples (no replace directive) the hash of
# the root as tagged, commits that if anything changed, and tags the commit
# once per module: vX.Y.Z for the root, DIR/vX.Y.Z for the module in DIR.
# It never pushes; it prints the command that would.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "release.sh: $*" >&2; exit 1; }

(($# == 1)) || { echo "usage: release.sh vX.Y.Z" >&2; exit 2; }
version=$1
# Semantic version as Go tags it: no build metadata, and v0 or v1 only,
# since v2 and up would need /v2 in every module path.
semver='^v(0|1)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
[[ $version =~ $semver ]] || fail "$version is not a version like v0.1.0 (vMAJOR.MINOR.PATCH[-pre], major 0 or 1)"
[[ -z $(git status --porcelain=v1 --untracked-files=all) ]] || fail "the tree is not clean: $(git status --short | head -5 | tr '\n' ' ')"

mapfile -t dirs < <(go list -m -f '{{.Dir}}')
mapfile -t paths < <(go list -m -f '{{.Path}}')
here=$PWD
tags=()
for d in "${dirs[@]}"; do
	rel=${d#"$here"}
	rel=${rel#/}
	tags+=("${rel:+$rel/}$version")
done
for t in "${tags[@]}"; do
	if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
		fail "tag $t exists"
	fi
done

# Each go.mod's requirements on the repository's other modules, by name.
for d in "${dirs[@]}"; do
	mapfile -t reqs < <(cd "$d" && go mod edit -print | awk '/^require \(/{b=1;next} b&&/^\)/{b=0} b{print $1} /^require [^(]/{print $2}')
	args=()
	for r in "${reqs[@]}"; do
		for p in "${paths[@]}"; do
			[[ $r == "$p" ]] && args+=("-require=$p@$version")
		done
	done
	if ((${#args[@]})); then
		(cd "$d" && go mod edit "${args[@]}")
	fi
done
bash .ci/tidy.sh >/dev/null

if [[ -n $(git status --porcelain=v1 --untracked-files=all) ]]; then
	git status --short
	git commit -q -a -m "Release $version: every module requires the others at $version"
fi
for t in "${tags[@]}"; do
	git tag -a -m "throttle $t" "$t"
done
echo "release.sh: tagged $(git rev-parse --short HEAD) ${tags[*]}"
echo "release.sh: nothing pushed; to publish: git push origin $(git rev-parse --abbrev-ref HEAD) ${tags[*]}"
