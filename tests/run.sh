#!/usr/bin/env bash
# run.sh: runs every unit test binary given as an argument and every integration script, reads
# their TAP lines, and ends with one summary line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0
failures=()

tally() { # $1: suite name; stdin: TAP output
	local line
	while IFS= read -r line; do
		case "$line" in
		"not ok "*"# SKIP"*) skipped=$((skipped + 1)); printf '  %s: %s\n' "$1" "$line" ;;
		"not ok "*) failed=$((failed + 1)); failures+=("$1: $line"); printf '  %s: %s\n' "$1" "$line" ;;
		"ok "*) passed=$((passed + 1)) ;;
		"# "*) [ -n "${VERBOSE:-}" ] && printf '  %s: %s\n' "$1" "$line" ;;
		esac
	done
}

run_suite() { # $1: name; rest: command
	local name=$1 output status failed_before=$failed
	shift
	output=$("$@" 2>&1)
	status=$?
	tally "$name" <<<"$output"
	[ "$failed" -gt "$failed_before" ] && [ "$status" -eq 0 ] && status=1
	# A suite that dies without reporting a failure is still a failure.
	if [ "$status" -ne 0 ] && ! grep -q '^not ok ' <<<"$output"; then
		failed=$((failed + 1))
		failures+=("$name: exited with status $status")
		printf '%s\n' "$output" | tail -n 20 | sed 's/^/  | /'
	fi
	printf '%-28s %s\n' "$name" "$([ "$status" -eq 0 ] && echo ok || echo FAILED)"
}

for unit in "$@"; do
	# UNIT_UNDER: a command prefix for the unit tests (`make VALGRIND=1 check`: memcheck).
	run_suite "unit/$(basename "$unit")" env CMOCKA_MESSAGE_OUTPUT=TAP ${UNIT_UNDER:-} "$unit"
done
for script in tests/integration/*_test.sh; do
	run_suite "integration/$(basename "$script" .sh)" bash "$script"
done

if [ "${#failures[@]}" -gt 0 ]; then
	printf '\nfailures:\n'
	printf '  %s\n' "${failures[@]}"
fi
printf '\n%d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
[ "$failed" -eq 0 ]
