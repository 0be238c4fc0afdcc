#!/usr/bin/env bash
# One job on one GPU: the learner benchmark on the baseline tree (.baseline: aeeede7's warp_drive/ and
# example_envs/, from `git archive aeeede7 warp_drive example_envs | tar -x -C .baseline`) and on this tree
# (its defaults, then bf16 rollout + update compiled), for issue 37.
# GPU machine, repo root, after `source .device/setup.sh`; logs and JSON under $OUT.
#   bash benchmarks/learner_call.sh [CONFIGS] [BF16_COMPILE_CONFIGS]
set -uo pipefail
all="${1:-tag_tutorial_100envs tag_tutorial_500envs tag_bundled tag_paper_2000x1000 cartpole}"
extra="${2-tag_tutorial_100envs tag_tutorial_500envs tag_paper_2000x1000}"
out="${OUT:-/tmp}"
WARP_DRIVE_COMMIT="${BASELINE_COMMIT:-baseline}" PYTHONPATH="$PWD/.baseline:${PYTHONPATH:-}" \
  python3 benchmarks/bench_learner.py --name learner_baseline --configs $all --variants default --iters 3 --repeats 3 \
  2>&1 | tee "$out/learner_baseline.log"
python3 benchmarks/bench_learner.py --name learner --configs $all --variants default --iters 3 --repeats 3 --profile \
  2>&1 | tee "$out/learner.log"
[ -z "$extra" ] || python3 benchmarks/bench_learner.py --name learner_bf16_compile --configs $extra --variants bf16_compile \
  --iters 3 --repeats 3 --profile 2>&1 | tee "$out/learner_bf16_compile.log"
