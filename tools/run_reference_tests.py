"""Run WarpDrive 2.7.1's own PyCUDA test suite, unchanged, against this package (GPU machine).

The 13 ``pycuda_tests`` files of the public salesforce/warp-drive repository run the way its two
runner scripts run them (``warp_drive/utils/unittests/run_unittests_pycuda.py`` and
``run_trainer_tests.py``):

1. build ``warp_drive/cuda_includes/test_build.cu`` with ``PyCUDAFunctionManager().compile(main_file,
   cubin_file)`` (2.7.1's import path), then ``pytest`` the single-block unit tests and the example-env
   tests, 20 s each;
2. build ``test_build_multiblocks.cu`` the same way, then ``pytest`` the two multi-block folders,
   20 s each;
3. ``pytest`` the training tests, one 60 s window.

A command still running at the end of its window is killed (its process group), as the reference
runner kills it; its unfinished tests count as not run. Each ``pytest`` runs in a scratch copy of
the reference's ``tests/`` folder only, so ``import warp_drive`` / ``example_envs`` find this
package (the repository root leads PYTHONPATH), never the reference's. ``-v --rootdir .`` are added
to read the per-test outcomes by path; nothing else changes. The kernel cache starts empty unless ``--cache-dir`` names
one (so the windows include every nvcc build).

Staging the reference checkout: ``bash tools/stage_reference_tests.sh`` (writes
``.device/reference_repo/``). On the GPU machine, from the repository root::

    source .device/setup.sh
    python3 tools/run_reference_tests.py .device/reference_repo --commit <our commit>

Result: ``$OUT/reference_tests_<GPU>.json`` (per-file and total passed / failed / error / skipped /
not run, per-command wall time and window, GPU, both commits, kernels cached at the start) and the same file under
``--results-dir`` (default ``benchmarks/results``); logs in ``$OUT/reference_tests/``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (phase, test build compiled before it or None, test folder, window in seconds), in the order of
#: the reference's runner scripts.
COMMANDS = (
    ("unittests_pycuda", "test_build", "tests/warp_drive/pycuda_tests", 20),
    ("unittests_pycuda", None, "tests/example_envs/pycuda_tests", 20),
    ("unittests_pycuda", "test_build_multiblocks", "tests/multiblocks_per_env/warp_drive/pycuda_tests", 20),
    ("unittests_pycuda", None, "tests/multiblocks_per_env/example_envs/pycuda_tests", 20),
    ("trainer_tests", None, "tests/wd_training/pycuda_tests", 60),
)

#: How the reference's runner builds a test binary (through 2.7.1's import paths).
_COMPILE = (
    "from warp_drive.managers.pycuda_managers.pycuda_function_manager import PyCUDAFunctionManager\n"
    "from warp_drive.utils.common import get_project_root\n"
    "root = get_project_root()\n"
    "PyCUDAFunctionManager().compile(f'{{root}}/warp_drive/cuda_includes/{name}.cu', "
    "f'{{root}}/warp_drive/cuda_bin/{name}.fatbin')\n"
)

_OUTCOME = re.compile(r"^(?P<file>\S+?\.py)::(?P<test>\S+) (?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_COLLECT_ERROR = re.compile(r"^ERROR (?P<file>\S+?\.py)\b")
_STATUS_KEY = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "error",
               "SKIPPED": "skipped", "XFAIL": "skipped"}


def expected_tests(tests_root: Path, folder: str) -> dict[str, list[str]]:
    """``{file: [test names]}`` of one folder, read from the source (unittest methods and pytest
    functions whose names start with ``test``), relative to the checkout (``tests/...``)."""
    out = {}
    for path in sorted((tests_root / folder).glob("test_*.py")):
        names = []
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                names += [f"{node.name}::{f.name}" for f in node.body
                          if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
            elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                names.append(node.name)
        out[f"{folder}/{path.name}"] = names
    return out


def parse_outcomes(log: str) -> tuple[dict[str, str], set[str]]:
    """``({"file::test": status}, {files that failed to collect})`` from ``pytest -v`` output."""
    outcomes, broken = {}, set()
    for line in log.splitlines():
        if m := _OUTCOME.match(line):
            outcomes[f"{m['file']}::{m['test']}"] = _STATUS_KEY[m["status"]]
        elif m := _COLLECT_ERROR.match(line):
            broken.add(m["file"])
    return outcomes, broken


def run_window(cmd: list[str], cwd: Path, env: dict[str, str], window: float | None) -> tuple[str, float, bool, int]:
    """Run ``cmd`` (stdout and stderr together); kill its process group when ``window`` seconds pass.
    Returns (output, wall seconds, finished within the window, exit code)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=window)
        finished = True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        finished = False
    return out, time.monotonic() - start, finished, proc.returncode


