#!/usr/bin/env bash
# processes_test.sh: who uses each GPU (--show --processes, --json) from the fake NVML's process
# lists and the /proc trees in tests/fixtures/amd, and --show --watch under a pseudo-terminal.
. "$(dirname "$0")/lib.sh"
use_fixture four.fixture
AMD=$FIXTURES/amd
WATCH=$ROOT/tests/integration/watch_pty.py
ESC=$'\e'

scratch_fixture() { # NAME LINE...: a fixture written from its lines
	local name=$1
	shift
	printf '%s\n' "$@" >"$SCRATCH/$name"
	use_fixture "$SCRATCH/$name"
}

# --- NVIDIA processes, seen from the host ----------------------------------------------------------
export GPURUN_SYSFS_ROOT=$AMD/host-proc
run "$GPURUN" --show --processes
expected="| ID | GPU | MEM |
------------------
|  0 | 85% | 73% |
    48211  root  59400 MiB  python train.py --epochs 90
|  1 |  0% | 50% |
    48377  4242  40500 MiB  [nccl-worker]
|  2 |  3% |  2% |
    49102  ?      1500 MiB  ?
|  3 | 10% | 15% |
    49233  ?     11500 MiB  ?"
expect "--processes: pid, user, MiB and command under each GPU; gone or unreadable ones as ?" 0 "$expected"

run "$GPURUN" --show --json
if [ "$STATUS" = 0 ] && python3 -c '
import json, sys
gpus = json.load(sys.stdin)["gpus"]
assert gpus[0]["processes"] == [{"pid": 48211, "username": "root", "command": "python train.py --epochs 90", "gpu_memory_usage": 59400}], gpus[0]
assert gpus[2]["processes"] == [{"pid": 49102, "username": None, "command": None, "gpu_memory_usage": 1500}], gpus[2]
' <"$SCRATCH/stdout"; then ok "--json: gpustat's process keys, filled where /proc says"; else not_ok "--json: gpustat's process keys, filled where /proc says" "$OUT_TEXT"; fi

run "$GPURUN" --show --all
if [ "$STATUS" = 0 ] && cmp -s "$SCRATCH/stdout" "$EXPECTED/four.all.table"; then ok "--show --all is still GPUtil's table"; else not_ok "--show --all is still GPUtil's table" "$OUT_TEXT"; fi

# --- from inside a container: NVML's host PIDs mean nothing in our /proc ---------------------------
GPURUN_SYSFS_ROOT=$AMD/container-proc run "$GPURUN" --show --processes
if [ "$STATUS" = 0 ] && grep -q "^    48211  ?  59400 MiB  ?$" <<<"$OUT_TEXT" && ! grep -q bash <<<"$OUT_TEXT"; then
	ok "another PID namespace: unknown, not the container's own pid 48211, not an error"
else
	not_ok "another PID namespace: unknown, not the container's own pid 48211, not an error" "$OUT_TEXT" "$ERR_TEXT"
fi

# --- process lists that change or fail -------------------------------------------------------------
scratch_fixture lists.fixture gpu "process 48211 100" "process_race 48377 200" \
	gpu "process 48211 1" "error processes NO_PERMISSION" \
	gpu "process 48211 1" "process_growth 10" \
	gpu "process 48211 1" "process_growth 1000"
run "$GPURUN" --show --processes
lines=$(grep -c "^ " <<<"$OUT_TEXT")
if [ "$STATUS" = 0 ] && grep -Eq "^ +48377  4242  200 MiB  \[nccl-worker\]$" <<<"$OUT_TEXT" &&
	[ "$(sed -n '/^|  1 /,/^|  2 /p' <<<"$OUT_TEXT" | sed -n 2p)" = "    processes unknown" ] &&
	[ "$(sed -n '/^|  2 /,/^|  3 /p' <<<"$OUT_TEXT" | grep -c '^ ')" = 41 ] &&
	[ "$(sed -n '/^|  3 /,$p' <<<"$OUT_TEXT" | sed -n 2p)" = "    processes unknown" ] && [ "$lines" = 45 ]; then
	ok "a process that starts between the calls is listed, a list that grows is asked again, errors are unknown"
else
	not_ok "a process that starts between the calls is listed, a list that grows is asked again, errors are unknown" "$OUT_TEXT"
fi
use_fixture four.fixture

# --- the lease holder under its GPU ---------------------------------------------------------------
"$GPURUN" sleep 600 &
job=$!
for i in $(seq 100); do [ "$("$GPURUN" --print 2>/dev/null)" = 3 ] && break; sleep 0.05; done
run "$GPURUN" --show --processes
if [ "$STATUS" = 0 ] && sed -n '/^|  2 /,/^|  3 /p' <<<"$OUT_TEXT" | grep -Eq "^    leased by pid $job \(.*\) since .*: sleep 600$" &&
	! grep -q "^GPU 2 leased" <<<"$OUT_TEXT"; then
	ok "--processes puts the lease holder under its GPU, not below the table"
