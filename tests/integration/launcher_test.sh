#!/usr/bin/env bash
# launcher_test.sh: the built gpurun against the fake NVML and nvidia-smi on the demo machine
# (four.fixture: GPU0 busy, GPU1 just over half its memory, GPU2 and GPU3 free; GPU2 has the
# least memory in use, GPU3 the most free after GPU2).
. "$(dirname "$0")/lib.sh"
use_fixture four.fixture
uuid_of() { awk -v want="$1" '/^gpu/ { n++ } /^uuid / && n == want + 1 { print $2 }' "$GPURUN_FAKE_FIXTURE"; }
UUID2=$(uuid_of 2)
UUID3=$(uuid_of 3)
SHOW_ENV='printf "%s|%s|%s\n" "${CUDA_VISIBLE_DEVICES-unset}" "${CUDA_DEVICE_ORDER-unset}" "${GPURUN_CHOSEN-unset}"'

# --- choosing and handing off -------------------------------------------------------------
run "$GPURUN" --limit 1 --order memory sh -c "$SHOW_ENV"
expect "order memory picks the least-used memory, with PCI_BUS_ID order" 0 "2|PCI_BUS_ID|2"

run "$GPURUN" --limit 2 --max-load 0.3 --min-free 20G --attempts 10 --interval 30 -- sh -c "$SHOW_ENV"
expect "limit 2, max-load, min-free in GiB, -- separator" 0 "2,3|PCI_BUS_ID|2,3"

run "$GPURUN" --print --order free
expect "--print --order free prints the GPU with the most free memory" 0 "2"

run "$GPURUN" --print --order last
expect "--order last" 0 "3"

run "$GPURUN" --print --order load --limit all
expect "--order load --limit all: every available GPU, least loaded first" 0 "2,3"

run "$GPURUN" --print --uuid --limit 2
expect "--uuid hands out UUIDs" 0 "$UUID2,$UUID3"

run "$GPURUN" --uuid sh -c "$SHOW_ENV"
expect "--uuid leaves CUDA_DEVICE_ORDER alone" 0 "$UUID2|unset|$UUID2"

run "$GPURUN" --print --exclude 2
expect "--exclude by index" 0 "3"

run "$GPURUN" --print --exclude "$UUID2"
expect "--exclude by UUID" 0 "3"

run "$GPURUN" --print --exclude "2,$UUID3"
expect_error "--exclude index and UUID together leaves nothing: exit 75, the excluded not called busy" 75 \
	"wanted 1 GPU, found 0 available \(0 leased by other jobs, 2 busy,"

run "$GPURUN" --print --max-memory 0.51
expect "--max-memory 0.51 admits GPU1 (50.05 % used)" 0 "1"

run "$GPURUN" --print --max-memory 50%
expect "--max-memory 50% is strict: GPU1 at 50.05 % stays out" 0 "2"

run "$GPURUN" --print --min-free 70000
expect "--min-free in MiB" 0 "2"

run "$GPURUN" --print --limit 3
expect_error "a job that asks for 3 gets 3 or exits 75" 75 "wanted 3 GPUs, found 2 available"

run "$GPURUN" --print --limit 3 --min-count 2
expect "--min-count 2 accepts two of three" 0 "2,3"

run "$GPURUN" --print --source nvidia-smi --order memory --limit 2
expect "the nvidia-smi path makes the same choice" 0 "2,3"

# --- inherited CUDA_VISIBLE_DEVICES is a mask ---------------------------------------------
CUDA_VISIBLE_DEVICES=0,3 run "$GPURUN" --print
expect "an inherited index mask restricts the choice" 0 "3"

CUDA_VISIBLE_DEVICES=$UUID2 run "$GPURUN" --print
expect "an inherited UUID mask restricts the choice" 0 "2"

CUDA_VISIBLE_DEVICES=0,1 run "$GPURUN" --print
expect_error "nothing available inside the mask: exit 75" 75 "wanted 1 GPU"

# --- waiting ---------------------------------------------------------------------------------
run_timed "$GPURUN" --print --limit 3 --attempts 3 --interval 0.5
expect_error "--attempts 3 fails with exit 75 naming the attempts" 75 "after 3 attempts"
expect_took "two intervals between three attempts, no sleep after the last" 1.0 1.45

run_timed "$GPURUN" --print --limit 3 --timeout 0.5 --interval 0.1
expect_error "--timeout gives up with exit 75" 75 "wanted 3 GPUs"
expect_took "--timeout 0.5 waits about 0.5 s" 0.5 1.2

