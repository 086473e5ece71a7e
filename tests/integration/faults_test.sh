#!/usr/bin/env bash
# faults_test.sh: fault injection through the fake NVML. Every NVML call the probe makes fails,
# in turn, with each error NVML can answer (one fixture per fault, `error FIELD ERROR`), and
# gpurun must survive it: no crash; every other field of every device exactly as without the
# fault; the failed field unknown (null in --json), or the device marked lost and never handed
# out; a fatal failure (init, count) one line naming the call and the error. The same matrix
# runs through the fake nvidia-smi for the per-GPU fields. One TAP line per call; the last line
# counts the faults injected and survived.
. "$(dirname "$0")/lib.sh"

ERRORS="UNINITIALIZED INVALID_ARGUMENT NOT_SUPPORTED NO_PERMISSION NOT_FOUND INSUFFICIENT_SIZE
DRIVER_NOT_LOADED TIMEOUT IRQ_ISSUE FUNCTION_NOT_FOUND GPU_IS_LOST RESET_REQUIRED
ARGUMENT_VERSION_MISMATCH NO_DATA UNKNOWN"
SOURCES="nvml nvidia-smi"
# The fake nvidia-smi prints one of three texts for a failed field (tests/fixtures/README.md):
# one error of each, and GPU_IS_LOST, cover it.
SMI_ERRORS="NOT_SUPPORTED NO_PERMISSION UNKNOWN GPU_IS_LOST"
if [ -n "${GPURUN_UNDER:-}" ]; then
	# Each fault costs two gpurun runs; under memcheck a run takes about a second.
	skip "the full fault matrix (15 errors, both sources)" \
		"under ${GPURUN_UNDER%% *} only GPU_IS_LOST and UNKNOWN through NVML run, to stay within CI's time"
	ERRORS="GPU_IS_LOST UNKNOWN"
	SOURCES="nvml"
	SMI_ERRORS=""
fi

# GPU0 and GPU3 are bystanders; GPU1 is the victim of per-GPU faults; GPU2 is in MIG mode with
# two instances, the victims of MIG faults. Every value differs from the fakes' defaults.
base_fixture() { # $1: the `error` line for GPU1, $2: for GPU2, $3: for GPU2's first instance
	cat <<EOF
driver 535.104.05
gpu
uuid GPU-0a11ce00-1b2c-4d3e-8f40-5a6b7c8d9e00
name NVIDIA Bystander
util 20
memory 81920 1000
process 100 900
gpu
uuid GPU-1b22df11-2c3d-4e4f-9051-6b7c8d9e0f11
name NVIDIA Fault Target
serial 1324000000001
pci 00000000:2A:00.0
util 10
memory 81920 2000
temperature 40
power 75.5
display_mode on
display_active on
process 200 1800
$1
gpu
uuid GPU-2c33e022-3d4e-4f50-a162-7c8d9e0f1a22
name NVIDIA A100-SXM4-80GB
memory 81920 500
mig on
$2
mig_instance
uuid MIG-5c1e9a70-0d2b-5f3c-8a41-7e6f5d4c3b20
name NVIDIA A100-SXM4-80GB MIG 3g.40gb
memory 40192 100
instance_ids 2 0
process 300 90
$3
mig_instance
uuid MIG-6d2fab81-1e3c-5a4d-9b52-8f7e6d5c4c31
name NVIDIA A100-SXM4-80GB MIG 2g.20gb
memory 19968 0
instance_ids 3 0
gpu
uuid GPU-3d44f133-4e5f-4061-b273-8d9e0f1a2b33
util 70
memory 40960 30000
temperature 55
EOF
}

# look.sh NAME SOURCE: what gpurun reports on NAME.fixture ($SCRATCH/NAME.json) and hands out
# ($SCRATCH/NAME.print: every device it would take, even with unknown values), and how it exited.
# The faults are independent, so several are looked at in parallel.
cat >"$SCRATCH/look.sh" <<'EOF'
name=$1 source=$2
export GPURUN_FAKE_FIXTURE=$SCRATCH/$name.fixture
"$GPURUN" --show --json --source "$source" >"$SCRATCH/$name.json" 2>"$SCRATCH/$name.err"
echo $? >"$SCRATCH/$name.status"
"$GPURUN" --print --uuid --no-lease --limit all --include-nan --max-load 1 --max-memory 1 \
	--source "$source" >"$SCRATCH/$name.print" 2>>"$SCRATCH/$name.err"
