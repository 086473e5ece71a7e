#!/usr/bin/env bash
# slurm_test.sh: gpurun inside a real single-node Slurm (Debian's slurmctld, slurmd and munge,
# started here as in shared/reference/slurm.md) whose gres.conf declares four GPUs, while gpurun
# sees the same four GPUs through the fake NVML. Checks that a step chooses only inside its
# allocation, that two concurrent allocations never get each other's GPUs, and the packer
# pattern: `srun --gres=gpu:4 ./sweep.sh`, sweep.sh starting N `gpurun --wait --limit 1` tasks.
. "$(dirname "$0")/lib.sh"

PACKED_TASKS=12
SLURM_PACKAGES="slurmctld slurmd slurm-client munge"

skip_all() {
	skip "slurm" "$1"
	exit 0
}

# ---- Slurm itself: installed, or installable, or the test says why not ------------------------
have_slurm() { command -v slurmctld && command -v slurmd && command -v srun && command -v munged; } >/dev/null
if ! have_slurm; then
	[ "$(id -u)" = 0 ] || skip_all "Slurm is not installed and installing it needs root"
	command -v apt-get >/dev/null || skip_all "Slurm is not installed and there is no apt-get"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		$SLURM_PACKAGES; } >"$SCRATCH/apt.log" 2>&1 || ! have_slurm; then
		skip_all "cannot install $SLURM_PACKAGES: $(tail -n 1 "$SCRATCH/apt.log")"
	fi
fi
[ "$(id -u)" = 0 ] || skip_all "slurmd must run as root to start jobs"

# ---- a private cluster under one scratch directory --------------------------------------------
HOST=$(hostname -s)
DIR=$SCRATCH/slurm
mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool/slurmd.$HOST" "$DIR/dev"
chmod 755 "$SCRATCH" "$DIR" "$DIR/munge"   # munged: "execute permissions for all required"
export SLURM_CONF=$DIR/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.sock

# Stops every daemon this test started, and the jobs' step daemons: cancel, shut down, then kill
# what the pid files still name. A script, so that a watcher can run it too (below).
cat >"$SCRATCH/stop-cluster.sh" <<EOF
export SLURM_CONF=$SLURM_CONF
if [ -f "\$SLURM_CONF" ]; then
	timeout 5 scancel --full --user=root >/dev/null 2>&1
	timeout 10 scontrol shutdown >/dev/null 2>&1
