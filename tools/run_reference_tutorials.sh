#!/usr/bin/env bash
# GPU machine, after `source .device/setup.sh`: run WarpDrive 2.7.1's tutorial notebooks unchanged
# against this package (tools/run_reference_notebooks.py). Expects in .device/:
#   wdref_tutorials/*.ipynb   the notebooks of the public 2.7.1 repository
#   extra/*.whl               IPython (+deps) and imageio-ffmpeg (an ffmpeg binary for videos)
#   anchor/                   gym 0.26.2 (tutorial 5 imports gym.spaces) and pretrained/ policies
# Staging them (on your machine, from the repository root; .device/ is git-ignored):
#   notebooks: fetch the public repository salesforce/warp-drive (search tool `fetch`), clone its
#     mirror and copy tutorials/*.ipynb into .device/wdref_tutorials/
#   wheels: pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 --platform any -d .device/extra "ipython<9" imageio-ffmpeg
# Results: $OUT/notebooks/summary.json and one JSON per notebook.
set -uo pipefail
OUT="${OUT:-$PWD/gpu_results}"
SITE="${SITE:-/tmp/site}"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .device/extra/*.whl .device/anchor/gym*.whl 2>&1 | tail -2
export PYTHONPATH="$SITE:$PWD:${PYTHONPATH:-}"
ffmpeg_exe=$(python3 -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())" 2>/dev/null)
if [ -n "$ffmpeg_exe" ]; then
  mkdir -p /tmp/ffbin && ln -sf "$ffmpeg_exe" /tmp/ffbin/ffmpeg && export PATH="/tmp/ffbin:$PATH"
fi
export WARP_DRIVE_CACHE_DIR="${WARP_DRIVE_CACHE_DIR:-/tmp/warp_drive_kernels}"
nbs=("$@")
if [ ${#nbs[@]} -eq 0 ]; then
  nbs=(.device/wdref_tutorials/tutorial-1.a-warp_drive_basics.ipynb
       .device/wdref_tutorials/tutorial-2.a-warp_drive_sampler.ipynb
       .device/wdref_tutorials/tutorial-3-warp_drive_reset_and_log.ipynb
       .device/wdref_tutorials/simple-end-to-end-example.ipynb
       .device/wdref_tutorials/tutorial-5-training_with_warp_drive.ipynb
       .device/wdref_tutorials/tutorial-7-training_with_warp_drive_and_pytorch_lightning.ipynb)
fi
python3 tools/run_reference_notebooks.py "${nbs[@]}" --out "$OUT/notebooks" --assets .device/anchor/pretrained 2>&1 | tee "$OUT/notebooks.log"
