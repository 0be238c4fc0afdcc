#!/usr/bin/env bash
# Run on the GPU machine (after `source .device/setup.sh`): every GPU test. Logs and JUnit XML go
# to $OUT (or ./gpu_results). With several GPUs the files are spread over one pytest-xdist worker
# per GPU (each worker sees one GPU; only those in $CUDA_VISIBLE_DEVICES where it is set), then the
# tests that need the machine to themselves run alone: the two-GPU tests, and 2.7.1's own test runner
# (its 20-second windows, kept from 2.7.1's runner scripts, are overrun on a loaded machine).
#   bash tools/gpu_suite.sh [pytest -k expression] [test paths...]
set -uo pipefail
OUT="${OUT:-$PWD/gpu_results}"
mkdir -p "$OUT"
export WARP_DRIVE_CACHE_DIR="${WARP_DRIVE_CACHE_DIR:-/tmp/warp_drive_kernels}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -m warp_drive.cuda.device | tee -a "$OUT/gpu.txt"
ngpu=$(nvidia-smi -L | grep -c '^GPU')
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then  # a share of the machine: only the GPUs it names
  ngpu=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
fi
kexpr="${1:-}"
shift $(( $# > 0 ? 1 : 0 ))
paths=("$@")
[ "${#paths[@]}" -eq 0 ] && paths=(tests/gpu)
parallel=()
if [ "$ngpu" -gt 1 ] && python3 -c "import xdist" 2>/dev/null; then
  export WARP_DRIVE_TEST_GPUS=$ngpu
  parallel=(-n "$ngpu" --dist loadfile)
  # the xdist workers on the GPU machine did not see $PYTHONPATH (pycuda and the staged wheels went
  # missing there): hand its entries to every interpreter through a .pth file
  site=$(python3 -c "import site; print(site.getsitepackages()[0])")
  [ -n "${PYTHONPATH:-}" ] && tr ':' '\n' <<<"$PYTHONPATH" > "$site/warp_drive_gpu_suite.pth"
fi
alone="two_gpu or reference_tests_command_runs"
k1="$kexpr"
[ "${#parallel[@]}" -gt 0 ] && k1="not ($alone)${kexpr:+ and ($kexpr)}"
start=$(date +%s)
python3 -m pytest -m gpu -v -rs --durations=30 "${parallel[@]}" --junitxml="$OUT/gpu-junit.xml" \
  ${k1:+-k "$k1"} "${paths[@]}" 2>&1 | tee "$OUT/gpu-tests.log"
rc=${PIPESTATUS[0]}
if [ "${#parallel[@]}" -gt 0 ]; then  # then the tests left out above, one at a time on the whole machine
  unset WARP_DRIVE_TEST_GPUS
  python3 -m pytest -m gpu -v -rs -k "($alone)${kexpr:+ and ($kexpr)}" "${paths[@]}" 2>&1 \
    | tee "$OUT/gpu-tests-multi.log"
  r2=${PIPESTATUS[0]}
  [ "$r2" -ne 0 ] && [ "$r2" -ne 5 ] && rc=$r2
fi
echo "GPU suite exit code $rc in $(( $(date +%s) - start )) s on $ngpu GPU(s)" | tee -a "$OUT/gpu-tests.log"
exit $rc