else
	not_ok "--processes puts the lease holder under its GPU, not below the table" "$OUT_TEXT"
fi
{ kill -9 "$job"; wait "$job"; } 2>/dev/null

# --- NVIDIA and AMD processes together -------------------------------------------------------------
GPURUN_SYSFS_ROOT=$AMD/four run "$GPURUN" --show --processes --vendor amd
if [ "$STATUS" = 0 ] && grep -q "^    4242  root  59392 MiB  python3 train.py --lr 3e-4$" <<<"$OUT_TEXT" &&
	! grep -q "48211" <<<"$OUT_TEXT"; then
	ok "--vendor amd shows only the AMD GPUs and their processes"
else
	not_ok "--vendor amd shows only the AMD GPUs and their processes" "$OUT_TEXT"
fi

# --- usage ------------------------------------------------------------------------------------------
run "$GPURUN" --processes true
expect_error "--processes needs --show" 2 "--processes needs --show"
run "$GPURUN" --print --watch
expect_error "--watch needs --show" 2 "--watch needs --show"
run "$GPURUN" --show --watch 0
expect_error "--watch 0 is refused" 2 "--watch: '0'"

# An interval longer than a time_t holds: a sleep, not a spin, and SIGTERM still ends it.
"$GPURUN" --show --watch 200000000000000d >/dev/null 2>&1 &
watcher=$!
sleep 1
cpu_ticks=$(awk '{ print $14 + $15 }' "/proc/$watcher/stat" 2>/dev/null)
kill -TERM "$watcher" 2>/dev/null
timeout 5 tail --pid="$watcher" -f /dev/null || kill -KILL "$watcher" 2>/dev/null
wait "$watcher"
status=$?
if timing_test "--watch with a huge interval sleeps, and SIGTERM ends it"; then
	if [ "$status" = 143 ] && [ "${cpu_ticks:-999}" -lt 30 ]; then
		ok "--watch with a huge interval sleeps, and SIGTERM ends it ($cpu_ticks ticks)"
	else
		not_ok "--watch with a huge interval sleeps, and SIGTERM ends it" "status $status" \
			"CPU ticks in 1 s: ${cpu_ticks:-?}"
	fi
fi

# --- --watch under a pseudo-terminal ----------------------------------------------------------------
cp "$FIXTURES/four.fixture" "$SCRATCH/changing.fixture"
use_fixture "$SCRATCH/changing.fixture"
status=$(python3 "$WATCH" 3 SIGINT "$SCRATCH/drawn" --then "$SCRATCH/changing.fixture" \
	"$(sed 's/^util 85$/util 42/' "$FIXTURES/four.fixture" | sed 's/$/\\n/' | tr -d '\n')" \
	-- "$GPURUN" --show --watch 0.2 --processes)
drawn=$(cat -v "$SCRATCH/drawn")
frames=$(grep -o "\^\[\[H" <<<"$drawn" | wc -l)
if [ "$status" = 0 ]; then ok "--watch: Ctrl-C (SIGINT) exits 0"; else not_ok "--watch: Ctrl-C (SIGINT) exits 0" "status $status" "$drawn"; fi
if [ "$frames" -ge 3 ]; then ok "--watch: a frame per interval ($frames frames)"; else not_ok "--watch: a frame per interval" "$frames frames" "$drawn"; fi
if ! grep -q '\^\[\[2J' <<<"$drawn" && grep -q '\^\[\[?25l' <<<"$drawn" &&
	[ "$(tail -c 20 "$SCRATCH/drawn" | cat -v | grep -c '\^\[\[?25h')" = 1 ]; then
	ok "--watch: no clear-screen; the cursor is hidden while drawing and shown again at the end"
else
	not_ok "--watch: no clear-screen; the cursor is hidden while drawing and shown again at the end" "$drawn"
