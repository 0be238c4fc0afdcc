"""Every shell command in README.md, CHANGELOG.md and docs/*.md is executed by a test.

``test_every_documented_command_is_executed_by_a_test`` collects the commands (lines of ``bash``
blocks, and inline code spans that start like a command) and requires each to match exactly one
entry of ``HANDLERS``, which names the test that runs it: a test in this file (cpu or gpu-marked),
or the CI script itself for the commands CI runs. A new command in the docs fails this test until
a test runs it. Commands are run as written, with at most a results folder and a shorter run
appended (stated per test) so that the CPU suite stays fast.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_START = ("python ", "python3 ", "pip ", "bash ", "torchrun ", "warp-drive-train")
SCRIPT = "python -m warp_drive.training.example_training_script"
GPU_TESTS = sorted((ROOT / "tests" / "gpu").glob("test_docs_*_gpu.py"))

#: (pattern, how it is executed). "test_x": a test of this module; "gpu:test_x": a test of
#: tests/gpu/test_docs_*_gpu.py; "ci:<text>": a line of .ci/run.
HANDLERS: list[tuple[str, str]] = [
    (r'pip install (-e )?"?\.(\[\w+\])?"?', "test_pip_install_commands_work_from_a_clone"),
    (r"pip install torch --index-url https://download\.pytorch\.org/whl/cpu", "test_cpu_only_install_path"),
    (r"pip install rl-warp-drive", "reference"),  # 2.7.1's own install line, quoted in the migration guide
    (r"python -m warp_drive\.cuda\.device", "test_device_report_runs"),
    (re.escape(SCRIPT) + r" --env tag_continuous", "test_main_command_runs"),
    (re.escape(SCRIPT) + r" --env cartpole trainer\.num_envs=500", "test_config_reference_commands_run"),
    (re.escape(SCRIPT) + r" --config my_run\.yaml --backend cpu .*", "test_config_reference_commands_run"),
    (r"warp-drive-train --env tag_continuous --results_dir runs/tag --tensorboard", "test_console_script_command_runs"),
    (re.escape(SCRIPT) + r" --env my_env", "test_adding_an_env_command_runs"),
    (re.escape(SCRIPT) + r" (--env my_pkg\.my_env:MyEnv|--import my_pkg --env my_env) --backend cpu", "test_own_env_commands_run"),
    (r"python -m warp_drive\.cuda\.check_build --envs my_pkg", "test_own_env_commands_run"),
    (r"torchrun --nproc_per_node N( -m warp_drive\.training\.example_training_script \.\.\.)?", "test_torchrun_command_runs"),
    (r'python -m pytest -m "not gpu" -n auto --maxprocesses 4 --dist loadfile',
     'ci:pytest -m "not gpu" -n auto --maxprocesses 4 --dist loadfile'),
    (r"python -m warp_drive\.cuda\.check_build( --arch sm_90)?( --envs example_envs)?",
     "ci:python -m warp_drive.cuda.check_build --arch sm_90 --envs example_envs"),
    (r"python -m sphinx -W --keep-going -b html docs docs/_build/html",
     "ci:python -m sphinx -W --keep-going -b html docs docs/_build/html"),
    (r"python -m pytest -m gpu", "gpu:test_gpu_suite_commands_run"),
    (r"bash tools/gpu_suite\.sh", "gpu:test_gpu_suite_commands_run"),
    (r"bash tools/run_reference_tutorials\.sh", "gpu:test_reference_tutorials_command_runs"),
    (r"bash tools/stage_reference_tests\.sh", "test_stage_reference_tests_command_runs"),
    (r"python3 tools/run_reference_tests\.py \.device/reference_repo", "gpu:test_reference_tests_command_runs"),
    (r"python benchmarks/learning_side_by_side\.py (reference|ours|crossplay)", "gpu:test_learning_side_by_side_commands_run"),
    (r"python benchmarks/learning_side_by_side\.py plot", "test_learning_plot_command_runs"),
    (r"python benchmarks/bench_update_graph\.py --iters 20", "gpu:test_update_graph_benchmark_command_runs"),
    (r"python benchmarks/tag_sweep\.py [\w .-]+", "gpu:test_tag_sweep_command_runs"),
    (r"python benchmarks/learning_classic_control\.py --backend cpu --seeds 1 2 3", "test_learning_classic_control_command_runs"),
    (r"python tools/count_code_lines\.py", "test_line_count_commands_run"),
    (r"python tools/folder_graph\.py", "test_folder_graph_command_runs"),
    (r"python benchmarks/learning_classic_control\.py --algorithm sac .*", "test_learning_classic_control_sac_command_runs"),
    (r"python benchmarks/bench_end_to_end\.py --iters 8 --reference-runs 3 --configs [\w ]+ --variant trainer\.update_precision=bf16",
     "gpu:test_end_to_end_benchmark_command_runs"),
    (r"python benchmarks/bench_env_step\.py --steps 300", "gpu:test_env_step_benchmark_command_runs"),
    (r"python benchmarks/bench_time_to_policy\.py --seeds 0 1", "gpu:test_time_to_policy_command_runs"),
    (r"python tools/reset_pool_test_odds\.py", "test_reset_pool_odds_command_runs"),
    (r"bash benchmarks/learner_call\.sh", "gpu:test_learner_benchmark_command_runs"),
    (r"python benchmarks/first_run_seeds\.py", "test_first_run_seeds_command_runs"),
    (re.escape(SCRIPT) + r" --config warp_drive/training/run_configs/(mappo|ippo)_simple_spread\.yaml",
     "test_simple_spread_commands_run"),
    (r"python benchmarks/ours_simple_spread\.py (--algo (ippo|mappo) --seeds 1 2 3 --env-steps 2000000|--merge [\w/. ]+"
     r"|--algo mappo_gru --seeds 1 --env-steps 1000000 --threads 1)", "test_ours_simple_spread_commands_run"),
]


def documented_commands() -> list[tuple[str, str]]:
    """``(file, command)`` for every command line of a bash block and every inline command span."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for block in re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
            for line in block.splitlines():
                command = re.sub(r"\s+#.*$", "", line).strip()
                if command and not command.startswith("#"):
                    found.append((path.name, command))
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", prose):
            if span.startswith(COMMAND_START) and " " in span.strip():  # a command, not a program's name
                found.append((path.name, span.strip()))
    return found