# --interval 0 (GPUtil's "again at once") still leaves 10 ms between looks: no spinning.
run "$GPURUN" --print --limit 3 --timeout 0.5 --interval 0 --verbose
attempts=$(grep -c "^gpurun: attempt " <<<"$ERR_TEXT")
check "--interval 0 looks at most 100 times a second ($attempts looks in 0.5 s)" \
	test "$STATUS" = 75 -a "$attempts" -ge 1 -a "$attempts" -le 60

run "$GPURUN" --print --limit 3 --attempts 2 --interval 0.05 --verbose
if [ "$STATUS" = 75 ] && grep -q '^gpurun: attempt 1/2: wanted 3 GPUs, 2 available' <<<"$ERR_TEXT" &&
	grep -q '^gpurun: attempt 2/2: wanted 3 GPUs, 2 available' <<<"$ERR_TEXT" &&
	[ "$(tail -n 1 <<<"$ERR_TEXT")" = "$(grep '^gpurun: wanted 3' <<<"$ERR_TEXT")" ]; then
	ok "--verbose prints one progress line per attempt, then the failure"
else
	not_ok "--verbose prints one progress line per attempt, then the failure" "$ERR_TEXT"
fi

# On a terminal: one line that redraws itself while gpurun waits, erased before the verdict.
if command -v script >/dev/null; then
	script -qec "$(printf '%q ' "$GPURUN" --print --limit 3 --attempts 3 --interval 0.05)" \
		/dev/null >"$SCRATCH/tty" 2>&1
	drawn=$(sed 's/\x1b\[K/<EL>/g' "$SCRATCH/tty" | tr '\r' '\n')
	if grep -q '^<EL>gpurun: waiting: wanted 3 GPUs, 2 available (0 leased by others, 2 busy, 0 waiting ahead), [0-9]*s elapsed (attempt 2/3)$' <<<"$drawn" &&
		grep -v '^$' <<<"$drawn" | tail -n 1 |
		grep -q '^<EL>gpurun: wanted 3 GPUs, found 2 available (0 leased by other jobs, 2 busy, 0 waiting ahead) after 3 attempts in [0-9]*s$'; then
		ok "on a terminal, one self-redrawing status line, erased before the failure"
	else
		not_ok "on a terminal, one self-redrawing status line, erased before the failure" "$drawn"
	fi
else
	skip "on a terminal, one self-redrawing status line" "no script(1) to run gpurun under a pseudo-terminal"
fi

run "$GPURUN" --limit 3 --cpu-fallback sh -c "$SHOW_ENV"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "|unset|" ] && grep -q 'cpu-fallback' <<<"$ERR_TEXT"; then
	ok "--cpu-fallback runs the command with CUDA_VISIBLE_DEVICES empty"
else
	not_ok "--cpu-fallback runs the command with CUDA_VISIBLE_DEVICES empty" "$STATUS $OUT_TEXT $ERR_TEXT"
fi

# --- exec semantics ---------------------------------------------------------------------------
run "$GPURUN" sh -c 'exit 42'
expect "the program's exit status is gpurun's" 42

"$GPURUN" sh -c 'echo $$ >"$0"' "$SCRATCH/pid" &
launcher_pid=$!
wait "$launcher_pid"
check "the program runs in gpurun's own process (same PID)" test "$(cat "$SCRATCH/pid")" = "$launcher_pid"

run "$GPURUN" no-such-command-gpurun
expect_error "a missing command exits 127" 127 "cannot run 'no-such-command-gpurun'"

printf 'not a program' >"$SCRATCH/not-executable"
chmod 644 "$SCRATCH/not-executable"
run "$GPURUN" "$SCRATCH/not-executable"
expect_error "a command that cannot be executed exits 126" 126 "cannot run"

