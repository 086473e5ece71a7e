#!/usr/bin/env bash
# fakes_test.sh: checks the test doubles themselves (fake nvidia-smi, NVML and libcuda) against
# the fixtures and what the real tools do, so that other tests can trust them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SMI=$FAKES/nvidia-smi
NVML=$FAKES/libnvidia-ml.so.1
OLD_NVML=$FAKES/old/libnvidia-ml.so.1
DUMP=$BUILD/helpers/nvml_dump
CUDA_DIRECT=$BUILD/helpers/fake_cuda_direct
QUERY=index,uuid,utilization.gpu,memory.total,memory.used,memory.free,driver_version,name,gpu_serial,display_active,display_mode,temperature.gpu,pci.bus_id,power.draw

for built in "$SMI" "$NVML" "$OLD_NVML" "$FAKES/libcuda.so.1" "$DUMP" "$CUDA_DIRECT"; do
	if [ ! -x "$built" ] && [ ! -f "$built" ]; then
		not_ok "built: $built" "run make first (make check builds the fakes and helpers)"
		exit 1
	fi
done

smi() { run "$SMI" --query-gpu="$QUERY" --format=csv,noheader,nounits; }

# A fixture in the scratch directory: a fixture from tests/fixtures plus extra lines.
scratch_fixture() { # NAME BASE [LINE...]
	local name=$1 base=$2
	shift 2
	{
		[ -n "$base" ] && cat "$FIXTURES/$base"
		printf '%s\n' "$@"
	} >"$SCRATCH/$name"
	use_fixture "$SCRATCH/$name"
}

# has NAME PATTERN: the last run's stdout has a line matching PATTERN (grep -E).
has() {
	if grep -Eq -- "$2" <<<"$OUT_TEXT"; then ok "$1"; else not_ok "$1" "no line matches '$2'" "stdout: $OUT_TEXT"; fi
}

# ---- nvidia-smi: output -------------------------------------------------------------------

use_fixture four.fixture
"$SMI" --query-gpu="$QUERY" --format=csv,noheader,nounits >"$SCRATCH/four.csv"
STATUS=$?
if [ "$STATUS" -eq 0 ] && cmp -s "$SCRATCH/four.csv" "$EXPECTED/four.smi.csv"; then
	ok "smi: four.fixture byte for byte"
else
	not_ok "smi: four.fixture byte for byte" "status $STATUS" "$(diff "$SCRATCH/four.csv" "$EXPECTED/four.smi.csv")"
fi

run "$SMI" --query-gpu=pci.bus_id,index,gpu_name --format=csv,noheader,nounits
expect "smi: any subset and order of fields, with aliases" 0 "$(printf '%s\n' \
	'00000000:07:00.0, 0, NVIDIA A100-SXM4-80GB' '00000000:0F:00.0, 1, NVIDIA A100-SXM4-80GB' \
	'00000000:47:00.0, 2, NVIDIA A100-SXM4-80GB' '00000000:4E:00.0, 3, NVIDIA A100-SXM4-80GB')"

run "$SMI" --query-gpu=memory.used,power.draw,utilization.gpu,temperature.gpu --format=csv
expect "smi: header and units without noheader,nounits" 0 "$(printf '%s\n' \
	'memory.used [MiB], power.draw [W], utilization.gpu [%], temperature.gpu' \
	'60000 MiB, 312.45 W, 85 %, 61' '41000 MiB, 88.12 W, 0 %, 38' '2000 MiB, 71.50 W, 3 %, 34' \
	'12000 MiB, 118.90 W, 10 %, 42')"

"$SMI" --query-gpu=index,xyz,uuid --format=csv,noheader,nounits >"$SCRATCH/out" 2>"$SCRATCH/err"
STATUS=$?
if [ "$STATUS" -eq 2 ] && [ ! -s "$SCRATCH/err" ] \
	&& cmp -s "$SCRATCH/out" <(printf 'Field "xyz" is not a valid field to query.\n\n'); then
	ok "smi: unknown field refused like the real one (stdout, blank line, status 2)"
else
	not_ok "smi: unknown field refused like the real one" "status $STATUS" "$(od -c "$SCRATCH/out")"
fi

run "$SMI" --bogus --query-gpu=index --format=csv
expect "smi: unknown option" 2 "ERROR: Option --bogus is not recognized. Please run 'nvidia-smi -h'."