def _handler(command: str) -> list[str]:
    return [how for pattern, how in HANDLERS if re.fullmatch(pattern, command)]


def test_every_documented_command_is_executed_by_a_test():
    commands = documented_commands()
    assert any(c == SCRIPT + " --env tag_continuous" for _, c in commands)
    ci = (ROOT / ".ci" / "run").read_text()
    for where, command in commands:
        hows = _handler(command)
        assert len(hows) == 1, f"{where}: {command!r} is run by no test (or by several): add it to HANDLERS"
        how = hows[0]
        if how.startswith("ci:"):
            assert how[3:] in ci, f"{where}: {command!r} should be run by .ci/run"
        elif how.startswith("gpu:"):
            assert any(f"def {how[4:]}(" in p.read_text() for p in GPU_TESTS), f"{how} is not a test of tests/gpu"
        elif how != "reference":
            assert callable(globals().get(how)), f"{how} is not a test of this module"


def test_every_handler_runs_a_documented_command():
    """A command re-wrapped in the docs (an inline span split over two lines) or deleted leaves its test
    with nothing to run: each handler must still match a documented command."""
    handled = {how for _, c in documented_commands() for how in _handler(c)}
    assert [how for _, how in HANDLERS if how not in handled] == []


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), OMP_NUM_THREADS="1")
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}  # None: unset


