"""Run WarpDrive 2.7.1's own 14 Numba test files, unchanged, against this package and against 2.7.1 itself.

The Numba half of 2.7.1's suite (``tools/run_reference_tests.py`` runs the PyCUDA half): the 7 files of
``tests/warp_drive/numba_tests`` and the 7 of ``tests/example_envs/numba_tests`` (Tag continuous, Tag
gridworld, the 5 classic-control envs), taken from the anchor wheel ``rl_warp_drive-2.7.1`` (it ships
its ``tests/``). They run the way its ``run_unittests_numba.py`` runs them: first the Numba
``env_config.py`` for 2 envs x 5 agents is written into the package under test (2.7.1's own package
only: this package makes that module in memory, so nothing is written into it), then ``pytest`` on
each file; here one ``pytest`` per file (2.7.1 ran the two folders' files in 7 commands), each in a
scratch copy of the wheel's ``tests/`` so ``import warp_drive`` / ``example_envs`` find the package
under test (first on PYTHONPATH), never the other one. A file still running after ``--window``
seconds is killed (2.7.1's runner used 20 s); its unfinished tests count as not run.

Targets: ``ours`` (this checkout) and ``anchor`` (the unpacked wheel: 2.7.1's ceiling on today's
numba-cuda, same machine). On the GPU machine, from the repository root::

    source .device/setup.sh
    python3 -m pip install -q --no-index --no-deps --target /tmp/anchor_site .device/anchor/gym*.whl
    python3 tools/run_reference_numba_tests.py .device/anchor/rl_warp_drive-2.7.1-py3-none-any.whl \
        --anchor-path /tmp/anchor_site --commit <commit>

Result: ``$OUT/reference_numba_tests_<GPU>.json`` (per target: per-file and total passed / failed /
error / skipped / not run, per-file wall time, GPU, numba versions) and the same file under
``--results-dir`` (default ``benchmarks/results``); logs in ``$OUT/reference_numba_tests/<target>.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_reference_tests import count, expected_tests, file_result, gpu_name, gpu_tag, parse_outcomes, run_window  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: 2.7.1's 14 Numba test files, in the order of its runner (the files it did not list last).
FILES = (
    "tests/warp_drive/numba_tests/test_data_manager.py",
    "tests/warp_drive/numba_tests/test_function_manager.py",
    "tests/warp_drive/numba_tests/test_action_sampler.py",
    "tests/warp_drive/numba_tests/test_ou_sampler.py",
    "tests/warp_drive/numba_tests/test_env_reset.py",
    "tests/warp_drive/numba_tests/test_pool_reset.py",
    "tests/warp_drive/numba_tests/test_ring_buffer.py",
    "tests/example_envs/numba_tests/test_tag_gridworld.py",
    "tests/example_envs/numba_tests/test_tag_continuous.py",
    "tests/example_envs/numba_tests/single_agent/classic_control/test_acrobot.py",
    "tests/example_envs/numba_tests/single_agent/classic_control/test_cartpole.py",
    "tests/example_envs/numba_tests/single_agent/classic_control/test_mountain_car.py",
    "tests/example_envs/numba_tests/single_agent/classic_control/test_pendulum.py",
    "tests/example_envs/numba_tests/single_agent/classic_control/test_continuous_mountain_car.py",
)

#: What 2.7.1's runner writes into its package before the tests (``create_test_env_config``).
ENV_CONFIG_271 = "\nwkNumberEnvs = 2\nwkNumberAgents = 5\nwkBlocksPerEnv = 1\n"


def numba_versions() -> dict[str, str]:
    out = {}
    for name in ("numba", "numba_cuda", "llvmlite"):
        try:
            out[name] = __import__(name).__version__
        except (ImportError, AttributeError):
            out[name] = "not installed"
    return out


def run_target(label: str, package_root: Path, scratch: Path, logs: Path, window: float, extra: str = "") -> dict:
    """Run every file with ``package_root`` first on PYTHONPATH (then ``extra``); per-file results and totals."""
    paths = (str(package_root), extra, os.environ.get("PYTHONPATH", ""))
    env = dict(os.environ, PYTHONUNBUFFERED="1", WARP_DRIVE_CACHE_DIR=str(scratch / f"kernel_cache_{label}"),
               PYTHONPATH=os.pathsep.join(p for p in paths if p))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    files = {}
    for index, name in enumerate(FILES, 1):
        folder, filename = name.rsplit("/", 1)
        tests = expected_tests(scratch, folder)[name]
        out, seconds, finished, _ = run_window([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                                                "--rootdir", ".", name], scratch, env, window)
        with open(logs / f"{label}.log", "a") as log:  # one log per target: the GPU machine returns few files
            log.write(f"===== {index:02d} {name}\n{out}\n")
        outcomes, broken = parse_outcomes(out)
        files[name] = file_result(name, tests, outcomes, broken) | {"seconds": round(seconds, 1),
                                                                     "within_window": finished}
        print(f"[{label}] {name}: {files[name]['passed']}/{len(tests)} passed, {seconds:.1f} s"
              f"{'' if finished else ' (KILLED)'}", flush=True)
        # the results so far, after every file: a job cut short by its time limit still returns them
        (logs / f"{label}_partial.json").write_text(json.dumps(files, indent=1) + "\n")
        if files[name]["passed"] < len(tests):  # say which test failed and why, in the job's own output
            failed = [t for t, status in files[name]["per_test"].items() if status != "passed"]
            reasons = [line for line in out.splitlines() if line.startswith("E ")][:6]
            print(f"    not passed: {', '.join(failed)}", *(f"    {line[:160]}" for line in reasons), sep="\n",
                  flush=True)
    statuses = [s for f in files.values() for s in f["per_test"].values()]
    total = count(statuses) | {"files": len(files), "files_all_passed": sum(f["all_passed"] for f in files.values())}
    return {"package": str(package_root) if label == "anchor" else "this checkout", "total": total, "files": files}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path, help="the anchor wheel rl_warp_drive-2.7.1-py3-none-any.whl (holds tests/)")
    ap.add_argument("--commit", default=os.environ.get("WARP_DRIVE_COMMIT", ""), help="this repository's commit (recorded)")
    ap.add_argument("--targets", nargs="+", default=["ours", "anchor"], choices=["ours", "anchor"])
    ap.add_argument("--window", type=float, default=300.0, help="seconds per file before it is killed (2.7.1: 20)")
    ap.add_argument("--anchor-path", default="", help="extra PYTHONPATH for the anchor only (its gym 0.26, e.g. "
                    "a pip --target folder of .device/anchor/gym-0.26.2-py3-none-any.whl)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ROOT / "gpu_results")))
    ap.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="wd271_numba_"))
    anchor = scratch / "anchor"
    with zipfile.ZipFile(args.wheel) as wheel:
        wheel.extractall(anchor)
    missing = [f for f in FILES if not (anchor / f).is_file()]
    if missing:
        raise SystemExit(f"{args.wheel} lacks {missing}")
    shutil.copytree(anchor / "tests", scratch / "tests")
    (anchor / "warp_drive" / "numba_includes" / "env_config.py").write_text(ENV_CONFIG_271)
    logs = args.out / "reference_numba_tests"
    logs.mkdir(parents=True, exist_ok=True)

    roots = {"ours": ROOT, "anchor": anchor}
    extra = {"anchor": args.anchor_path}
    targets = {t: run_target(t, roots[t], scratch, logs, args.window, extra.get(t, "")) for t in args.targets}
    name = gpu_name()
    result = {
        "what": "WarpDrive 2.7.1's own 14 Numba test files, unchanged, one pytest per file, against this package "
                "('ours') and against 2.7.1 itself ('anchor': its wheel, same machine, same numba-cuda)",
        "gpu": name, "commit": args.commit or "unknown", "reference": args.wheel.name, "window_s": args.window,
        "python": sys.version.split()[0], "versions": numba_versions(), "targets": targets,
    }
    text = json.dumps(result, indent=2) + "\n"
    target = f"reference_numba_tests_{gpu_tag(name)}.json"
    for folder in (args.out, args.results_dir):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / target).write_text(text)
    for label, res in targets.items():
        t = res["total"]
        print(f"{label}: {t['files_all_passed']} of {t['files']} files, {t['passed']} of {t['tests']} tests passed")
    print(f"-> {args.out / target}")
    shutil.rmtree(scratch, ignore_errors=True)
    ours = targets.get("ours")
    return 0 if ours is None or ours["total"]["passed"] == ours["total"]["tests"] else 1


if __name__ == "__main__":
    sys.exit(main())