scratch_fixture crlf.fixture four.fixture smi_crlf
"$SMI" --query-gpu="$QUERY" --format=csv,noheader,nounits >"$SCRATCH/crlf.csv"
if cmp -s "$SCRATCH/crlf.csv" <(sed 's/$/\r/' "$EXPECTED/four.smi.csv"); then
	ok "smi: smi_crlf ends every line with CR LF"
else
	not_ok "smi: smi_crlf ends every line with CR LF" "$(od -c "$SCRATCH/crlf.csv" | tail -3)"
fi

scratch_fixture nofinal.fixture four.fixture smi_no_final_newline
"$SMI" --query-gpu="$QUERY" --format=csv,noheader,nounits >"$SCRATCH/nofinal.csv"
if cmp -s "$SCRATCH/nofinal.csv" <(head -c -1 "$EXPECTED/four.smi.csv"); then
	ok "smi: smi_no_final_newline drops only the last newline"
else
	not_ok "smi: smi_no_final_newline drops only the last newline" "$(od -c "$SCRATCH/nofinal.csv" | tail -3)"
fi

# ---- nvidia-smi: failures -----------------------------------------------------------------

use_fixture no-driver.fixture
smi
expect "smi: driver not loaded" 9 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."

use_fixture "$SCRATCH/does-not-exist.fixture"
smi
expect "smi: no fixture is no driver" 9 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."

use_fixture mismatch.fixture
smi
expect "smi: driver/library version mismatch" 18 "$(printf '%s\n' \
	'Failed to initialize NVML: Driver/library version mismatch' 'NVML library version: 550.54')"

use_fixture no-permission.fixture
smi
expect "smi: insufficient permissions" 4 "Failed to initialize NVML: Insufficient Permissions"

use_fixture no-devices.fixture
smi
expect "smi: no devices" 6 "No devices were found"

scratch_fixture count.fixture four.fixture "error count UNKNOWN"
smi
expect "smi: device count fails" 255 "Unable to determine the number of GPUs"

scratch_fixture custom.fixture four.fixture "smi_error 3 first line\nsecond line"
smi
expect "smi: smi_error prints its text and status" 3 "$(printf 'first line\nsecond line')"

use_fixture errors.fixture
smi
expect "smi: a lost GPU fails the run with status 15" 15
has "smi: lost GPU's line is nvidia-smi's message" \
	'^Unable to determine the device handle for GPU0000:47:00\.0: GPU is lost\. Reboot the system to recover this GPU$'
has "smi: other GPUs still print" '^0, GPU-8e2b1f47-c3d9-4a60-b5e8-91f7d2a6c043, 20, 81920, 10000, 71920, '
has "smi: a name with ', ' is printed as is" ', NVIDIA A100-SXM4-80GB, MIG enabled, 1324021036227, '
has "smi: failing fields print nvidia-smi's placeholders" \
	'^1, [^,]+, \[Not Supported\], \[Insufficient Permissions\], \[Insufficient Permissions\], \[Insufficient Permissions\], '
has "smi: unsupported serial/display are [N/A], unknown errors [Unknown Error]" \
	'^3, .*, \[N/A\], \[N/A\], \[N/A\], \[Unknown Error\], 00000000:4E:00\.0, \[Not Supported\]$'
has "smi: without the v2 memory query, used includes reserved (as NVML's v1 answer does)" '^3, [^,]+, 5, 81920, 3600, 78320, '
has "smi: a handle error prints NVML's error string" \
	'^Unable to determine the device handle for GPU0000:87:00\.0: Unknown Error$'

scratch_fixture broken.fixture four.fixture "frobnicate 3"
smi
if [ "$STATUS" = 255 ] && grep -q 'broken.fixture:[0-9]*: unknown directive' <<<"$ERR_TEXT"; then
	ok "smi: an ill-formed fixture is a loud error"
else
	not_ok "smi: an ill-formed fixture is a loud error" "status $STATUS" "stderr: $ERR_TEXT"
fi

use_fixture smi-hang.fixture
run timeout 1 "$SMI" --query-gpu="$QUERY" --format=csv,noheader,nounits
expect "smi: smi_hang never answers" 124 ""