def run_ok(argv, cwd, timeout=300, **env):
    res = subprocess.run(argv, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{argv}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


def python_argv(command: str) -> list[str]:
    """A documented ``python -m ...`` command, run by this interpreter."""
    argv = shlex.split(command)
    assert argv[0] in ("python", "python3")
    return [sys.executable, *argv[1:]]


def commands_for(test_name: str) -> list[str]:
    """The documented commands that ``test_name`` runs."""
    return [c for _, c in documented_commands() if _handler(c) == [test_name]]


# ----------------------------------------------------------------------------- cpu
def _copy_of_the_tracked_files(clone: Path) -> Path:
    """``clone`` holding a copy of every file git tracks (a clone's content, without .git)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    return clone


def test_pip_install_commands_work_from_a_clone(tmp_path):
    """Each documented ``pip install`` of this project resolves from a clone (dry run, offline) and
    names only extras that setup.py provides."""
    commands = commands_for("test_pip_install_commands_work_from_a_clone")
    assert commands
    clone = _copy_of_the_tracked_files(tmp_path / "clone")
    report = tmp_path / "report.json"
    run_ok([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-build-isolation", "--no-index",
          "--quiet", "--report", str(report), "."], cwd=clone, timeout=600)
    provided = set(json.loads(report.read_text())["install"][0]["metadata"].get("provides_extra", []))
    for command in commands:
        extras = re.findall(r"\[(\w+)\]", command)
        assert set(extras) <= provided, f"{command!r}: setup.py provides extras {sorted(provided)}"


def test_cpu_only_install_path(tmp_path):
    """README's CPU-only path: with a torch installed, ``pip install .`` keeps it (dry run, offline);
    the first command, run by a pip without local configuration, resolves PyTorch's CPU build (dry
    run, without dependencies; skipped where that index cannot be reached)."""
    (command,) = commands_for("test_cpu_only_install_path")
    clone = _copy_of_the_tracked_files(tmp_path / "clone")
    report = tmp_path / "package.json"
    run_ok([sys.executable, "-m", "pip", "install", "--dry-run", "--no-build-isolation", "--no-index", "--quiet",
            "--report", str(report), "."], cwd=clone, timeout=600)
    assert [p["metadata"]["name"] for p in json.loads(report.read_text())["install"]] == ["warpdrive-marl"]
    report = tmp_path / "torch.json"
    argv = [sys.executable, "-m", *shlex.split(command), "--dry-run", "--no-deps", "--ignore-installed", "--quiet", "--report", str(report)]
    plain_pip = dict(PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS=None, PIP_EXTRA_INDEX_URL=None, PIP_CONSTRAINT=None)
    res = subprocess.run(argv, cwd=tmp_path, env=_env(**plain_pip), capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        import urllib.request

        try:
            urllib.request.urlopen(shlex.split(command)[-1] + "/torch/", timeout=20).close()
        except OSError as err:
            pytest.skip(f"PyTorch's CPU index is not reachable here ({err}); the offline half passed")
        raise AssertionError(f"{command!r} failed with the index reachable:\n{res.stderr[-2000:]}")
    (torch_wheel,) = json.loads(report.read_text())["install"]
    assert torch_wheel["metadata"]["name"] == "torch" and torch_wheel["metadata"]["version"].endswith("+cpu")


def test_device_report_runs(tmp_path):
    for command in commands_for("test_device_report_runs"):
        res = run_ok(python_argv(command), cwd=tmp_path)
        assert "pycuda" in res.stdout


def test_main_command_runs(tmp_path):
    """README's main command, shortened to 2 iterations (the full run: test_main_command_fits_a_2_core_cpu)."""
    (command,) = set(commands_for("test_main_command_runs"))
    res = run_ok(python_argv(command) + ["--backend", "cpu", "trainer.num_episodes=40", "--results_dir", "run"], cwd=tmp_path)
    lines = res.stdout.splitlines()
    assert lines[0] == f"results: {tmp_path / 'run'}"
    assert lines[1].startswith("cpu backend: CPU-sized settings for tag_continuous")
    assert lines[2].startswith("cpu backend: torch uses 1 thread (")  # warp_drive.utils.cpu_threads
    assert lines[3].startswith("iteration 1/2 (50%)") and "runner return" in lines[3] and "tagger return" in lines[3]
    assert any(line.startswith("learning (return against uniform-random opponents): runner ") for line in lines)
    assert any(line.startswith("training: runner episode return") for line in lines)
    # README: each team against a uniform-random one over the same episodes, paired, and a verdict saying so
    assert any(line.startswith("evaluation: final policy (sampled actions, as trained) vs uniform random on the same "
                               "episodes (fresh start states; paired)") for line in lines)
    assert "difference (paired)" in next(line for line in lines if line.startswith("policy "))
    verdict = next(line for line in lines if line.startswith("verdict: "))
    assert "paired over the same" in verdict, verdict
    # README: the number that moves the right way for each team (initial -> final weights against random opponents)
    learned = next(i for i, line in enumerate(lines) if line.startswith("learned (each team against uniform-random "
                                                                         "opponents, initial -> final weights): runner "))
    assert " | tagger " in lines[learned] and "rises as a team learns" in lines[learned + 1]