# A gpurun inside a job that gpurun started keeps the job's GPU: choosing again would wait on
# the job's own lease for ever.
run timeout 20 "$GPURUN" --limit 1 sh -c '"$0" --wait --limit 1 sh -c "echo \$CUDA_VISIBLE_DEVICES"; "$0" --print -v' "$GPURUN"
expect "a nested gpurun keeps the job's GPU, with --wait and with --print" 0 "2
2"
has_line "... and -v says why nothing is chosen" "^gpurun: GPURUN_CHOSEN=2: this job's GPUs are chosen already"
# A worker handed a part of the job's GPUs keeps that part.
run env GPURUN_CHOSEN=1,2 CUDA_VISIBLE_DEVICES=2 "$GPURUN" --print
expect "a nested gpurun given a part of the job's GPUs keeps that part" 0 "2"
# A stale GPURUN_CHOSEN: a Slurm job submitted from a shell that gpurun started (sbatch copies
# the environment, then sets CUDA_VISIBLE_DEVICES to the allocation). The allocation counts.
run env GPURUN_CHOSEN=2 SLURM_JOB_ID=5 SLURM_JOB_GPUS=1,3 CUDA_VISIBLE_DEVICES=1,3 \
	"$GPURUN" --print --order memory -v
expect "a stale GPURUN_CHOSEN: gpurun chooses inside the allocation" 0 "3"
has_line "... and -v says the inherited choice is stale" \
	"^gpurun: GPURUN_CHOSEN=2 is stale: CUDA_VISIBLE_DEVICES=1,3 is not that choice"
# An AMD hand-off's ROCR_VISIBLE_DEVICES still matching does not make it current: Slurm's
# CUDA_VISIBLE_DEVICES, set since, decides.
run env GPURUN_CHOSEN=1 ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=3 "$GPURUN" --print
expect "a stale GPURUN_CHOSEN that ROCR_VISIBLE_DEVICES still names: CUDA_VISIBLE_DEVICES decides" 0 "3"
run env GPURUN_CHOSEN=2 NVIDIA_VISIBLE_DEVICES=none "$GPURUN" --print
expect_error "a stale GPURUN_CHOSEN with CUDA_VISIBLE_DEVICES unset: the container's mask counts" \
	75 "NVIDIA_VISIBLE_DEVICES"
# Inside a job that fell back to the CPU, a nested gpurun decides by its own options.
run "$GPURUN" --cpu-fallback --exclude 0,1,2,3 sh -c '"$0" --print' "$GPURUN"
expect "a nested --print in a --cpu-fallback job without a GPU fails as a --print does" 75
has_line "... saying that the job's CUDA_VISIBLE_DEVICES allows no GPU" \
	"^gpurun: no GPU may be chosen: CUDA_VISIBLE_DEVICES is empty"

# What gpurun prints is the answer itself: a failed write is an error, said on stderr.
# write_fails NAME STDOUT PATTERN WORDS...: gpurun WORDS, its stdout /dev/full or "closed" (it
# holds the place while it runs, but not for writing), exits 70 with a line matching PATTERN.
write_fails() {
	local name=$1 target=$2 pattern=$3
	shift 3
	if [ "$target" = closed ]; then
		timeout 10 "$GPURUN" "$@" >&- 2>"$SCRATCH/stderr"
	elif [ -w "$target" ]; then
		timeout 10 "$GPURUN" "$@" >"$target" 2>"$SCRATCH/stderr"
	else
		skip "$name" "no $target"
		return
	fi
	STATUS=$? ERR_TEXT=$(cat "$SCRATCH/stderr")
	if [ "$STATUS" = 70 ] && grep -q "$pattern" <<<"$ERR_TEXT"; then
		ok "$name"
	else
		not_ok "$name" "status $STATUS" "$ERR_TEXT"
	fi
}
for words in "--print" "--version" "--help" "--print --cpu-fallback --limit 9"; do
	# shellcheck disable=SC2086
	write_fails "$words into a full device: exit 70, said" /dev/full \
		"^gpurun: cannot write to standard output: " $words
done
for words in "--print" "--show" "--show --watch 0.1" "--show --json --watch 0.1"; do
	# shellcheck disable=SC2086
	write_fails "$words into a closed stdout: exit 70, said" closed "^gpurun: cannot write" $words
done
write_fails "--show --watch into a full device: exit 70 at the first frame, said" /dev/full \
	"^gpurun: cannot write the report: " --show --watch 0.1

# --- usage errors ------------------------------------------------------------------------------
run "$GPURUN" --lmit 1 true
expect_error "unknown option: exit 2, named" 2 "--lmit"
run "$GPURUN" --max-load 1.5 true
expect_error "bad value: exit 2, option named" 2 "--max-load"
run "$GPURUN"
expect_error "no command: exit 2" 2 "command"
run "$GPURUN" --help
if [ "$STATUS" = 0 ] && [ -z "$ERR_TEXT" ]; then
	missing=
	for option in --limit --min-count --max-load --max-memory --min-free --include-nan --exclude \
		--order --seed --attempts --interval --wait --timeout --uuid --cpu-fallback --no-lease \
		--lock-dir --lazy --preload-lib --source --smi-timeout --print --show --all --json \
		--verbose --explain --help --version; do
		grep -q -- "$option" <<<"$OUT_TEXT" || missing="$missing $option"
	done
	if [ -z "$missing" ]; then ok "--help names every option"; else not_ok "--help names every option" "missing:$missing"; fi