echo $? >>"$SCRATCH/$name.status"
EOF
export SCRATCH GPURUN
look() { bash "$SCRATCH/look.sh" "$@"; }

# Which devices a fault may touch, and which of their JSON keys it must leave unknown.
declare -A UNKNOWN=(
	[handle]="*" [uuid]=uuid [name]=name [serial]=serial [pci]=pci.bus_id
	[memory]="memory.used memory.total memory.free" [memory_v2]="" [utilization]=utilization.gpu
	[temperature]=temperature.gpu [temperature_v]="" [temperature_legacy]=""
	[power]=power.draw [display_mode]=display_mode
	[display_active]=display_active [processes]=processes
	[mig_uuid]=uuid [mig_name]=name [mig_memory]="memory.used memory.total memory.free"
	[mig_processes]=processes [gpu_instance_id]="" [compute_instance_id]=""
	[mig_mode]="" [mig_max]="" [mig_handle]="" [driver]=""
)
GPU_FIELDS="handle uuid name serial pci memory memory_v2 utilization temperature temperature_v
temperature_legacy power display_mode display_active processes"
MIG_INSTANCE_FIELDS="mig_uuid mig_name mig_memory mig_processes gpu_instance_id compute_instance_id"
MIG_GPU_FIELDS="mig_mode mig_max mig_handle"

MANIFEST=$SCRATCH/manifest
: >"$MANIFEST"
cases=0
for source in $SOURCES; do
	use_fixture "$SCRATCH/base-$source.fixture"
	base_fixture "" "" "" >"$GPURUN_FAKE_FIXTURE"
	look "base-$source" "$source"
	fields="$GPU_FIELDS"
	[ "$source" = nvml ] && fields="$fields $MIG_INSTANCE_FIELDS $MIG_GPU_FIELDS driver"
	for field in $fields; do
		errors=$ERRORS
		[ "$source" = nvidia-smi ] && errors=$SMI_ERRORS
		for error in $errors; do
			name="$source-$field-$error"
			gpu1="" gpu2="" instance=""
			case " $MIG_INSTANCE_FIELDS " in
			*" $field "*) instance="error ${field#mig_} $error" ;;
			*)
				case " $MIG_GPU_FIELDS " in
				*" $field "*) gpu2="error $field $error" ;;
				*) gpu1="error $field $error" ;;
				esac
				;;
			esac
			use_fixture "$SCRATCH/$name.fixture"
			base_fixture "$gpu1" "$gpu2" "$instance" >"$GPURUN_FAKE_FIXTURE"
			# The driver version is machine-wide: `error driver E` may stand anywhere.
			[ "$field" = driver ] && sed -i "1a error driver $error" "$GPURUN_FAKE_FIXTURE"
			printf '%s\t%s\t%s\t%s\t%s\n' "$source" "$field" "$error" "$name" \
				"${UNKNOWN[$field]}" >>"$MANIFEST"
			cases=$((cases + 1))
		done
	done
done

cut -f1,4 "$MANIFEST" | xargs -P 4 -n 2 sh -c 'bash "$SCRATCH/look.sh" "$1" "$0"'

# The checks, all in one Python run: one line per fault, "ok FIELD" or "fail FIELD: why".
cat >"$SCRATCH/check.py" <<'EOF'
import json, os, sys

scratch = sys.argv[1]
VICTIM_GPU, MIG_GPU = 1, 2

def read(name):
    with open(os.path.join(scratch, name + ".json")) as f:
        text = f.read()
    with open(os.path.join(scratch, name + ".print")) as f:
        chosen = f.read().strip()
    with open(os.path.join(scratch, name + ".status")) as f:
        statuses = f.read().split()
    with open(os.path.join(scratch, name + ".err")) as f:
        err = f.read()
    return text, chosen, statuses, err

def keyed(devices):
    """Devices by where they are: ("gpu", index) or ("mig", parent, n-th instance)."""
    out, seen = {}, {}
    for d in devices:
        if d["mig_parent"] is None:
            out[("gpu", d["index"])] = d
        else:
            n = seen.get(d["mig_parent"], 0)
            seen[d["mig_parent"]] = n + 1
            out[("mig", d["mig_parent"], n)] = d
    return out