@pytest.mark.slow
def test_main_command_fits_a_2_core_cpu(tmp_path):
    """README's main command exactly as written, without a GPU: at most 3 minutes and 2 GB."""
    import resource
    import time

    from warp_drive.cuda.device import has_cuda_device

    if has_cuda_device():
        pytest.skip("measures the cpu fallback; this machine has a GPU")
    (command,) = set(commands_for("test_main_command_runs"))
    start = time.perf_counter()
    res = run_ok(python_argv(command), cwd=tmp_path, timeout=600, OMP_NUM_THREADS=None)  # as a user runs it
    wall = time.perf_counter() - start
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    lines = res.stdout.splitlines()
    assert lines[0].startswith("results: ") and "no usable GPU" in res.stdout
    assert wall <= 180 and peak_gb <= 2.0, (wall, peak_gb)
    shutil.rmtree(lines[0].split(" ", 1)[1], ignore_errors=True)


def test_config_reference_commands_run(tmp_path):
    """The two example commands of docs/config_reference.md, shortened to one small iteration; my_run.yaml
    is the bundled cartpole config (whose ``name`` is the env class name)."""
    cartpole = ROOT / "example_envs" / "classic_control" / "cartpole" / "run_config.yaml"
    shutil.copy(cartpole, tmp_path / "my_run.yaml")
    short = ["trainer.train_batch_size=1000", "trainer.num_episodes=10", "env.episode_length=100", "env.reset_pool_size=10"]
    commands = commands_for("test_config_reference_commands_run")
    assert len(commands) == 2
    for i, command in enumerate(commands):
        backend = [] if "--backend" in command else ["--backend", "cpu"]
        run_ok(python_argv(command) + backend + short + ["--results_dir", f"run{i}"], cwd=tmp_path)
        assert (tmp_path / f"run{i}" / "checkpoint_latest.pt").is_file()
    lr = json.loads((tmp_path / "run1" / "run_config.json").read_text().splitlines()[-1])["policy"]["shared"]["lr"]
    assert lr == [[0, 0.001], [1000000, 0.0001]]


def test_simple_spread_commands_run(tmp_path):
    """docs/results.md's MAPPO and IPPO runs on simple_spread (the cpu backend of their configs), shortened to
    2 iterations: MAPPO's critic sees the env's state, IPPO's the agent's own observation."""
    commands = commands_for("test_simple_spread_commands_run")
    assert len(commands) == 2
    for i, command in enumerate(commands):
        run = tmp_path / f"run{i}"
        run_ok(python_argv(command) + ["--quiet", "trainer.num_episodes=100", "--results_dir", str(run)], cwd=ROOT)
        assert (run / "checkpoint_latest.pt").is_file()
        policy = json.loads((run / "run_config.json").read_text().splitlines()[-1])["policy"]["shared"]
        expected = ("MAPPO", "global_state") if "mappo" in command else ("PPO", "local")
        assert (policy["algorithm"], policy["critic_input"]) == expected