fi
# stop PIDFILE NAME: waits for it to go, then kills it if it is still that daemon.
stop() {
	[ -s "\$1" ] || return 0
	pid=\$(cat "\$1")
	for _ in \$(seq 50); do kill -0 "\$pid" 2>/dev/null || return 0; sleep 0.1; done
	[ "\$(cat /proc/\$pid/comm 2>/dev/null)" = "\$2" ] && kill -9 "\$pid"
}
stop $DIR/slurmctld.pid slurmctld
stop $DIR/slurmd.pid slurmd
# Step daemons whose slurmd is gone: ours carry this cluster's SLURM_CONF.
for environ in /proc/[0-9]*/environ; do
	pid=\${environ#/proc/}
	pid=\${pid%/environ}
	[ "\$(cat /proc/\$pid/comm 2>/dev/null)" = slurmstepd ] || continue
	tr '\\0' '\\n' <"\$environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF" && kill -9 "\$pid"
done
if [ -S $MUNGE_SOCKET ]; then munged -s --socket=$MUNGE_SOCKET >/dev/null 2>&1; fi
stop $DIR/munged.pid munged
rm -rf $SCRATCH
EOF
stop_cluster() { bash "$SCRATCH/stop-cluster.sh"; }
trap stop_cluster EXIT
trap 'exit 1' INT TERM HUP
# A test killed outright (SIGKILL, a harness's timeout) runs no trap, and the daemons would
# outlive it: a watcher in a session of its own stops them once this shell is gone.
setsid bash -c 'while kill -0 "$0" 2>/dev/null; do sleep 1; done
	[ -f "$1" ] && bash "$1"' "$$" "$SCRATCH/stop-cluster.sh" </dev/null >/dev/null 2>&1 &

head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
chmod 400 "$DIR/munge/munge.key"
if ! munged --socket="$MUNGE_SOCKET" --key-file="$DIR/munge/munge.key" \
	--log-file="$DIR/munged.log" --pid-file="$DIR/munged.pid" --seed-file="$DIR/munged.seed" \
	>"$SCRATCH/munged.out" 2>&1; then
	not_ok "slurm: munged starts" "$(cat "$SCRATCH/munged.out" "$DIR/munged.log" 2>/dev/null | tail -n 5)"
	exit 1
fi

# Device nodes Slurm can count (a plain file is rejected); /dev/null stands in without mknod.
for i in 0 1 2 3; do
	mknod "$DIR/dev/nvidia$i" c 195 "$i" 2>/dev/null || ln -s /dev/null "$DIR/dev/nvidia$i"
done
PORT=$((20000 + RANDOM % 20000))
# CR_Core: 22.05's default CR_Core_Memory gives each job all of the node's (declared) memory,
# and the second job would queue behind the first.
cat >"$SLURM_CONF" <<EOF
ClusterName=gpurun
SlurmctldHost=$HOST
SlurmUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd.%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
NodeName=$HOST CPUs=32 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$DIR/gres.conf" <<EOF
AutoDetect=off
Name=gpu File=$DIR/dev/nvidia[0-3]
EOF

start_clock
if ! slurmctld -f "$SLURM_CONF" >"$SCRATCH/slurmctld.out" 2>&1 ||
	! slurmd -f "$SLURM_CONF" >"$SCRATCH/slurmd.out" 2>&1; then
	not_ok "slurm: the daemons start" "$(cat "$SCRATCH"/slurm*.out; tail -n 5 "$DIR"/slurm*.log 2>/dev/null)"
	exit 1
fi
state=
for _ in $(seq 200); do
	state=$(timeout 5 sinfo -h -o %t 2>/dev/null)
	[ "$state" = idle ] && break
	sleep 0.1
done
if [ "$state" = idle ]; then
	ok "slurm: a single-node cluster with gpu:4 is up in $(elapsed) s"
else
	not_ok "slurm: a single-node cluster with gpu:4 is up" "sinfo says '$state'" \
		"$(tail -n 5 "$DIR/slurmctld.log" "$DIR/slurmd.log" 2>/dev/null)"
	exit 1
fi

# The same four GPUs in NVML's view, all free, so that only the allocation limits the choice.
cat >"$SCRATCH/node.fixture" <<'EOF'
gpu
uuid GPU-5a100000-0000-4000-8000-000000000000
gpu
uuid GPU-5a100001-0000-4000-8000-000000000001
gpu
uuid GPU-5a100002-0000-4000-8000-000000000002
gpu
uuid GPU-5a100003-0000-4000-8000-000000000003
EOF
use_fixture "$SCRATCH/node.fixture"
export GPURUN RECORD_JOB=$BUILD/helpers/record_job

# in_set "1,3" "0,1,3": every element of the first list is in the second.
in_set() {
	local item
	for item in ${1//,/ }; do [[ ",$2," == *",$item,"* ]] || return 1; done
}

# ---- one step: the choice stays inside the allocation ------------------------------------------
run timeout 60 srun --gres=gpu:2 bash -c \
	'printf "%s|%s|%s|%s\n" "$SLURM_STEP_GPUS" "$CUDA_VISIBLE_DEVICES" "$("$GPURUN" --print)" "$("$GPURUN" --print --limit all --no-lease)"'
IFS='|' read -r step_gpus visible one all <<<"$OUT_TEXT"
if [ "$STATUS" = 0 ] && [ -n "$step_gpus" ] && in_set "$one" "$step_gpus" && [ "$all" = "$step_gpus" ]; then
	ok "srun --gres=gpu:2 gpurun --print chooses inside the allocation (SLURM_STEP_GPUS=$step_gpus, CUDA_VISIBLE_DEVICES=$visible: chose $one; --limit all: $all)"
else
	not_ok "srun --gres=gpu:2 gpurun --print chooses inside the allocation" "status $STATUS" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

run timeout 60 srun --gres=gpu:1 "$GPURUN" --print --limit 2
ERR_TEXT=$(grep -v '^srun: ' <<<"$ERR_TEXT")
expect_error "a step that asks gpurun for more GPUs than it was given gets exit 75, not another job's" 75 "wanted 2 GPUs, found 1 available"

# ---- two concurrent allocations --------------------------------------------------------------
# The first holds its GPUs until the second has chosen, so they surely overlap in time. No
# leases: only the masks keep them apart.
rm -f "$SCRATCH/release"
timeout 60 srun --gres=gpu:2 bash -c 'printf "%s|%s\n" "$SLURM_STEP_GPUS" "$("$GPURUN" --print --limit all --no-lease)";
	for _ in $(seq 300); do [ -e "$0" ] && echo released && exit 0; sleep 0.1; done' "$SCRATCH/release" \
	>"$SCRATCH/first" 2>&1 &
first_pid=$!
for _ in $(seq 100); do [ -s "$SCRATCH/first" ] && break; sleep 0.1; done
timeout 60 srun --gres=gpu:2 bash -c 'printf "%s|%s\n" "$SLURM_STEP_GPUS" "$("$GPURUN" --print --limit all --no-lease)"; touch "$0"' \
	"$SCRATCH/release" >"$SCRATCH/second" 2>&1
wait "$first_pid"
IFS='|' read -r first_gpus first_chose <"$SCRATCH/first"
IFS='|' read -r second_gpus second_chose <"$SCRATCH/second"
if grep -q '^released$' "$SCRATCH/first" && [ "$first_chose" = "$first_gpus" ] && [ "$second_chose" = "$second_gpus" ] \
	&& [ -n "$first_gpus" ] && [ -n "$second_gpus" ] && ! in_set "${first_chose%%,*}" "$second_chose" \
	&& ! in_set "${first_chose##*,}" "$second_chose"; then
	ok "two concurrent allocations never get each other's GPUs ($first_chose and $second_chose)"
else
	not_ok "two concurrent allocations never get each other's GPUs" "first: $(cat "$SCRATCH/first")" "second: $(cat "$SCRATCH/second")"
fi

# ---- the packer: srun --gres=gpu:4 ./sweep.sh ------------------------------------------------
cat >"$SCRATCH/sweep.sh" <<'EOF'
#!/usr/bin/env bash
# Twenty trials (here $1), each waiting for a free GPU of the allocation and leasing it.
log=$2
for _ in $(seq "$1"); do
	"$GPURUN" --wait --limit 1 "$RECORD_JOB" "$log" 300 &
done
wait
echo "allocation $SLURM_STEP_GPUS"
EOF
chmod 755 "$SCRATCH/sweep.sh"

# max_parallel LOG: the most jobs of LOG that ran at once.
max_parallel() {
	python3 -c 'import sys
events = []
for line in open(sys.argv[1]):
    start, end, _ = line.split()
    events += [(int(start), 1), (int(end), -1)]
now = top = 0
for _, step in sorted(events):
    now += step
    top = max(top, now)
print(top)' "$1"
}

# used_gpus LOG: the GPUs the jobs of LOG ran on, sorted, comma separated.
used_gpus() { cut -d' ' -f3 "$1" | tr ',' '\n' | sort -un | paste -sd,; }

start_clock
run timeout 90 srun --gres=gpu:4 "$SCRATCH/sweep.sh" "$PACKED_TASKS" "$SCRATCH/packed.log"
took=$(elapsed)
allocation=$(sed -n 's/^allocation //p' <<<"$OUT_TEXT")
parallel=$(max_parallel "$SCRATCH/packed.log" 2>/dev/null)
if [ "$STATUS" = 0 ] && python3 "$ROOT/tests/integration/check_overlap.py" "$SCRATCH/packed.log" "$PACKED_TASKS" >/dev/null \
	&& [ "$parallel" -le 4 ] && [ "$parallel" -ge 2 ] && in_set "$(used_gpus "$SCRATCH/packed.log")" "$allocation"; then
	ok "packer: $PACKED_TASKS tasks, at most 4 at a time ($parallel), on the allocated GPUs only ($(used_gpus "$SCRATCH/packed.log")), in $took s"
else
	not_ok "packer: $PACKED_TASKS tasks, at most 4 at a time, on the allocated GPUs only" "status $STATUS, most at once: $parallel" \
		"$(python3 "$ROOT/tests/integration/check_overlap.py" "$SCRATCH/packed.log" "$PACKED_TASKS" 2>&1)" "stderr: $ERR_TEXT"
fi

# Half the node: a packer on gpu:2 next to a job holding the other two GPUs.
rm -f "$SCRATCH/release"
timeout 60 srun --gres=gpu:2 bash -c 'echo "$SLURM_STEP_GPUS";
	for _ in $(seq 300); do [ -e "$0" ] && exit 0; sleep 0.1; done' "$SCRATCH/release" >"$SCRATCH/holder" 2>&1 &
holder_pid=$!
for _ in $(seq 100); do [ -s "$SCRATCH/holder" ] && break; sleep 0.1; done
run timeout 90 srun --gres=gpu:2 "$SCRATCH/sweep.sh" 6 "$SCRATCH/half.log"
touch "$SCRATCH/release"
wait "$holder_pid"
allocation=$(sed -n 's/^allocation //p' <<<"$OUT_TEXT")
parallel=$(max_parallel "$SCRATCH/half.log" 2>/dev/null)
if [ "$STATUS" = 0 ] && python3 "$ROOT/tests/integration/check_overlap.py" "$SCRATCH/half.log" 6 >/dev/null \
	&& [ "$parallel" -le 2 ] && [ "$(used_gpus "$SCRATCH/half.log")" = "$allocation" ] \
	&& ! in_set "${allocation%%,*}" "$(cat "$SCRATCH/holder")"; then
	ok "packer on gpu:2 beside another job: only its own two GPUs ($allocation), at most 2 at a time"
else
	not_ok "packer on gpu:2 beside another job: only its own two GPUs" "status $STATUS, allocation '$allocation', holder '$(cat "$SCRATCH/holder")'" \
		"used: $(used_gpus "$SCRATCH/half.log"), most at once: $parallel" "stderr: $ERR_TEXT"
fi
