#!/usr/bin/env bash
# Stage WarpDrive 2.7.1's test suite for tools/run_reference_tests.py: its tests/ folder and its two
# runner scripts (kept for reference, not run), extracted from a git mirror of the public
# repository salesforce/warp-drive, plus REFERENCE_COMMIT. Nothing of it is committed here
# (.device/ is git-ignored); the lead carries the folder to the GPU machine.
#   bash tools/stage_reference_tests.sh [MIRROR_GIT_DIR] [DEST]
# MIRROR_GIT_DIR: a bare clone or mirror (default: /work/.mirror/salesforce+warp-drive/repo, where the
#   search tool's `fetch github:salesforce/warp-drive` puts it; or `git clone --mirror
#   https://github.com/salesforce/warp-drive`). DEST: default .device/reference_repo.
# The whole tree also works as the runner's argument (the runner copies only tests/):
#   git --git-dir=MIRROR_GIT_DIR archive HEAD | tar -x -C DEST
set -euo pipefail
mirror="${1:-/work/.mirror/salesforce+warp-drive/repo}"
dest="${2:-.device/reference_repo}"
git --git-dir="$mirror" rev-parse --verify -q HEAD >/dev/null || { echo "no git repository at $mirror" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
git --git-dir="$mirror" archive HEAD tests warp_drive/utils/unittests/run_unittests_pycuda.py \
  warp_drive/utils/unittests/run_trainer_tests.py | tar -x -C "$dest"
git --git-dir="$mirror" rev-parse HEAD > "$dest/REFERENCE_COMMIT"
echo "staged $(find "$dest/tests" -path '*pycuda_tests/test_*.py' | wc -l) pycuda test files of $(cut -c1-7 "$dest/REFERENCE_COMMIT") in $dest"