def test_ours_simple_spread_commands_run(tmp_path):
    """docs/results.md's simple_spread runs against JaxMARL (issue 38 item 4), MAPPO-GRU's included: each algo's
    command cut to one seed of 3 updates into a temporary file; the documented ``--merge`` of the committed files
    into another, and of the two short MLP runs."""
    commands = commands_for("test_ours_simple_spread_commands_run")
    runs = [c for c in commands if "--algo" in c]
    assert sorted(c.split("--algo ")[1].split()[0] for c in set(runs)) == ["ippo", "mappo", "mappo_gru"]
    outs = {}
    for command in sorted(set(runs)):
        algo = command.split("--algo ")[1].split()[0]
        outs[algo] = tmp_path / f"ours_{algo}.json"
        run_ok(python_argv(command) + ["--seeds", "1", "--env-steps", "6144", "--out", str(outs[algo])], cwd=ROOT)
        seed = json.loads(outs[algo].read_text())["seeds"][0]
        assert seed["updates"] == 3 and len(seed["per_step_reward_last5pct_ours"]) == 25
        assert seed["final_peer_scale_25"] == pytest.approx(3 * seed["final_ours"], abs=0.01)
    (merge,) = {c for c in commands if "--merge" in c}
    run_ok(python_argv(merge) + ["--out", str(tmp_path / "committed.json")], cwd=ROOT)
    assert [r["algo"] for r in json.loads((tmp_path / "committed.json").read_text())["comparison"]] == ["ippo", "mappo"]
    merged = tmp_path / "merged.json"
    run_ok([*python_argv(merge)[:3], str(outs["ippo"]), str(outs["mappo"]), "--out", str(merged)], cwd=ROOT)
    assert [r["algo"] for r in json.loads(merged.read_text())["comparison"]] == ["ippo", "mappo"]


def test_console_script_command_runs(tmp_path):
    """``warp-drive-train`` is setup.py's console script for the example script's main(); run that
    main with the documented arguments (2 CPU-sized iterations)."""
    (command,) = commands_for("test_console_script_command_runs")
    assert '"warp-drive-train=warp_drive.cli.train:main"' in (ROOT / "setup.py").read_text()
    argv = [sys.executable, "-m", "warp_drive.training.example_training_script", *shlex.split(command)[1:]]
    run_ok(argv + ["--backend", "cpu", "trainer.num_episodes=40"], cwd=tmp_path)
    assert any((tmp_path / "runs" / "tag" / "tensorboard").iterdir())


def test_adding_an_env_command_runs(tmp_path, monkeypatch, capsys):
    """``--env my_env`` after registering an env as docs/adding_an_env.md says (the dummy env stands in)."""
    import example_envs
    from warp_drive.training import example_training_script as script

    (command,) = commands_for("test_adding_an_env_command_runs")
    monkeypatch.setitem(example_envs._EXAMPLE_ENVS, "my_env", example_envs.ExampleEnvSpec("example_envs.dummy_env.dummy_env:DummyEnv"))
    argv = shlex.split(command)[3:] + ["--backend", "cpu", "--quiet", "--results_dir", str(tmp_path / "run")]
    assert script.main(argv) == 0
    assert (tmp_path / "run" / "checkpoint_latest.pt").is_file()


def test_own_env_commands_run(tmp_path):
    """config_reference.md's "Your own env": a package my_pkg outside the repository (tests/helpers/out_of_tree.py:
    my_pkg.my_env:MyEnv, registered as my_env on import) trains by import path and by --import (its CPU-sized
    settings: 3 iterations), and check_build builds it (when nvcc is here)."""
    from tests.helpers.out_of_tree import write_env_package

    write_env_package(tmp_path / "ext", "my_pkg", module="my_env", cls="MyEnv", registered="my_env")
    path = os.pathsep.join([str(tmp_path / "ext"), str(ROOT)])
    commands = sorted(set(commands_for("test_own_env_commands_run")))  # check_build's is also in adding_an_env.md
    assert len(commands) == 3
    for i, command in enumerate(c for c in commands if "check_build" not in c):
        res = run_ok(python_argv(command) + ["--eval_episodes", "0", "--results_dir", f"run{i}"], cwd=tmp_path,
                     PYTHONPATH=path)
        assert "CPU-sized settings for" in res.stdout and (tmp_path / f"run{i}" / "checkpoint_latest.pt").is_file()
    if shutil.which("nvcc"):
        (check,) = [c for c in commands if "check_build" in c]
        assert "all CUDA sources compile" in run_ok(python_argv(check), cwd=tmp_path, PYTHONPATH=path).stdout