def check(source, field, error, name, unknown):
    base_text, base_chosen, _, _ = read("base-" + source)
    text, chosen, statuses, err = read(name)
    if any(int(s) > 128 or int(s) not in (0, 69, 75) for s in statuses):
        return "exit statuses %s: %s" % (statuses, err.strip()[:300])
    if any(line and not line.startswith("gpurun: ") for line in err.splitlines()):
        return "stderr is not gpurun's own lines: " + err.strip()[:300]
    if statuses[0] == "69":
        # Fatal only through nvidia-smi, whose whole output fails with one lost or unreachable
        # GPU: then the message must say so.
        if source != "nvidia-smi" or field != "handle" and error != "GPU_IS_LOST":
            return "no GPU information: " + err.strip()
        if "nvidia-smi" not in err:
            return "the failure does not name nvidia-smi: " + err.strip()
        return None
    base = keyed(json.loads(base_text)["gpus"])
    now = keyed(json.loads(text)["gpus"])
    if field in GPU_FIELDS:
        victims = {("gpu", VICTIM_GPU)}
    elif field.startswith("mig_") and field not in ("mig_mode", "mig_max", "mig_handle") \
            or field.endswith("instance_id"):
        victims = {("mig", MIG_GPU, 0)}
    elif field in ("mig_mode", "mig_max", "mig_handle"):
        victims = {k for k in base if k[1] == MIG_GPU}
    else:
        victims = set()
    for key, device in base.items():
        if key in victims:
            continue
        if now.get(key) != device:
            return "bystander %s changed: %s" % (key, now.get(key))
    lost = error == "GPU_IS_LOST"
    for key in victims:
        if key not in now:
            # A MIG fault may hide the instances (their GPU cannot be asked), never show others.
            if key[0] == "mig" and field in ("mig_mode", "mig_max", "mig_handle"):
                continue
            return "victim %s is missing" % (key,)
        before, after = base[key], now[key]
        if after["lost"] and not lost:
            return "%s marked lost by %s" % (key, error)
        # The call failed on this very device: GPU_IS_LOST makes it lost (nvidia-smi: unknown).
        # The deprecated temperature call is made only where the versioned one fails.
        on_device = field not in ("mig_max", "mig_handle", "temperature_legacy") and (
            key[0] == "gpu") == (field in GPU_FIELDS or field == "mig_mode")
        if lost and source == "nvml" and on_device and not after["lost"]:
            return "%s not marked lost by GPU_IS_LOST" % (key,)
        for k, v in before.items():
            if k in ("lost", "lease"):
                continue
            if unknown == "*" and k not in ("index", "mig_parent") or k in unknown.split():
                if after[k] is not None:
                    return "%s %s is %r, not unknown" % (key, k, after[k])
            elif after[k] != v and not (lost and after[k] is None):
                return "%s %s is %r, was %r" % (key, k, after[k], v)
    # Nothing is handed out that was not available without the fault, nor anything lost or
    # unnamed.
    # (With --uuid, a GPU whose UUID could not be read is handed out by its index.)
    devices = json.loads(text)["gpus"]
    by_index = {str(d["index"]): d for d in json.loads(base_text)["gpus"] if d["mig_parent"] is None}
    lost = {d["index"] for d in devices if d["lost"] and d["mig_parent"] is None}
    lost_uuids = {d["uuid"] for d in devices if d["lost"]}
    for entry in chosen.split(",") if chosen else []:
        if entry in by_index and by_index[entry]["index"] in lost or entry in lost_uuids:
            return "hands out %s, which is lost" % entry
        if entry in by_index:
            entry = by_index[entry]["uuid"]
        # NOT_SUPPORTED is NVML's word for a GPU without MIG: that one is a whole GPU.
        whole = field == "mig_mode" and error == "NOT_SUPPORTED" and \
            entry == base[("gpu", MIG_GPU)]["uuid"]
        if entry not in base_chosen.split(",") and not whole:
            return "hands out %r, which it would not without the fault" % entry
    if field == "driver" and json.loads(text)["driver_version"] not in (None, ""):
        return "driver version %r despite %s" % (json.loads(text)["driver_version"], error)
    if not victims and chosen != base_chosen:
        return "hands out %r, without the fault %r" % (chosen, base_chosen)
    return None

GPU_FIELDS = ("uuid", "name", "serial", "pci", "memory", "memory_v2", "utilization",
              "temperature", "temperature_v", "temperature_legacy", "power", "display_mode",
              "display_active", "processes", "handle")

with open(os.path.join(scratch, "manifest")) as manifest:
    for line in manifest:
        source, field, error, name, unknown = line.rstrip("\n").split("\t")
        why = check(source, field, error, name, unknown)
        print("%s %s %s %s%s" % ("ok" if why is None else "fail", source, field, error,
                                 "" if why is None else ": " + why))
