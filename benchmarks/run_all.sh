#!/usr/bin/env bash
# GPU benchmarks in one job (GPU machine, after `source .device/setup.sh`); results JSON go to
# benchmarks/results/ and $OUT. With no arguments: the standard suite, side by side with the
# reference where it has a counterpart. Arguments: benchmark commands to run instead, e.g.
#   bash benchmarks/run_all.sh "bench_end_to_end.py --iters 8" bench_sampler.py
set -uo pipefail
cd "$(dirname "$0")"
if [ -d ../.device/anchor ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/anchor_site ../.device/anchor/*.whl 2>/dev/null
fi
if [ "$#" -eq 0 ]; then
  set -- bench_sampler.py "bench_env_step.py --steps 300" "bench_end_to_end.py --iters 8" \
    bench_cpu_baseline.py "bench_lightning.py --iters 10 --repeats 2"
fi
for b in "$@"; do
  echo "== $b"; python3 $b 2>&1 | grep -v "^INFO" | tail -30
done