def test_torchrun_command_runs(tmp_path):
    """The documented torchrun form with N=2 processes (gloo on the CPU) and a tiny run."""
    command = max(commands_for("test_torchrun_command_runs"), key=len)  # the full form; the other is its prefix
    argv = shlex.split(command.replace("...", "").replace(" N ", " 2 "))
    assert argv[:3] == ["torchrun", "--nproc_per_node", "2"]
    tiny = ["--env", "cartpole", "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
            "env.episode_length=50", "trainer.num_episodes=16", "trainer.seed=1", "--results_dir", "run"]
    run_ok([sys.executable, "-m", "torch.distributed.run", "--standalone", *argv[1:], *tiny], cwd=tmp_path, timeout=600)
    state_files = sorted(p.name for p in (tmp_path / "run").glob("checkpoint_latest*.pt"))
    assert state_files == ["checkpoint_latest.pt", "checkpoint_latest.rank1.pt"]  # one run folder for both ranks


def test_learning_plot_command_runs(tmp_path):
    """docs/results.md's ``learning_side_by_side.py plot`` draws the heatmap and the curves from the committed
    results (copied, so the committed PNGs stay as they are)."""
    (command,) = commands_for("test_learning_plot_command_runs")
    results = ROOT / "benchmarks" / "results"
    shutil.copy2(results / "learning_side_by_side_NVIDIA_H200.json", tmp_path)
    shutil.copytree(results / "side_by_side", tmp_path / "side_by_side",
                    ignore=shutil.ignore_patterns("*.state_dict"))
    run_ok(python_argv(command), cwd=ROOT, WARP_DRIVE_BENCH_RESULTS=str(tmp_path))
    for name in ("learning_crossplay_NVIDIA_H200.png", "learning_curves_NVIDIA_H200.png"):
        assert (tmp_path / name).stat().st_size > 10_000


def test_learning_classic_control_command_runs(tmp_path):
    """The classic-control learning benchmark (README's headline figure, docs/results.md's table) for all
    five envs, each cut to a few iterations (``trainer.num_episodes=21``), one seed and 4 greedy episodes
    per check."""
    (command,) = set(commands_for("test_learning_classic_control_command_runs"))  # the same line in both
    out = tmp_path / "learning.json"
    short = ["--seeds", "1", "--checks", "1", "--eval_envs", "4", "--eval_episodes", "4", "--set", "trainer.num_episodes=21",
             "--out", str(out)]
    run_ok(python_argv(command) + short, cwd=ROOT, timeout=600)
    assert sorted(json.loads(out.read_text())["envs"]) == ["acrobot", "cartpole", "continuous_mountain_car",
                                                           "mountain_car", "pendulum"]


def test_first_run_seeds_command_runs(tmp_path):
    """README's first-run figures: the 10-seed benchmark cut to one seed of CartPole at a few iterations."""
    (command,) = set(commands_for("test_first_run_seeds_command_runs"))
    out = tmp_path / "first_run.json"
    short = ["--envs", "cartpole", "--seeds", "1", "--unseeded", "0", "--set", "trainer.num_episodes=8",
             "trainer.eval_every=1", "--out", str(out)]
    run_ok(python_argv(command) + short, cwd=ROOT, timeout=600)
    doc = json.loads(out.read_text())
    (run,) = [r for r in doc["runs"] if r["env"] == "cartpole"]
    assert run["returncode"] == 0 and run["seed"] == 1 and run["policies"], run
    # the paired difference trained − random (the verdict's number) is read back with both arms' intervals
    assert {"trained", "random", "difference"} <= set(run["policies"]["shared"]), run["policies"]
    assert run["policies"]["shared"]["difference"]["mean"] == pytest.approx(
        run["policies"]["shared"]["trained"]["mean"] - run["policies"]["shared"]["random"]["mean"], abs=0.1)
    assert doc["summary"]["cartpole"]["runs"] == 1