fi
# Every line of a frame erases the rest of the old line; every frame erases below itself.
problems=$(python3 - "$SCRATCH/drawn" <<'EOF'
import sys
text = open(sys.argv[1], "rb").read().decode()
frames = text.split("\x1b[H")[1:]
problems = []
for n, frame in enumerate(frames):
    body = frame.split("\x1b[J")[0]
    if "\x1b[J" not in frame:
        problems.append("frame %d does not end with ESC[J" % n)
    for line in body.split("\r\n")[:-1]:
        if not line.endswith("\x1b[K"):
            problems.append("frame %d: line without ESC[K: %r" % (n, line))
    if "| ID | GPU | MEM |\x1b[K" not in body or "    48211  root  59400 MiB  python train.py --epochs 90\x1b[K" not in body:
        problems.append("frame %d lacks the table or its processes: %r" % (n, body))
if not any("|  0 | 42% | 73% |" in f for f in frames[1:]):
    problems.append("no later frame shows the machine as it changed")
if not frames or "|  0 | 85% | 73% |" not in frames[0]:
    problems.append("the first frame is not the machine as it was")
print("\n".join(problems))
EOF
)
if [ -z "$problems" ]; then
	ok "--watch: each line ends with ESC[K, each frame with ESC[J, later frames show changes"
else
	not_ok "--watch: each line ends with ESC[K, each frame with ESC[J, later frames show changes" "$problems"
fi

# A terminal too short for the table: the frame is cut, so that the screen never scrolls.
status=$(python3 "$WATCH" 2 SIGINT "$SCRATCH/short" --rows 6 -- "$GPURUN" --show --watch 0.2)
if [ "$status" = 0 ] && python3 -c '
import sys
frame = open(sys.argv[1], "rb").read().decode().split("\x1b[H")[1].split("\x1b[J")[0]
assert frame.count("\r\n") == 5, repr(frame)
' "$SCRATCH/short"; then ok "--watch in a 6-row terminal draws 5 lines"; else not_ok "--watch in a 6-row terminal draws 5 lines" "$(cat -v "$SCRATCH/short")"; fi

status=$(python3 "$WATCH" 1 SIGTERM "$SCRATCH/terminated" -- "$GPURUN" --show --watch 0.2)
if [ "$status" = 143 ] && [ "$(tail -c 20 "$SCRATCH/terminated" | cat -v | grep -c '\^\[\[?25h')" = 1 ]; then
	ok "--watch: SIGTERM restores the cursor, then ends gpurun by that signal"
else
	not_ok "--watch: SIGTERM restores the cursor, then ends gpurun by that signal" "status $status"
fi

# --- --watch into a pipe ---------------------------------------------------------------------------
use_fixture four.fixture
"$GPURUN" --show --watch 0.1 --json >"$SCRATCH/json-lines" 2>"$SCRATCH/json-errors" &
job=$!
for i in $(seq 100); do [ "$(wc -l <"$SCRATCH/json-lines")" -ge 3 ] && break; sleep 0.05; done
kill -INT "$job"
wait "$job"
status=$?
if [ "$status" = 0 ] && python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 3, lines
for line in lines:
    assert len(json.loads(line)["gpus"]) == 4
assert "\x1b" not in "".join(lines)
' "$SCRATCH/json-lines"; then ok "--watch --json: one JSON document per line per refresh, no escapes; SIGINT exits 0"; else not_ok "--watch --json: one JSON document per line per refresh, no escapes; SIGINT exits 0" "status $status" "$(head -c 300 "$SCRATCH/json-lines")"; fi

"$GPURUN" --show --watch 0.1 >"$SCRATCH/tables" 2>&1 &
job=$!
for i in $(seq 100); do [ "$(grep -c '^| ID' "$SCRATCH/tables")" -ge 2 ] && break; sleep 0.05; done
kill -INT "$job"
wait "$job"
status=$?
if [ "$status" = 0 ] && ! grep -q "$ESC" "$SCRATCH/tables" &&
	[ "$(sed -n 7p "$SCRATCH/tables")" = "" ] && [ "$(sed -n 8p "$SCRATCH/tables")" = "| ID | GPU | MEM |" ]; then
	ok "--watch into a file: whole tables separated by a blank line, no escapes"
else
	not_ok "--watch into a file: whole tables separated by a blank line, no escapes" "$(cat -v "$SCRATCH/tables" | head -20)"
fi

# A look that fails after the first is shown and retried; a first look that fails is --show's failure.
GPURUN_NVML_LIB=$SCRATCH/none.so GPURUN_NVIDIA_SMI=$SCRATCH/none run "$GPURUN" --show --watch 0.1
expect_error "--watch without GPU information fails at once, like --show" 69 "no GPU information"

run "$GPURUN" --help
missing=
for option in --processes --wide --watch --vendor amdgpu; do
	grep -q -- "$option" <<<"$OUT_TEXT" || missing="$missing $option"
done
if [ "$STATUS" = 0 ] && [ -z "$missing" ]; then ok "--help names --processes, --wide, --watch, --vendor and amdgpu"; else not_ok "--help names --processes, --wide, --watch, --vendor and amdgpu" "missing:$missing"; fi
