#!/usr/bin/env bash
# All GPU benchmarks in one job (GPU machine, after `source .device/setup.sh`).
set -uo pipefail
cd "$(dirname "$0")"
if [ -d ../.device/anchor ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/anchor_site ../.device/anchor/*.whl 2>/dev/null
fi
for b in "$@"; do
  echo "== $b"; python3 $b 2>&1 | grep -v "^INFO" | tail -30
done
