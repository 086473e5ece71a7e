#!/usr/bin/env bash
# aarch64_test.sh: the preload library's dlopen hook is a trampoline in assembly, one per
# architecture, and aarch64 machines (Grace Hopper) run CUDA too. This builds the library, the
# fakes and the helper programs for aarch64 and runs them under qemu-user: the hook keeps its
# caller's RUNPATH and $ORIGIN, lazy selection works through dlopen and through cuInit, eager
# selection before main. It does so twice: with the library as the Makefile links it, and with
# the same objects linked for a loader that enforces branch targets (BTI), where a hook without
# its landing pad dies of SIGILL. Skipped, saying why, where the cross compiler or qemu is
# missing (.ci/run installs both) and in the sanitizer and valgrind runs (these programs are not
# gpurun's own build there).
. "$(dirname "$0")/lib.sh"
CROSS=${GPURUN_CROSS_AARCH64:-aarch64-linux-gnu-}
QEMU=${GPURUN_QEMU_AARCH64:-qemu-aarch64}
SYSROOT=${GPURUN_SYSROOT_AARCH64:-/usr/aarch64-linux-gnu}
NAME="the preload library on aarch64 (qemu-user)"

if [ -n "${GPURUN_UNDER:-}" ] || [ -n "${GPURUN_SANITIZED:-}" ]; then
	skip "$NAME" "the plain make check runs it; here gpurun is built or run otherwise"
	exit 0
fi
if ! command -v "${CROSS}gcc" >/dev/null || ! command -v "$QEMU" >/dev/null ||
	[ ! -d "$SYSROOT/lib" ]; then
	skip "$NAME" "needs ${CROSS}gcc, $QEMU and $SYSROOT (apt-get install gcc-aarch64-linux-gnu qemu-user)"
	exit 0
fi

A64=$ROOT/build-aarch64
PRELOAD=$A64/libgpurun-preload.so
HELPERS="dlopen_relative cuda_runtime_style preload_direct host_program"
CROSS_CFLAGS="-O2 -g -mbranch-protection=standard"
if ! make -s -C "$ROOT" B=build-aarch64 CC="${CROSS}gcc" AR="${CROSS}ar" CFLAGS="$CROSS_CFLAGS" \
	build-aarch64/libgpurun-preload.so build-aarch64/fakes/libnvidia-ml.so.1 \
	build-aarch64/fakes/libcuda.so.1 $(printf 'build-aarch64/helpers/%s ' $HELPERS) \
	>"$SCRATCH/build.log" 2>&1; then
	not_ok "the aarch64 build" "$(tail -n 20 "$SCRATCH/build.log")"
	exit 1
fi
# The BTI-enforced link: the library's own objects, marked (force-bti) even though the C start
# files are not, and left out with them (see tests/integration/preload/dso_handle.c). libgcc's
# outline-atomics constructor is not marked either: an atomic read-modify-write in the library
# would pull it in, and the loader would kill every program with SIGILL (pthread_once instead).
SOURCES=$ROOT/tests/integration/preload
PRELOAD_BTI=$SCRATCH/bti/libgpurun-preload.so
mkdir -p "$SCRATCH/bti" "$SCRATCH/runpath/sub"
if ! "${CROSS}gcc" $CROSS_CFLAGS -fPIC -c -o "$SCRATCH/bti/dso_handle.o" "$SOURCES/dso_handle.c" ||
	! "${CROSS}gcc" $CROSS_CFLAGS -shared -fvisibility=hidden -Wl,--exclude-libs,ALL -nostartfiles \
		-Wl,-z,force-bti -o "$PRELOAD_BTI" "$A64/obj/preload/preload.o" "$SCRATCH/bti/dso_handle.o" \
		"$A64/libgpurun-internal.a" -ldl -lm -lpthread 2>"$SCRATCH/bti.log"; then
	not_ok "the BTI-enforced link of the library" "$(grep -v 'BTI turned on' "$SCRATCH/bti.log")"
	exit 1
