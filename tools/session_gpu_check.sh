#!/usr/bin/env bash
# This session's GPU run in one call (GPU machine, repo root, after `source .device/setup.sh`): the GPU tests of
# the code this session added, then the learner benchmark side by side with the baseline. Logs under $OUT.
set -uo pipefail
out="${OUT:-/tmp}"
export WARP_DRIVE_CACHE_DIR=/tmp/wdk
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
# xdist workers do not see $PYTHONPATH there (tools/gpu_suite.sh): hand its entries over through a .pth file
site=$(python3 -c "import site; print(site.getsitepackages()[0])")
tr ':' '\n' <<<"$PYTHONPATH" > "$site/warp_drive_session.pth"
timeout 120 python3 -m pytest -m gpu -q -rfEs --tb=line -p no:cacheprovider -n 4 --dist loadfile tests/gpu/test_compiled_learner_gpu.py \
  tests/gpu/test_mpe_consistency.py tests/gpu/test_out_of_tree_gpu.py tests/gpu/test_numba_backend_gpu.py \
  tests/gpu/test_graphed_update_gpu.py > "$out/gpu_tests.log" 2>&1; grep -E "^(FAILED|ERROR)|passed|failed|^/|Error" "$out/gpu_tests.log" | tail -40
timeout 200 bash benchmarks/learner_call.sh "${BENCH_CONFIGS:-tag_tutorial_100envs tag_bundled tag_paper_2000x1000}" \
  "" 2>&1 | grep -v -i "warn\|lowering\|if not any" | tee "$out/bench.log"