else
	not_ok "--help names every option" "status $STATUS"
fi
run "$GPURUN" --version
expect "--version" 0 "gpurun $(sed -n 's/^#define GPURUN_VERSION "\(.*\)"/\1/p' "$ROOT/lib/gpurun.h")"

# --- no GPU information -------------------------------------------------------------------
GPURUN_NVML_LIB=$SCRATCH/none.so GPURUN_NVIDIA_SMI=$SCRATCH/no-smi run "$GPURUN" --print
expect_error "neither NVML nor nvidia-smi: exit 69 naming both" 69 "NVML.*nvidia-smi"
GPURUN_NVML_LIB=$SCRATCH/none.so GPURUN_NVIDIA_SMI=$SCRATCH/no-smi run "$GPURUN" true
expect_error "the launcher does not run the command without GPU information" 69 "NVML"
GPURUN_NVML_LIB=$SCRATCH/none.so GPURUN_NVIDIA_SMI=$SCRATCH/no-smi run "$GPURUN" --cpu-fallback sh -c "$SHOW_ENV"
if [ "$STATUS" = 0 ] && [ "$OUT_TEXT" = "|unset|" ] && grep -q 'no GPU information.*--cpu-fallback' <<<"$ERR_TEXT"; then
	ok "--cpu-fallback runs the command on the CPU when there is no GPU at all"
else
	not_ok "--cpu-fallback runs the command on the CPU when there is no GPU at all" "$STATUS $OUT_TEXT $ERR_TEXT"
fi
use_fixture no-driver.fixture
run "$GPURUN" --print --source nvml
expect_error "NVML without a driver names the cause" 69 "[Dd]river"
use_fixture no-devices.fixture
run "$GPURUN" --print
expect_error "a driver that sees no GPU: exit 69 from both sources" 69 "NVML: the driver sees no GPU.*No devices were found"
use_fixture smi-hang.fixture
run_timed "$GPURUN" --print --source nvidia-smi --smi-timeout 0.3
expect_error "a hung nvidia-smi is killed with a clear error" 69 "nvidia-smi"
expect_took "the hung nvidia-smi costs about the timeout" 0 2
use_fixture four.fixture

# --- reports ---------------------------------------------------------------------------------
run "$GPURUN" --show
if [ "$STATUS" = 0 ] && cmp -s "$SCRATCH/stdout" "$EXPECTED/four.table"; then ok "--show prints GPUtil's table byte for byte"; else not_ok "--show prints GPUtil's table byte for byte" "$(diff "$SCRATCH/stdout" "$EXPECTED/four.table")"; fi
run "$GPURUN" --show --all
if [ "$STATUS" = 0 ] && cmp -s "$SCRATCH/stdout" "$EXPECTED/four.all.table"; then ok "--show --all prints GPUtil's full table byte for byte"; else not_ok "--show --all prints GPUtil's full table byte for byte" "$(diff "$SCRATCH/stdout" "$EXPECTED/four.all.table")"; fi
run "$GPURUN" --show --source nvidia-smi
if [ "$STATUS" = 0 ] && cmp -s "$SCRATCH/stdout" "$EXPECTED/four.table"; then ok "--show from nvidia-smi prints the same table"; else not_ok "--show from nvidia-smi prints the same table" "$OUT_TEXT"; fi
run "$GPURUN" --show --json
if [ "$STATUS" = 0 ] && python3 -c '
import json, sys
doc = json.load(sys.stdin)
gpus = doc["gpus"]
assert [g["index"] for g in gpus] == [0, 1, 2, 3], gpus
assert gpus[2]["memory.used"] == 2000 and gpus[0]["utilization.gpu"] == 85
assert doc["hostname"] and doc["driver_version"]
' <"$SCRATCH/stdout"; then ok "--show --json is valid JSON with gpustat's keys"; else not_ok "--show --json is valid JSON with gpustat's keys" "$OUT_TEXT"; fi
