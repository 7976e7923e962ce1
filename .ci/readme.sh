#!/usr/bin/env bash
# readme.sh: what README.md promises beyond the unit tests.
#
#   snippets   every ```go block of every Markdown file compiles, and every
#              Go code block of the doc comments of every module: one go vet
#              over each set against every module (readme_snippets_test.go,
#              doc_snippets_test.go, build tag snippets). It compiles the
#              OpenAI and Anthropic SDKs, minutes on a cold cache, so it runs
#              here, not in the root package's unit tests.
#   clean CMD  runs CMD (a README command) and fails if it changed the tree:
#              a tracked file rewritten (go.work.sum, say) or a file left.
set -euo pipefail
cd "$(dirname "$0")/.."

case ${1:-} in
snippets)
	go vet -tags snippets .
	go test -count=1 -tags snippets -run '^Test(Markdown|Doc)Snippets' .
	;;
clean)
	shift
	before=$(git status --porcelain=v1 --untracked-files=all; git diff | sha256sum)
	"$@"
	after=$(git status --porcelain=v1 --untracked-files=all; git diff | sha256sum)
	if [[ $before != "$after" ]]; then
		echo "readme.sh: '$*' changed the tree:" >&2
		diff <(echo "$before") <(echo "$after") >&2 || true
		git diff --stat >&2
		exit 1
	fi
	;;
*)
	echo "usage: readme.sh snippets | clean CMD..." >&2
	exit 2
	;;
esac