scratch_fixture rewrite.fixture four.fixture
smi
first=$OUT_TEXT
scratch_fixture rewrite.fixture scale-1.fixture
smi
if [ "$(wc -l <<<"$first")" = 4 ] && [ "$(wc -l <<<"$OUT_TEXT")" = 1 ]; then
	ok "smi: reads the fixture afresh at every run"
else
	not_ok "smi: reads the fixture afresh at every run" "first: $first" "second: $OUT_TEXT"
fi

# ---- NVML ---------------------------------------------------------------------------------

use_fixture four.fixture
run "$DUMP" "$NVML"
expect "nvml: four.fixture dumps" 0
has "nvml: calls before init are UNINITIALIZED" '^count\[before init\]: error 1 \(Uninitialized\)$'
has "nvml: driver version" '^driver: 550\.54\.15$'
has "nvml: count" '^count: 4$'
has "nvml: uuid" '^gpu3\.uuid: GPU-e6b84d30-9c17-4a52-bd8e-3f05a71c2e96$'
has "nvml: name" '^gpu0\.name: NVIDIA A100-SXM4-80GB$'
has "nvml: serial" '^gpu1\.serial: 1324021034788$'
has "nvml: buffers one byte short are INSUFFICIENT_SIZE" '^gpu0\.serial\[short\]: error 7 \(Insufficient Size\)$'
has "nvml: pci v3" '^gpu1\.pci_v3: busId=00000000:0F:00\.0 legacy=0000:0F:00\.0 domain=0x0 bus=0xf device=0x0 id=0x20B210DE sub=0x147F10DE$'
has "nvml: memory v2 with the right version" '^gpu0\.memory_v2: total=81920 reserved=0 free=21920 used=60000$'
has "nvml: memory v2 with version 2 is FUNCTION_NOT_FOUND" '^gpu0\.memory_v2\[version=2\]: error 13 \(Function Not Found\)$'
has "nvml: memory v1" '^gpu2\.memory: total=81920 free=79920 used=2000$'
has "nvml: utilization" '^gpu0\.utilization: gpu=85 memory=0$'
has "nvml: temperature sensor 0 only" '^gpu0\.temperature\[sensor=1\]: error 2 '
has "nvml: temperature v1 with the right version" '^gpu0\.temperature_v: 61$'
has "nvml: temperature v1 with version 1 is ARGUMENT_VERSION_MISMATCH" '^gpu0\.temperature_v\[version=1\]: error 25 '
has "nvml: temperature v1 for sensor 0 only" '^gpu0\.temperature_v\[sensor=1\]: error 2 '
has "nvml: power in mW" '^gpu0\.power_mw: 312450$'
has "nvml: process list: count 0 asks for the need" '^gpu0\.processes_v2\[call 1, count 0\]: error 7 \(Insufficient Size\) need=1$'
has "nvml: process list: then the entries (v2)" '^gpu0\.processes_v2\[call 2, count 1\]: ok count=1 48211/59400MiB/gi=-1/ci=-1$'
has "nvml: process list: v1 entries" '^gpu0\.processes\[call 2, count 1\]: ok count=1 48211/59400MiB$'
has "nvml: handle past the count is INVALID_ARGUMENT" '^handle\[past count\]: error 2 '
has "nvml: init is reference counted" '^count\[after one shutdown\]: 0$'
has "nvml: uninitialized after the last shutdown" '^count\[after last shutdown\]: error 1 '
has "nvml: an extra shutdown is UNINITIALIZED" '^shutdown\[extra\]: error 1 '

use_fixture errors.fixture
run "$DUMP" "$NVML"
has "nvml: a lost GPU answers GPU_IS_LOST everywhere" '^gpu2\.memory_v2: error 15 \(GPU is lost\)$'
if grep '^gpu2\.' <<<"$OUT_TEXT" | grep -v '\[version=[0-9]*\]' | grep -vq 'error 15'; then
	not_ok "nvml: nothing on a lost GPU succeeds" "$(grep '^gpu2\.' <<<"$OUT_TEXT")"
else
	ok "nvml: nothing on a lost GPU succeeds"
