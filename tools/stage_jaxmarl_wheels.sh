#!/usr/bin/env bash
# Stage JaxMARL's IPPO/MAPPO peer for the GPU machine (issue 38 item 4): the wheels that machine lacks
# (its image has JAX 0.11 with the CUDA 13 plugin, flax, optax, chex, jaxtyping, safetensors, numpy,
# matplotlib, seaborn, pillow, pyyaml, absl-py, cloudpickle, six, ...; checked against
# .library/device/KINDS.md's package list), for CPython 3.12 / manylinux x86_64, plus the three
# baseline scripts and their configs from a JaxMARL git mirror, with its commit in src/COMMIT.
# Nothing here is committed (.device/ is git-ignored); carry .device/jaxmarl to the GPU machine and
# run `bash tools/jaxmarl_peer_gpu.sh` there.
#   bash tools/stage_jaxmarl_wheels.sh [MIRROR_GIT_DIR] [DEST]
# MIRROR_GIT_DIR: a bare clone or mirror of FLAIROx/JaxMARL (default /work/.mirror/FLAIROx+JaxMARL/repo,
#   where the search tool's `fetch github:FLAIROx/JaxMARL` puts it); JAXMARL_REV picks the commit
#   (default c793d095618c6d3edfb5632802348f57b70a4b94, the one the CPU curves were run at).
# The versions are the ones the CPU runs used (benchmarks/results/jaxmarl_*_simple_spread_cpu.json).
set -euo pipefail
mirror="${1:-/work/.mirror/FLAIROx+JaxMARL/repo}"
dest="${2:-.device/jaxmarl}"
rev="${JAXMARL_REV:-c793d095618c6d3edfb5632802348f57b70a4b94}"
PIP="${PIP:-python3 -m pip}"
mkdir -p "$dest"
rm -f "$dest"/*.whl
plat=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64)
# pure-Python wheels (py3-none-any) and the one binary one (dm-tree, used by tfp-nightly, distrax's backend)
for pkg in jaxmarl==0.2.0 gymnax==1.0.1 gymnasium==1.3.0 farama-notifications==0.0.6 \
           distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 decorator==5.3.2 gast==0.7.0 dm-tree==0.1.10 \
           hydra-core==1.3.8 omegaconf==2.3.1; do
  $PIP download -q --no-deps "${plat[@]}" -d "$dest" "$pkg"
done
# omegaconf 2.3 / hydra-core 1.3 pin antlr4-python3-runtime 4.9.*, which PyPI has only as an sdist:
# build its (pure-Python) wheel here
$PIP wheel -q --no-deps --no-binary antlr4-python3-runtime -w "$dest" antlr4-python3-runtime==4.9.3
# the peer's scripts and configs, unchanged
rm -rf "$dest/src"
mkdir -p "$dest/src"
git --git-dir="$mirror" archive "$rev" baselines/IPPO/ippo_ff_mpe.py baselines/IPPO/ippo_rnn_mpe.py \
  baselines/MAPPO/mappo_rnn_mpe.py baselines/IPPO/config/ippo_ff_mpe.yaml baselines/IPPO/config/ippo_rnn_mpe.yaml \
  baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml | tar -x -C "$dest/src"
git --git-dir="$mirror" rev-parse "$rev" > "$dest/src/COMMIT"
ls -1 "$dest"/*.whl
echo "staged $(ls "$dest"/*.whl | wc -l) wheels + baselines at $(cut -c1-7 "$dest/src/COMMIT"): $(du -sh "$dest" | cut -f1) in $dest"