def test_learning_classic_control_sac_command_runs(tmp_path):
    """docs/results.md's SAC rows: the same benchmark with the shipped SAC configs, cut to a few iterations
    (``trainer.num_episodes=8``), one seed and 4 greedy episodes per check, into a temporary file."""
    (command,) = commands_for("test_learning_classic_control_sac_command_runs")
    out = tmp_path / "learning_sac.json"
    short = ["--seeds", "1", "--checks", "1", "--eval_envs", "4", "--eval_episodes", "4", "--set", "trainer.num_episodes=8",
             "--out", str(out)]
    run_ok(python_argv(command) + short, cwd=ROOT, timeout=600)
    assert sorted(json.loads(out.read_text())["envs"]) == ["continuous_mountain_car_sac", "pendulum_sac"]


def test_stage_reference_tests_command_runs(tmp_path):
    """Run against a small stand-in mirror (a bare repository laid out like salesforce/warp-drive),
    with the mirror and a destination appended, so the staged copy in .device/ is left alone."""
    (command,) = set(commands_for("test_stage_reference_tests_command_runs"))
    work = tmp_path / "work"
    for rel in ("tests/__init__.py", "tests/wd_training/pycuda_tests/test_env_training.py",
                "warp_drive/utils/unittests/run_unittests_pycuda.py", "warp_drive/utils/unittests/run_trainer_tests.py",
                "warp_drive/__init__.py"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("# stand-in\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for argv in (["init", "-q", str(work)], ["-C", str(work), "add", "."], ["-C", str(work), "commit", "-qm", "x"],
                 ["clone", "-q", "--mirror", str(work), str(tmp_path / "mirror")]):
        subprocess.run([*git, *argv], check=True, capture_output=True)
    dest = tmp_path / "staged"
    res = run_ok([*shlex.split(command), str(tmp_path / "mirror"), str(dest)], cwd=ROOT, timeout=120)
    assert "staged 1 pycuda test files" in res.stdout
    assert (dest / "tests" / "wd_training" / "pycuda_tests" / "test_env_training.py").is_file()
    assert not (dest / "warp_drive" / "__init__.py").exists()  # the reference's package is never staged
    assert len((dest / "REFERENCE_COMMIT").read_text().strip()) == 40


def test_folder_graph_command_runs():
    """docs/architecture.md's folder graph: two pairs of folders import each other, both the compat wing's
    (tests/cpu/test_import_structure.py checks the same graph)."""
    (command,) = commands_for("test_folder_graph_command_runs")
    out = run_ok(python_argv(command), cwd=ROOT).stdout
    assert "two-way folder pairs: 2\n  warp_drive/compat271/ <-> warp_drive/cuda/\n" in out, out
    assert "upward folder arrows: 2\n" in out and "folders of warp_drive on several floors: 1 of " in out, out
    files = run_ok(python_argv(command) + ["--files"], cwd=ROOT).stdout
    assert "warp_drive/cuda/compiler.py:" in files and "-> warp_drive/compat271/kernels.py" in files, files


def test_line_count_commands_run():
    """CHANGELOG.md's line figures of issue 25: all Python lines of warp_drive/ without SAC's
    folder and model (counted again here), and fewer code lines among them."""
    (command,) = commands_for("test_line_count_commands_run")
    out = run_ok(python_argv(command), cwd=ROOT).stdout.strip()
    m = re.fullmatch(r"all lines (\d+), code lines (\d+), files (\d+)", out)
    files = [p for p in (ROOT / "warp_drive").rglob("*.py")
             if "algorithms/sac/" not in p.as_posix() and p.name != "squashed_gaussian.py"]
    total = sum(p.read_text().count("\n") for p in files)
    assert m and int(m.group(1)) == total and int(m.group(3)) == len(files) and 0 < int(m.group(2)) < total


def test_reset_pool_odds_command_runs():
    """The migration guide's odds of 2.7.1's statistical reset-pool test, with fewer trials."""
    res = run_ok([sys.executable, "tools/reset_pool_test_odds.py", "--trials", "200"], cwd=ROOT, timeout=300)
    assert "test_cartpole.py" in res.stdout and "passes" in res.stdout