fi
has "nvml: per-field error" '^gpu1\.utilization: error 3 \(Not Supported\)$'
has "nvml: name with ', '" '^gpu1\.name: NVIDIA A100-SXM4-80GB, MIG enabled$'
has "nvml: memory_v2 fails alone" '^gpu3\.memory_v2: error 3 '
has "nvml: v1 memory still answers, used includes reserved" '^gpu3\.memory: total=81920 free=78320 used=3600$'
has "nvml: process list errors" '^gpu3\.processes_v2\[call 1, count 0\]: error 4 '
has "nvml: handle errors" '^gpu4\.handle: error 999 \(Unknown Error\)$'

scratch_fixture race.fixture four.fixture "process_race 50000 700"
run "$DUMP" "$NVML"
has "nvml: process_race: the second call finds one more" '^gpu3\.processes_v2\[call 2, count 1\]: error 7 \(Insufficient Size\) need=2$'
has "nvml: process_race: the third call gets all" '^gpu3\.processes_v2\[call 3, count 2\]: ok count=2 49233/11500MiB/gi=-1/ci=-1 50000/700MiB/gi=-1/ci=-1$'

for case in no-driver:9 mismatch:18 no-permission:4; do
	use_fixture "${case%:*}.fixture"
	run "$DUMP" "$NVML"
	has "nvml: ${case%:*} fails init with ${case#*:}" "^init: error ${case#*:} "
done
use_fixture "$SCRATCH/does-not-exist.fixture"
run "$DUMP" "$NVML"
has "nvml: no fixture is DRIVER_NOT_LOADED" '^init: error 9 \(Driver Not Loaded\)$'
use_fixture no-devices.fixture
run "$DUMP" "$NVML"
has "nvml: no devices: init with NVML_INIT_FLAG_NO_GPUS succeeds, count 0" '^count: 0$'
has "nvml: no devices: plain init fails, as NVML documents" '^init without flags: error 999 '
use_fixture "$SCRATCH/broken.fixture"
run "$DUMP" "$NVML"
if grep -q '^init: error 999 ' <<<"$OUT_TEXT" && grep -q 'broken.fixture:[0-9]*: unknown directive' <<<"$ERR_TEXT"; then
	ok "nvml: an ill-formed fixture fails init loudly"
else
	not_ok "nvml: an ill-formed fixture fails init loudly" "stdout: $OUT_TEXT" "stderr: $ERR_TEXT"
fi

scratch_fixture reread.fixture four.fixture
cp "$FIXTURES/scale-64.fixture" "$SCRATCH/next.fixture"
run "$DUMP" "$NVML" "$SCRATCH/next.fixture"
has "nvml: every init re-reads the fixture" '^count\[after rewrite\]: 64$'

use_fixture scale-1024.fixture
start=$(date +%s%N)
run "$DUMP" "$NVML"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
if grep -q '^count: 1024$' <<<"$OUT_TEXT" && grep -q '^gpu1023\.pci_v3: busId=00000004:0F:00\.0 ' <<<"$OUT_TEXT" \
	&& [ "$elapsed_ms" -lt 2000 ]; then
	ok "nvml: 1024 GPUs, unique bus ids, quickly (${elapsed_ms} ms for every call on every GPU)"
else
	not_ok "nvml: 1024 GPUs, unique bus ids, quickly" "${elapsed_ms} ms" "$(grep -E '^count|^gpu1023\.pci' <<<"$OUT_TEXT")"
fi

use_fixture four.fixture
run "$DUMP" "$OLD_NVML"
has "nvml old driver: no suffixed entry points" '^suffixed: no$'
for symbol in nvmlSystemGetDriverVersion nvmlDeviceGetName nvmlDeviceGetSerial nvmlDeviceGetPciInfo_v3 \
	nvmlDeviceGetMemoryInfo_v2 nvmlDeviceGetUtilizationRates nvmlDeviceGetTemperature \
	nvmlDeviceGetTemperatureV nvmlDeviceGetPowerUsage nvmlDeviceGetDisplayMode nvmlDeviceGetDisplayActive \
	nvmlDeviceGetComputeRunningProcesses_v2 nvmlDeviceGetComputeRunningProcesses; do
	grep -q "^$symbol: missing$" <<<"$OUT_TEXT" || missing_wrong="$missing_wrong $symbol"