def gpu_name() -> str:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    except ImportError:
        return "no torch"


def gpu_tag(name: str) -> str:
    """Short name for the result file: "NVIDIA H100 80GB HBM3" -> "H100"."""
    m = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Za-z]?)\b", name)
    return m.group(1) if m else re.sub(r"\W+", "_", name).strip("_") or "unknown"


def count(statuses: list[str]) -> dict[str, int]:
    keys = ("passed", "failed", "error", "skipped", "not_run")
    return {k: statuses.count(k) for k in keys} | {"tests": len(statuses)}


def file_result(name: str, tests: list[str], outcomes: dict[str, str], broken: set[str]) -> dict:
    if name in broken:
        statuses = ["error"] * len(tests)
    else:
        statuses = [outcomes.get(f"{name}::{t}", "not_run") for t in tests]
    counts = count(statuses)
    counts["all_passed"] = bool(tests) and counts["passed"] == len(tests)
    counts["per_test"] = dict(zip(tests, statuses))
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference", type=Path, help="a checkout (or staged copy) of salesforce/warp-drive holding tests/")
    ap.add_argument("--commit", default=os.environ.get("WARP_DRIVE_COMMIT", ""), help="this repository's commit (recorded)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ROOT / "gpu_results")))
    ap.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--cache-dir", type=Path, default=None, help="kernel cache to use (default: a fresh, empty one)")
    args = ap.parse_args(argv)

    tests_root = args.reference.resolve()
    missing = [folder for _, _, folder, _ in COMMANDS if not (tests_root / folder).is_dir()]
    if missing:
        raise SystemExit(f"{tests_root} lacks {missing}: stage it with `bash tools/stage_reference_tests.sh`")
    commit_file = tests_root / "REFERENCE_COMMIT"
    reference_commit = commit_file.read_text().strip() if commit_file.is_file() else "unknown"

    logs = args.out / "reference_tests"
    logs.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="wd271_tests_"))
    shutil.copytree(tests_root / "tests", scratch / "tests")
    cache = args.cache_dir or scratch / "kernel_cache"
    cached_at_start = len(list(cache.glob("*.cubin"))) if cache.is_dir() else 0
    env = dict(os.environ, WARP_DRIVE_CACHE_DIR=str(cache), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))

    files, commands = {}, []
    for index, (phase, build, folder, window) in enumerate(COMMANDS, 1):
        if build is not None:
            out, seconds, _, code = run_window([sys.executable, "-c", _COMPILE.format(name=build)], scratch, env, None)
            (logs / f"build_{build}.log").write_text(out)
            commands.append({"phase": phase, "command": f"PyCUDAFunctionManager().compile({build}.cu)",
                             "seconds": round(seconds, 1), "ok": code == 0})
            print(f"[build] {build}: {seconds:.1f} s", flush=True)
        out, seconds, finished, _ = run_window([sys.executable, "-m", "pytest", "-v", "--rootdir", ".", folder],
                                               scratch, env, window)
        (logs / f"{index}_{folder.replace('/', '_')}.log").write_text(out)
        outcomes, broken = parse_outcomes(out)
        for name, tests in expected_tests(scratch, folder).items():
            files[name] = file_result(name, tests, outcomes, broken)
        commands.append({"phase": phase, "command": f"pytest {folder}", "window_s": window,
                         "seconds": round(seconds, 1), "within_window": finished})
        print(f"[pytest] {folder}: {seconds:.1f} s (window {window} s{'' if finished else ', KILLED'})", flush=True)

    statuses = [s for f in files.values() for s in f["per_test"].values()]
    total = count(statuses) | {"files": len(files), "files_all_passed": sum(f["all_passed"] for f in files.values())}
    name = gpu_name()
    result = {
        "what": "WarpDrive 2.7.1's own pycuda_tests, unchanged, run as its runner scripts run them, against this package",
        "gpu": name, "commit": args.commit or "unknown", "reference": "salesforce/warp-drive", "reference_commit": reference_commit,
        "kernel_cache": {"dir": "given" if args.cache_dir else "fresh", "binaries_at_start": cached_at_start},
        "python": sys.version.split()[0], "total": total, "files": files, "commands": commands,
    }
    text = json.dumps(result, indent=2) + "\n"
    target = f"reference_tests_{gpu_tag(name)}.json"
    for folder in (args.out, args.results_dir):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / target).write_text(text)
    print(f"{total['files_all_passed']} of {total['files']} files, {total['passed']} of {total['tests']} tests passed "
          f"-> {args.out / target}")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if total["passed"] == total["tests"] and all(c.get("within_window", c.get("ok")) for c in commands) else 1


if __name__ == "__main__":
    sys.exit(main())