EOF
python3 "$SCRATCH/check.py" "$SCRATCH" >"$SCRATCH/results"

survived=$(grep -c '^ok ' "$SCRATCH/results")
for source in $SOURCES; do
	for field in $(cut -f1,2 "$MANIFEST" | awk -v s="$source" '$1 == s { print $2 }' | uniq); do
		failures=$(grep "^fail $source $field " "$SCRATCH/results")
		count=$(grep -c " $source $field " "$SCRATCH/results")
		if [ -z "$failures" ]; then
			ok "$source: $field fails with each of $count errors: gpurun survives, reports only what it read"
		else
			not_ok "$source: $field fails with each of $count errors" "$failures"
		fi
	done
done

# Fatal failures: one line that names the call and the error, exit 69, nothing on stdout.
fatal=0 fatal_ok=0
for call in init count; do
	failures=""
	for error in $ERRORS; do
		[ "$call" = count ] && [ "$error" = GPU_IS_LOST ] && continue
		use_fixture "$SCRATCH/fatal.fixture"
		base_fixture "" "" "" >"$GPURUN_FAKE_FIXTURE"
		case $call in
		init) sed -i "1a init_error $error" "$GPURUN_FAKE_FIXTURE"; want="nvmlInit: $error" ;;
		count) sed -i "1a error count $error" "$GPURUN_FAKE_FIXTURE"; want="nvmlDeviceGetCount: $error" ;;
		esac
		fatal=$((fatal + 1))
		run "$GPURUN" --print --source nvml
		if [ "$STATUS" = 69 ] && [ -z "$OUT_TEXT" ] && [ "$(wc -l <<<"$ERR_TEXT")" = 1 ] &&
			[[ "$ERR_TEXT" == "gpurun: "*"$want"* ]]; then
			fatal_ok=$((fatal_ok + 1))
		else
			failures+="$error: status $STATUS, stderr '$ERR_TEXT'; "
		fi
	done
	if [ -z "$failures" ]; then
		ok "nvml: a failing $call is fatal: exit 69, one line naming the call and the error"
	else
		not_ok "nvml: a failing $call is fatal: exit 69, one line naming the call and the error" "$failures"
	fi
done

# With --uuid, a GPU whose UUID cannot be read is handed out by its index, which means that GPU
# only in PCI order: the program must then get CUDA_DEVICE_ORDER=PCI_BUS_ID too. CUDA ends a
# list at an index among UUIDs, so then every GPU goes by its index.
use_fixture "$SCRATCH/no-uuid.fixture"
base_fixture "error uuid UNKNOWN" "" "" >"$GPURUN_FAKE_FIXTURE"
run "$GPURUN" --uuid --no-lease --limit 2 --order load sh -c 'echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER"'
expect "--uuid with a GPU whose UUID is unknown: indices for all, and CUDA_DEVICE_ORDER=PCI_BUS_ID" 0 \
	"1,0 PCI_BUS_ID"
run "$GPURUN" --uuid --no-lease --limit 2 --order load env LD_LIBRARY_PATH="$FAKES" "$BUILD/helpers/fake_cuda_direct"
if [ "$STATUS" = 0 ] && grep -q '^count: 2$' <<<"$OUT_TEXT"; then
	ok "... and CUDA shows the program both GPUs"
else
	not_ok "... and CUDA shows the program both GPUs" "status $STATUS" "$OUT_TEXT" "$ERR_TEXT"
fi
base_fixture "" "" "" >"$GPURUN_FAKE_FIXTURE"
run "$GPURUN" --uuid --no-lease --limit 2 --order load sh -c 'echo "$CUDA_VISIBLE_DEVICES ${CUDA_DEVICE_ORDER:-unset}"'
expect "... and with every UUID known, CUDA_DEVICE_ORDER is left alone" 0 \
	"GPU-1b22df11-2c3d-4e4f-9051-6b7c8d9e0f11,GPU-0a11ce00-1b2c-4d3e-8f40-5a6b7c8d9e00 unset"

total=$((cases + fatal))
printf '# faults: %d injected, %d survived\n' "$total" "$((survived + fatal_ok))"
[ "$((survived + fatal_ok))" = "$total" ] || not_ok "every injected fault survived" \
	"$((total - survived - fatal_ok)) of $total not"
