#!/usr/bin/env bash
# Run on the GPU machine (after `source .device/setup.sh`): every Numba GPU check of the Numba backend
# (issue 40), logging under $OUT. numba-cuda 0.30 needs NumPy < 2.5: a NumPy wheel staged in
# .device/numba/ is installed into /tmp/npsite and put first on PYTHONPATH for these commands only.
#   bash tools/numba_gpu_check.sh [COMMIT]
# Steps: the Numba GPU tests; check_build's Numba build; 2.7.1's 14 Numba test files against this
# package and against 2.7.1 (tools/run_reference_numba_tests.py); 2.7.1's notebooks 1.b and 2.b
# (staged in .device/ref_nb/); 2.7.1's example_training_script_numba.py file, unchanged, for 120 s;
# the Numba vs CUDA C step benchmark.
set -uo pipefail
OUT="${OUT:-$PWD/numba_results}"
mkdir -p "$OUT"
commit="${1:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
export WARP_DRIVE_CACHE_DIR="${WARP_DRIVE_CACHE_DIR:-/tmp/warp_drive_kernels}"
if ls .device/numba/numpy-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/npsite .device/numba/numpy-*.whl
  export PYTHONPATH=/tmp/npsite:$PYTHONPATH
fi
python3 -c "import numpy, numba, numba_cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__)" | tee "$OUT/numba_versions.txt"
rc=0
# step LOG CMD...: run CMD, its output to $OUT/LOG (and its tail to stdout); a failure sets the exit code
step() { local log="$OUT/$1"; shift; echo "== $*" >> "$OUT/numba_steps.log"; "$@" > "$log" 2>&1; local r=$?
  tail -15 "$log"; echo "== exit $r: $*" | tee -a "$OUT/numba_steps.log"; [ $r -ne 0 ] && rc=$r; return 0; }
step numba-gpu-tests.log python3 -m pytest -m gpu -q -rs tests/gpu/test_numba_backend_gpu.py tests/gpu/test_compat_env.py \
  --junitxml="$OUT/numba-gpu-junit.xml"
step check_build_numba.log python3 -m warp_drive.cuda.check_build --envs example_envs --numba
python3 -m pip install -q --no-index --no-deps --target /tmp/anchor_site .device/anchor/gym*.whl
step reference_numba_tests.log python3 tools/run_reference_numba_tests.py \
  .device/anchor/rl_warp_drive-2.7.1-py3-none-any.whl --anchor-path /tmp/anchor_site --commit "$commit"
if ls .device/ref_nb/*.ipynb >/dev/null 2>&1; then
  step notebooks.log python3 tools/run_reference_notebooks.py .device/ref_nb/*.ipynb --out "$OUT/notebooks" --timeout 400
fi
scratch=$(mktemp -d)
python3 - "$scratch" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(".device/anchor/rl_warp_drive-2.7.1-py3-none-any.whl")
open(sys.argv[1] + "/example_training_script_numba.py", "wb").write(
    z.read("warp_drive/training/scripts/example_training_script_numba.py"))
PY
(cd "$scratch" && timeout 120 python3 example_training_script_numba.py --env tag_continuous) > "$OUT/script_numba.log" 2>&1
echo "2.7.1 example_training_script_numba.py --env tag_continuous: exit $? (124 = still training at 120 s)" | tee -a "$OUT/numba_steps.log"
tail -5 "$OUT/script_numba.log"
step bench_numba_vs_cuda.log python3 benchmarks/bench_numba_vs_cuda.py
cp benchmarks/results/*numba* "$OUT/" 2>/dev/null
echo "numba GPU check exit $rc" | tee -a "$OUT/numba_steps.log"
exit $rc
