#!/usr/bin/env bash
# run.sh SECONDS FUZZER...: runs each libFuzzer target for SECONDS from its seed corpus
# (tests/fuzz/corpus/<target>, read only; what it discovers goes to build-fuzz/corpus/<target>),
# then the fault-injection matrix (tests/integration/faults_test.sh), and prints one table.
# With FUZZ_RESULTS set (make fuzz sets bench/RESULTS.md), the table becomes the "Hardening"
# section of bench/hardening.md and of that file (bench/run.sh keeps it there). A crash, leak,
# sanitizer report, timeout or broken promise is a finding: its input is kept under
# build-fuzz/findings/ and the run fails.
set -u
cd "$(dirname "$0")/../.."
seconds=$1
shift
work=build-fuzz
mkdir -p "$work/findings" "$work/logs"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
findings=0
rows=()

for fuzzer in "$@"; do
	target=$(basename "$fuzzer" _fuzz)
	mkdir -p "$work/corpus/$target"
	log=$work/logs/$target.log
	# -timeout: one input taking 10 s is a hang; -rss_limit_mb: a parser that balloons is a bug.
	TMPDIR=$scratch "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$work/findings/$target-" \
		"$work/corpus/$target" "tests/fuzz/corpus/$target" >"$log" 2>&1
	status=$?
	executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	corpus=$(find "$work/corpus/$target" "tests/fuzz/corpus/$target" -type f | wc -l)
	if [ "$status" -eq 0 ]; then
		found=0
	else
		found=1
		findings=$((findings + 1))
		printf 'fuzz %s: finding (exit %d); log %s:\n' "$target" "$status" "$log" >&2
		grep -E 'ERROR|broken promise|SUMMARY|Test unit written' "$log" | head -n 8 >&2
	fi
	rows+=("| \`$target\` | ${executions:-0} | $seconds s | $corpus | $found |")
	printf 'fuzz %-8s %12s executions in %s s, corpus %s, findings %s\n' "$target" \
		"${executions:-0}" "$seconds" "$corpus" "$found"
done

# The fault matrix is part of make check; it is run here only for the figures it records.
faults=""
if [ -n "${FUZZ_RESULTS:-}" ]; then
	faults=$(bash tests/integration/faults_test.sh 2>&1 | sed -n 's/^# faults: //p' | tail -n 1)
	printf 'fault injection: %s\n' "${faults:-not run (build gpurun and the fakes first)}"
fi

if [ -n "${FUZZ_RESULTS:-}" ]; then
	{
		echo "## Hardening"
		echo
		echo "Measured by \`make fuzz\` (FUZZ_SECONDS=$seconds) on $(date -u +%Y-%m-%d), $(nproc) CPU(s)."
		echo "libFuzzer targets (tests/fuzz), each built with clang's ASan and UBSan, one process,"
		echo "from the checked-in seed corpus plus what earlier runs here found:"
		echo
		echo "| target | executions | time | corpus | findings |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
		echo
		# A fixed finding stays in its target's corpus as finding-*, so every run retries it.
		echo "Findings fixed so far (kept in the seed corpus as \`finding-*\`):"
		for finding in tests/fuzz/corpus/*/finding-*; do
			[ -e "$finding" ] && echo "- \`${finding#tests/fuzz/corpus/}\`"
		done
		echo
		echo "Fault injection through the fake NVML (tests/integration/faults_test.sh): ${faults:-not run}."
	} >bench/hardening.md
	if [ -f "$FUZZ_RESULTS" ]; then
		# Replace the old section (it runs to the end of the file), or append one.
		awk '/^## Hardening$/ { exit } { print }' "$FUZZ_RESULTS" >"$scratch/results"
		sed -i -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$scratch/results"
		{ cat "$scratch/results"; echo; cat bench/hardening.md; } >"$FUZZ_RESULTS"
	fi
fi
[ "$findings" -eq 0 ]