done
if [ -z "${missing_wrong:-}" ]; then ok "nvml old driver: optional entry points missing"; else not_ok "nvml old driver: optional entry points missing" "present:$missing_wrong"; fi
has "nvml old driver: v1 memory" '^gpu0\.memory: total=81920 free=21920 used=60000$'
has "nvml old driver: legacy pci" '^gpu3\.pci: busId= legacy=0000:4E:00\.0 '
# exports LIBRARY PREFIX: the dynamic symbols LIBRARY defines that do not start with PREFIX.
exports() { nm -D --defined-only "$1" | awk '{print $3}' | grep -v "^$2" | tr '\n' ' '; }
if ! command -v nm >/dev/null; then
	skip "nvml: exports only NVML symbols" "no nm"
elif [ -z "$(exports "$NVML" nvml)$(exports "$OLD_NVML" nvml)" ]; then
	ok "nvml: exports only NVML symbols"
else
	not_ok "nvml: exports only NVML symbols" "also: $(exports "$NVML" nvml)"
fi

# ---- libcuda ------------------------------------------------------------------------------

cuda_direct() { # runs the direct-linked helper with the fake libcuda
	run env LD_LIBRARY_PATH="$FAKES" "$@" "$CUDA_DIRECT"
}
export GPURUN_FAKE_CUDA_RECORD=$SCRATCH/cuda.record

use_fixture four.fixture
cuda_direct
has "cuda: calls before cuInit are NOT_INITIALIZED" '^count\[before init\]: 3$'
has "cuda: driver version" '^version: 13000$'
has "cuda: cuGetProcAddress_v2 answers itself" '^proc\[cuGetProcAddress\]: 0 itself$'
has "cuda: cuGetProcAddress_v2 answers cuInit" '^proc\[cuInit\]: 0 cuInit$'
has "cuda: unknown symbols: success and NULL" '^proc\[unknown\]: 0 null status=1$'
has "cuda: all devices when CUDA_VISIBLE_DEVICES is unset" '^count: 4$'
has "cuda: UUIDs from the fixture" '^device 3: GPU-e6b84d30-9c17-4a52-bd8e-3f05a71c2e96$'
if grep -Eq '^pid=[0-9]+ CUDA_VISIBLE_DEVICES=<unset> CUDA_DEVICE_ORDER=<unset>$' <(tail -n 1 "$GPURUN_FAKE_CUDA_RECORD"); then
	ok "cuda: cuInit records the environment"
else
	not_ok "cuda: cuInit records the environment" "$(cat "$GPURUN_FAKE_CUDA_RECORD")"
fi

use_fixture eight.fixture
cuda_direct CUDA_VISIBLE_DEVICES=0
has "cuda: integers follow FASTEST_FIRST (cuda_order) by default" '^device 0: GPU-4a67d9b1-5c6e-4fa4-b138-eac5a2f7c649$'
has "cuda: cuda_version from the fixture" '^version: 12040$'
cuda_direct CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=PCI_BUS_ID
has "cuda: integers follow PCI order with CUDA_DEVICE_ORDER=PCI_BUS_ID" '^device 0: GPU-0b7f3c21-8d4e-4a96-9f12-6c3e8a1d5b07$'
cuda_direct CUDA_VISIBLE_DEVICES=GPU-7d3a,GPU-2e85,-1,3 CUDA_DEVICE_ORDER=PCI_BUS_ID
if grep -q '^count: 2$' <<<"$OUT_TEXT" && grep -q '^device 0: GPU-7d3a0ce4-' <<<"$OUT_TEXT" \
	&& grep -q '^device 1: GPU-2e85b7f9-' <<<"$OUT_TEXT"; then
	ok "cuda: UUID prefixes, and the first invalid entry ends the list"
else
	not_ok "cuda: UUID prefixes, and the first invalid entry ends the list" "$OUT_TEXT"
