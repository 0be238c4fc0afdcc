#!/usr/bin/env bash
# Issue 25's line figure: Python lines in warp_drive/, without SAC's folder and model.
cd "$(dirname "$0")/.."
find warp_drive -name '*.py' ! -path '*/algorithms/sac/*' ! -name squashed_gaussian.py -print0 | xargs -0 cat | wc -l
