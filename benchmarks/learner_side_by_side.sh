#!/usr/bin/env bash
# The learner benchmark on this tree and on a baseline tree, one after the other in one job on one GPU.
# Usage (GPU machine, repo root, after `source .device/setup.sh`):
#   bash benchmarks/learner_side_by_side.sh BASELINE_DIR "BASE_ARGS" "NEW_ARGS"
# BASELINE_DIR holds the baseline commit's warp_drive/ and example_envs/ (git archive <commit> warp_drive
# example_envs | tar -x -C DIR); BASE_ARGS / NEW_ARGS are bench_learner.py arguments. Logs and JSON under $OUT.
set -uo pipefail
base="$1"; base_args="$2"; new_args="$3"
out="${OUT:-/tmp}"
if [ -n "$base_args" ]; then
  WARP_DRIVE_COMMIT="${BASELINE_COMMIT:-baseline}" PYTHONPATH="$base:$PYTHONPATH" \
    python3 benchmarks/bench_learner.py --name learner_baseline $base_args 2>&1 | tee "$out/learner_baseline.log"
fi
if [ -n "$new_args" ]; then
  python3 benchmarks/bench_learner.py --name learner $new_args 2>&1 | tee "$out/learner.log"
fi