fi
# The first entry decides between UUIDs and integers; one of the other kind ends the list.
cuda_direct CUDA_VISIBLE_DEVICES=GPU-7d3a,2 CUDA_DEVICE_ORDER=PCI_BUS_ID
has "cuda: an index among UUIDs ends the list" '^count: 1$'
cuda_direct CUDA_VISIBLE_DEVICES=2,GPU-7d3a CUDA_DEVICE_ORDER=PCI_BUS_ID
has "cuda: a UUID among integers ends the list" '^count: 1$'
cuda_direct CUDA_VISIBLE_DEVICES=GPU-2e85,GPU-2e85b7f9 CUDA_DEVICE_ORDER=PCI_BUS_ID
has "cuda: a GPU named twice leaves none" '^init: 100$'
cuda_direct CUDA_VISIBLE_DEVICES=
has "cuda: empty CUDA_VISIBLE_DEVICES: no device, cuInit fails like the real one" '^init: 100$'
if [ "$(tail -n 1 "$GPURUN_FAKE_CUDA_RECORD" | cut -d' ' -f2-)" = "CUDA_VISIBLE_DEVICES= CUDA_DEVICE_ORDER=<unset>" ]; then
	ok "cuda: an empty value is recorded as empty"
else
	not_ok "cuda: an empty value is recorded as empty" "$(tail -n 1 "$GPURUN_FAKE_CUDA_RECORD")"
fi

: >"$GPURUN_FAKE_CUDA_RECORD"
for i in $(seq 1 20); do
	env LD_LIBRARY_PATH="$FAKES" CUDA_VISIBLE_DEVICES="$i,$i,$i,$i,$i,$i,$i,$i" "$CUDA_DIRECT" >/dev/null &
done
wait
if [ "$(grep -c -E '^pid=[0-9]+ CUDA_VISIBLE_DEVICES=([0-9]+)(,[0-9]+){7} CUDA_DEVICE_ORDER=<unset>$' "$GPURUN_FAKE_CUDA_RECORD")" = 20 ] \
	&& [ "$(wc -l <"$GPURUN_FAKE_CUDA_RECORD")" = 20 ]; then
	ok "cuda: concurrent processes record whole lines"
else
	not_ok "cuda: concurrent processes record whole lines" "$(cat "$GPURUN_FAKE_CUDA_RECORD")"
fi

if ! command -v nm >/dev/null; then
	skip "cuda: exports only driver symbols" "no nm"
elif [ -z "$(exports "$FAKES/libcuda.so.1" cu)" ]; then
	ok "cuda: exports only driver symbols"
else
	not_ok "cuda: exports only driver symbols" "also: $(exports "$FAKES/libcuda.so.1" cu)"
fi

# The real CUDA runtime loads libcuda.so.1 itself and reaches the fake's cuInit.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
cat >"$SCRATCH/runtime.c" <<'EOF'
#include <stdio.h>
#include <cuda_runtime_api.h>

int main(void)
{
	int count = -1;
	cudaError_t status = cudaGetDeviceCount(&count);

	printf("cudaGetDeviceCount: %d count=%d\n", (int)status, count);
	return 0;
}
EOF
if [ ! -f "$CUDA_HOME/include/cuda_runtime_api.h" ] || [ ! -e "$CUDA_HOME/lib64/libcudart.so" ]; then
	skip "cuda: the real libcudart reaches the fake cuInit" "no CUDA toolkit at $CUDA_HOME"
elif ! ${CC:-cc} -I"$CUDA_HOME/include" -o "$SCRATCH/runtime" "$SCRATCH/runtime.c" \
	-L"$CUDA_HOME/lib64" -lcudart -Wl,-rpath,"$CUDA_HOME/lib64" 2>"$SCRATCH/cc.err"; then
	not_ok "cuda: the real libcudart reaches the fake cuInit" "cannot compile against $CUDA_HOME: $(cat "$SCRATCH/cc.err")"
else
	: >"$GPURUN_FAKE_CUDA_RECORD"
	use_fixture four.fixture
	run env LD_LIBRARY_PATH="$FAKES" CUDA_VISIBLE_DEVICES=GPU-9a2d5f7c,3 CUDA_DEVICE_ORDER=PCI_BUS_ID "$SCRATCH/runtime"
	if grep -q '^pid=[0-9]* CUDA_VISIBLE_DEVICES=GPU-9a2d5f7c,3 CUDA_DEVICE_ORDER=PCI_BUS_ID$' "$GPURUN_FAKE_CUDA_RECORD" \
		&& [ "$STATUS" = 0 ]; then
		ok "cuda: the real libcudart reaches the fake cuInit ($OUT_TEXT)"
	else
		not_ok "cuda: the real libcudart reaches the fake cuInit" "status $STATUS" "stdout: $OUT_TEXT" \
			"record: $(cat "$GPURUN_FAKE_CUDA_RECORD")"
	fi
fi
