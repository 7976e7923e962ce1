#!/usr/bin/env bash
# fuzz.sh: a short run of every fuzz target in every module of the
# workspace (THROTTLE_FUZZTIME each, 3s by default). A failing input fails
# the run and is printed; go test also writes it under the package's
# testdata/fuzz/, where it belongs once fixed, as a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${THROTTLE_FUZZTIME:-3s}
failed=0
total=0
mapfile -t modules < <(go list -m -f '{{.Dir}}' | sed "s#^$PWD#.#; s#\$#/...#")
# Every package with a fuzz target, by directory.
while read -r dir; do
	mapfile -t targets < <(grep -ho '^func Fuzz[A-Za-z0-9_]*(' "$dir"/*_test.go | sed 's/^func //; s/($//' | sort -u)
	for target in "${targets[@]}"; do
		total=$((total + 1))
		log=$(mktemp)
		before=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | sort || true)
		ok=0
		for try in 1 2; do
			if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir" >"$log" 2>&1; then
				ok=1
				break
			fi
			# Go's fuzz coordinator before 1.27 can end a run that found
			# nothing with "context deadline exceeded" as -fuzztime runs
			# out (golang/go#75804); with no failing input written, that is
			# the race, not a finding: run the target again.
			if grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
				break
			fi
			echo "again $target: the fuzzing engine stopped with no failing input (context deadline exceeded)"
		done
		if ((ok)); then
			echo "ok    $target ($dir, $fuzztime)"
		else
			failed=$((failed + 1))
			echo "FAIL  $target ($dir)"
			cat "$log"
			# The input that failed, as go test saved it.
			after=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | sort || true)
			comm -13 <(echo "$before") <(echo "$after") | while read -r f; do
				[[ -n $f ]] || continue
				echo "--- failing input $f:"
				cat "$f"
			done
		fi
		rm -f "$log"
	done
done < <(go list -f '{{.Dir}}' "${modules[@]}" |
	while read -r d; do grep -qs '^func Fuzz' "$d"/*_test.go && echo "$d"; done | sed "s#^$PWD#.#")
echo "fuzz.sh: $total targets, $failed failed"
((failed == 0))
