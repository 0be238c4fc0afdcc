#!/usr/bin/env bash
# Run on the GPU machine (after `source .device/setup.sh`): every GPU test, then (optionally)
# the benchmarks. Logs and JUnit XML go to $OUT (or ./gpu_results).
#   bash tools/gpu_suite.sh [pytest -k expression]
set -uo pipefail
OUT="${OUT:-$PWD/gpu_results}"
mkdir -p "$OUT"
export WARP_DRIVE_CACHE_DIR="${WARP_DRIVE_CACHE_DIR:-/tmp/warp_drive_kernels}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -m warp_drive.utils.device | tee -a "$OUT/gpu.txt"
start=$(date +%s)
python3 -m pytest -m gpu -v -rs --durations=25 --junitxml="$OUT/gpu-junit.xml" ${1:+-k "$1"} 2>&1 | tee "$OUT/gpu-tests.log"
rc=${PIPESTATUS[0]}
echo "GPU suite exit code $rc in $(( $(date +%s) - start )) s" | tee -a "$OUT/gpu-tests.log"
exit $rc
