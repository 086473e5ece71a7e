#!/usr/bin/env bash
# demo.sh: gpurun on a simulated 4-GPU machine (the fake NVML library and tests/fixtures/four.fixture).
set -eu
cd "$(dirname "$0")/.."
export GPURUN_NVML_LIB=$PWD/build/fakes/libnvidia-ml.so.1
export GPURUN_NVIDIA_SMI=$PWD/build/fakes/nvidia-smi
export GPURUN_FAKE_FIXTURE=$PWD/tests/fixtures/four.fixture
GPURUN_LOCK_DIR=$(mktemp -d /tmp/gpurun-demo.XXXXXX)
export GPURUN_LOCK_DIR
trap 'rm -rf "$GPURUN_LOCK_DIR"' EXIT
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER

step() { printf '\n$'; printf ' %q' "$@"; printf '\n'; "$@"; }
step build/gpurun --show
step build/gpurun --show --all
step build/gpurun --limit 1 --order memory sh -c 'echo "the program sees CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER=$CUDA_DEVICE_ORDER"'
step build/gpurun --print --order free --limit 2 --explain
