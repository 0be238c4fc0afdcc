#!/usr/bin/env bash
# Run on the GPU machine: JaxMARL's IPPO/MAPPO baselines on MPE_simple_spread_v3 through
# benchmarks/peer_jaxmarl.py, with the machine's own JAX (0.11 + CUDA 13 plugin) and the wheels that
# tools/stage_jaxmarl_wheels.sh put in .device/jaxmarl (carry that folder). Results: JSON per algo in
# benchmarks/results/ and $OUT, named jaxmarl_<algo>_simple_spread_<GPU name>.json.
#   bash tools/jaxmarl_peer_gpu.sh [ALGO ...]          # default: ippo_ff mappo_rnn ippo_rnn
# Env: SEEDS (default 3), TOTAL_TIMESTEPS (default: the published configs' 1e7; set it only for a
# stated reduction), JAXMARL_DIR (default .device/jaxmarl).
set -euo pipefail
dir="${JAXMARL_DIR:-.device/jaxmarl}"
site=/tmp/jaxmarl_site
python3 -m pip install -q --no-index --no-deps --target "$site" "$dir"/*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export JAXMARL_SRC="$dir/src" XLA_PYTHON_CLIENT_PREALLOCATE=false  # as the peer's own launcher sets it
python3 -c "import jax, jaxmarl, distrax, hydra; print('jax', jax.__version__, jax.devices())"
extra=()
[ -n "${TOTAL_TIMESTEPS:-}" ] && extra+=(--total-timesteps "$TOTAL_TIMESTEPS")
for algo in "${@:-ippo_ff mappo_rnn ippo_rnn}"; do
  for a in $algo; do
    python3 benchmarks/peer_jaxmarl.py --algo "$a" --seeds "${SEEDS:-3}" "${extra[@]}"
  done
done