fi
# Built without optimization, as the native test does: a tail call in the loader would make
# the main program dlopen's caller, and the control itself would fail.
if ! "${CROSS}gcc" -shared -fPIC -o "$SCRATCH/runpath/sub/libsibling.so" \
	"$SOURCES/runpath_sibling.c" ||
	! "${CROSS}gcc" -shared -fPIC -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/sub' \
		-o "$SCRATCH/runpath/libloader.so" "$SOURCES/runpath_loader.c" -ldl; then
	not_ok "the aarch64 RUNPATH test libraries build"
	exit 1
fi
LOADER=$SCRATCH/runpath/libloader.so

export GPURUN_NVML_LIB=$A64/fakes/libnvidia-ml.so.1
export GPURUN_FAKE_CUDA_RECORD=$SCRATCH/cuda-record
use_fixture four.fixture      # GPU2 has the least memory in use

# guest [VAR=VALUE...] PROGRAM ARGS...: runs an aarch64 program under qemu (through `run`);
# the variables are set for the guest alone, never for qemu itself.
guest() {
	local settings=(-E "LD_LIBRARY_PATH=$A64/fakes")
	while [[ "$1" == *=* ]]; do
		settings+=(-E "$1")
		shift
	done
	: >"$GPURUN_FAKE_CUDA_RECORD"
	run "$QEMU" -L "$SYSROOT" "${settings[@]}" "$@"
}
helper() { printf '%s/helpers/%s' "$A64" "$1"; }
CHOSEN_2='1 CUDA_VISIBLE_DEVICES=2 CUDA_DEVICE_ORDER=PCI_BUS_ID'

# --- the build is what it claims ------------------------------------------------------------
check "the library is an aarch64 object" \
	grep -q "AArch64" <<<"$("${CROSS}readelf" -h "$PRELOAD")"
exported=$("${CROSS}nm" -D --defined-only "$PRELOAD" | awk '{ print $NF }' | sort | tr '\n' ' ')
check "it exports only its hooks" test "$exported" = "$PRELOAD_HOOKS"
check "the second link is marked for BTI, so that the loader enforces branch targets in it" \
	grep -q "BTI" <<<"$("${CROSS}readelf" -n "$PRELOAD_BTI")"

# checks LIBRARY LABEL: the trampoline and the choices, with that build of the library.
checks() {
	local library=$1 label=$2
	guest "$(helper dlopen_relative)" "$LOADER" libsibling.so
	expect "$label: control: the loader's RUNPATH resolves its sibling" 0 "loaded"
	guest LD_PRELOAD="$library" "$(helper dlopen_relative)" "$LOADER" libsibling.so
	expect "$label: under the library, a dlopen still resolves through its caller's RUNPATH" 0 "loaded"
	guest LD_PRELOAD="$library" GPURUN_OPTIONS=--lazy "$(helper dlopen_relative)" "$LOADER" \
		libsibling.so
	expect "$label: ... also when the library is active (lazy)" 0 "loaded"
	guest LD_PRELOAD="$library" GPURUN_OPTIONS=--lazy "$(helper dlopen_relative)" "$LOADER" \
		'$ORIGIN/sub/libsibling.so'
	expect "$label: ... and \$ORIGIN still names the caller's directory" 0 "loaded"

	guest LD_PRELOAD="$library" GPURUN_OPTIONS="--lazy --order memory" "$(helper cuda_runtime_style)"
	expect "$label: lazy, through dlopen(\"libcuda.so.1\") as libcudart does it" 0 \
		"loaded=2 init=0 count=1 visible=2"
	check "$label: ... and the driver saw the choice" test "$(record_values)" = "$CHOSEN_2"
	guest LD_PRELOAD="$library" GPURUN_OPTIONS="--lazy --order memory" "$(helper preload_direct)" \
		--threads 8
	expect "$label: lazy, through cuInit called by 8 threads at once: one choice" 0 \
		"init=0,0,0,0,0,0,0,0 count=1 visible=2"
	check "$label: ... that every cuInit saw" test "$(record_values)" = "8 ${CHOSEN_2#1 }"
	guest LD_PRELOAD="$library" GPURUN_OPTIONS="--order memory" "$(helper host_program)"
	expect "$label: eager, the program starts with its GPU chosen" 0 "2|PCI_BUS_ID|2"
}
checks "$PRELOAD" "aarch64"
checks "$PRELOAD_BTI" "aarch64 with BTI enforced"
