#!/usr/bin/env bash
# preload_host_test.sh: libgpurun-preload.so inside programs that treat their own process
# roughly: one that closes every descriptor (as daemons do) before or after CUDA starts, and one
# that execve's itself after choosing. preload_test.sh covers threads, fork and exec of programs
# that never start CUDA, and the exported symbols; this adds what those leave out.
. "$(dirname "$0")/lib.sh"
PRELOAD=$BUILD/libgpurun-preload.so
UNRULY=$BUILD/helpers/unruly_direct
export LD_LIBRARY_PATH=$FAKES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
use_fixture four.fixture     # GPU 2 has the least memory in use, GPU 3 is next
for built in "$PRELOAD" "$UNRULY"; do
	[ -e "$built" ] || { not_ok "built: $built" "run make check"; exit 1; }
done

with() { local options=$1; shift; run env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="$options" "$@"; }
await_file() { local i; for i in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
holders() { "$GPURUN" --show | grep -c "leased by pid $1 "; }

for mode in "" --lazy; do
	label=${mode:-eager}
	with "$mode --order memory" "$UNRULY" --close-before
	expect "$label: a program that closed every descriptor before cuInit gets its GPU" 0 \
		"init=0 visible=2"
	with "$mode --order memory" "$UNRULY" --close-after
	expect "$label: closing every descriptor after cuInit is harmless" 0 "init=0 visible=2"
done

# The lease lives in a descriptor: a program that closes it gives the GPU up, and says so to
# no one; gpurun must then hand the GPU out again (no stale state), not crash.
rm -f "$SCRATCH/gate" "$SCRATCH/gate.waiting"
env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="--lazy --order memory" "$UNRULY" --close-after \
	--hold "$SCRATCH/gate" >"$SCRATCH/out" 2>&1 &
pid=$!
await_file "$SCRATCH/gate.waiting"
check "a lease whose descriptor the program closed is free again" test "$("$GPURUN" --print --order memory)" = 2
touch "$SCRATCH/gate"
wait "$pid"

# execve after choosing: the new image keeps the choice (GPURUN_CHOSEN), chooses nothing itself,
# and still holds the one lease.
rm -f "$SCRATCH/gate" "$SCRATCH/gate.waiting"
env LD_PRELOAD="$PRELOAD" GPURUN_OPTIONS="--lazy --order memory" "$UNRULY" --exec-after-init \
	--hold "$SCRATCH/gate" >"$SCRATCH/out" 2>"$SCRATCH/err" &
pid=$!
await_file "$SCRATCH/gate.waiting"
held=$(holders "$pid")
next=$("$GPURUN" --print --order memory)
touch "$SCRATCH/gate"
wait "$pid"
status=$?
if [ "$status" = 0 ] && [ "$(cat "$SCRATCH/out")" = "init=0 visible=2
exec'd init=0 visible=2" ] && [ ! -s "$SCRATCH/err" ] && [ "$held" = 1 ] && [ "$next" = 3 ]; then
	ok "a program that execve's itself after choosing keeps its GPU and its one lease"
else
	not_ok "a program that execve's itself after choosing keeps its GPU and its one lease" \
		"status $status" "out: $(cat "$SCRATCH/out")" "err: $(cat "$SCRATCH/err")" \
		"leases held: $held" "next choice: $next"
fi
