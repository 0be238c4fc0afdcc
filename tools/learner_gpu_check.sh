#!/usr/bin/env bash
# Run on the GPU machine (after `source .device/setup.sh`): the learner's GPU checks and benchmarks for issue 37, in
# one job, logging under $OUT. Each step has its own time limit so the job fits one device call.
#   bash tools/learner_gpu_check.sh [PREV_TREE]
# Steps: the learner's GPU tests (fused trunk layer, compiled learner, graphed update); the kernel
# benchmark (benchmarks/bench_mlp_kernels.py, PyTorch with and without feature padding, compiled);
# the learner benchmark at the paper's scale and the bundled Tag config on PREV_TREE (a tree holding an earlier
# commit's warp_drive/ and example_envs/, e.g. from `git archive <commit> warp_drive example_envs | tar -x -C .prev`)
# and on this tree, side by side in this job. Environment: LEARNER_CONFIGS, LEARNER_VARIANTS, LEARNER_PROFILE=1 (the top
# GPU kernels of one iteration), LEARNER_TESTS, KERNEL_ARGS, and each step's limit in seconds (KERNEL_LIMIT,
# PREV_LIMIT, LEARNER_LIMIT, TEST_LIMIT; 1 skips a step in effect).
set -uo pipefail
OUT="${OUT:-$PWD/learner_results}"
mkdir -p "$OUT"
prev="${1:-.prev}"
configs="${LEARNER_CONFIGS:-tag_paper_2000x1000 tag_bundled}"
variants="${LEARNER_VARIANTS:-default bf16 bf16_compile}"
export WARP_DRIVE_CACHE_DIR="${WARP_DRIVE_CACHE_DIR:-/tmp/warp_drive_kernels}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
# step SECONDS LOG CMD...: run CMD under a time limit, output to $OUT/LOG, its tail to stdout
step() { local limit=$1 log="$OUT/$2"; shift 2; timeout -k 5 "$limit" "$@" > "$log" 2>&1; local r=$?
  tail -25 "$log"; echo "== exit $r after $(( $(date +%s) - start )) s: $*"; }
tests="${LEARNER_TESTS:-tests/gpu/test_fused_linear_gpu.py tests/gpu/test_compiled_learner_gpu.py
  tests/gpu/test_graphed_update_gpu.py}"
# the tests last: a hung test (faulthandler dumps its stack after 100 s) must not cost the benchmarks
(cd benchmarks && step "${KERNEL_LIMIT:-150}" bench_mlp_kernels.log python3 bench_mlp_kernels.py --repeats 5 \
  ${KERNEL_ARGS:-})
if [ -d "$prev/warp_drive" ]; then
  WARP_DRIVE_COMMIT="${PREV_COMMIT:-prev}" PYTHONPATH="$PWD/$prev:${PYTHONPATH:-}" step "${PREV_LIMIT:-60}" learner_prev.log \
    python3 benchmarks/bench_learner.py --name learner_prev --configs $configs --variants default --iters 3 --repeats 3
fi
step "${LEARNER_LIMIT:-240}" learner.log python3 benchmarks/bench_learner.py --name learner --configs $configs \
  --variants $variants --iters 3 --repeats 3 ${LEARNER_PROFILE:+--profile}
step "${TEST_LIMIT:-170}" gpu-tests.log python3 -m pytest -m gpu -v -rs --tb=short --durations=10 \
  -o faulthandler_timeout=100 --junitxml="$OUT/gpu-junit.xml" $tests
cp benchmarks/results/mlp_kernels_*.json benchmarks/results/learner_*.json "$OUT/" 2>/dev/null
echo "learner GPU check done in $(( $(date +%s) - start )) s"
