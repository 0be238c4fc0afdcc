"""The example training script: output, CPU sizing, Ctrl-C checkpoint and resume, errors, flags, configs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from warp_drive.training import example_training_script as script

ROOT = Path(__file__).resolve().parents[3]
BASE = [sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "cartpole", "--backend", "cpu", "--quiet",
        "trainer.num_envs=4", "trainer.train_batch_size=200", "env.episode_length=50", "saving.metrics_log_freq=1"]
TINY = ["--env", "cartpole", "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
        "env.episode_length=50", "trainer.num_episodes=8"]


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), OMP_NUM_THREADS="1")


def test_ctrl_c_checkpoints_exits_130_and_resume_continues_in_the_same_folder(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(BASE + ["trainer.num_episodes=1000000", "--results_dir", str(run)], cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while not (run / "metrics.jsonl").is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert (run / "metrics.jsonl").is_file(), proc.communicate()[0][-2000:]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-2000:]
    assert "SIGINT: stopped after iteration" in out and "Traceback" not in out
    state = torch.load(run / "checkpoint_latest.pt", weights_only=True)
    stopped = state["iteration"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["iteration"] == stopped  # metric rows and checkpoint agree (log freq 1)
    res = subprocess.run(BASE + [f"trainer.num_episodes={(stopped + 3) * 4}", "--resume", str(run)], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"resumed from {run / 'checkpoint_latest.pt'} at iteration {stopped}" in res.stdout
    rows = [json.loads(line)["iteration"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows == list(range(1, stopped + 4))  # appended in the same folder, no duplicates
    ev = subprocess.run(BASE + ["--resume", str(run), "--evaluate"], cwd=tmp_path, env=_env(), capture_output=True,
                        text=True, timeout=300)
    assert ev.returncode == 0 and "mean episode return" in ev.stdout, ev.stdout + ev.stderr


def test_output_results_folder_first_then_progress_lines_then_a_summary(tmp_path):
    res = subprocess.run([sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "cartpole",
                          "--backend", "cpu", "trainer.num_envs=4", "trainer.train_batch_size=200", "env.episode_length=50",
                          "trainer.num_episodes=80", "--results-dir", str(tmp_path / "run")],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert lines[0] == f"results: {tmp_path / 'run'}"
    progress = [line for line in lines if line.startswith("iteration ")]
    # 20 iterations: after the first, then every 2 (a tenth of the run)
    assert [p.split()[1] for p in progress] == ["1/20"] + [f"{i}/20" for i in range(2, 21, 2)]
    assert "env steps/s" in progress[0] and "shared return" in progress[0]
    assert any(line.startswith("done: iterations 1-20 of 20") for line in lines)
    # the CPU-sized cartpole settings evaluate greedily after iterations 1 and 20 (the last) and keep the best
    assert any(line.startswith("learning (greedy evaluation return): shared ") for line in lines)
    assert any(line.startswith("training: shared episode return") for line in lines)
    assert any(line.startswith("final policy (keep_best: ") for line in lines)
    # the final comparison is paired: both arms over the same episodes, the verdict on the difference
    assert any(line.startswith("evaluation: final policy (greedy) vs uniform random on the same episodes") and
               "paired" in line for line in lines)
    header = next(line for line in lines if line.startswith("policy "))
    assert header.split()[:9] == ["policy", "trained", "(greedy)", "uniform", "random", "difference", "(paired)",
                                  "episodes", "better"]
    verdict = next(line for line in lines if line.startswith("verdict: "))
    assert "paired over the same" in verdict or "trained − random, paired over the same start states" in verdict
    # the run's initial weights against its final ones over the same episodes, and what that number means
    learned = next(i for i, line in enumerate(lines) if line.startswith("learned (greedy return, initial -> final "
                                                                         "weights): shared "))
    assert " -> " in lines[learned] and " ± " in lines[learned] and "rises as the policy learns" in lines[learned + 1]
    assert lines[-1] == f"results: {tmp_path / 'run'}"


def test_cpu_fallback_uses_cpu_sized_settings_and_says_so(tmp_path, monkeypatch, capsys):
    import warp_drive.cuda.device as device

    monkeypatch.setattr(device, "has_cuda_device", lambda: False)
    plan = script.plan_run(script.parse_args(["--env", "tag_continuous", "--results_dir", str(tmp_path / "r")]))
    assert plan.backend == "cpu"
    assert plan.config.env["num_runners"] == 10 and plan.config.trainer.num_envs == 20
    assert plan.config.trainer.num_iterations(plan.config.env["episode_length"]) == 120
    assert any("no usable GPU" in n for n in plan.notes)
    sized = [n for n in plan.notes if n.startswith("cpu backend: CPU-sized settings for tag_continuous")]
    assert len(sized) == 1 and "\n" not in sized[0] and "--full_size" in sized[0]
    full = script.plan_run(script.parse_args(["--env", "tag_continuous", "--full-size", "--results_dir", str(tmp_path / "f")]))
    assert full.config.env["num_runners"] == 100 and full.config.trainer.num_envs == 500  # the bundled config
    mine = script.plan_run(script.parse_args(["--env", "tag_continuous", "trainer.num_envs=10",
                                              "trainer.train_batch_size=1000", "--results_dir", str(tmp_path / "o")]))
    assert mine.config.trainer.num_envs == 10  # the command line's overrides win
    assert capsys.readouterr().out.startswith(f"results: {tmp_path / 'r'}")


def _run_main(argv, capsys):
    rc = script.main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _corrupt_run(tmp_path):
    run = tmp_path / "corrupt"
    run.mkdir()
    (run / "checkpoint_latest.pt").write_bytes(b"PK\x03\x04 not a checkpoint")
    return run


ERROR_CASES = {
    "config key": (lambda t: TINY + ["trainer.num_env=5"], "did you mean `trainer.num_envs`"),
    "config value": (lambda t: TINY + ["policy.shared.gamma=2"], "gamma"),
    "config file": (lambda t: ["--config", str(t / "missing.yaml"), "--backend", "cpu"], "cannot read run config"),
    "env argument (**kwargs env)": (lambda t: TINY + ["env.episode_lenght=5"], "did you mean `env.episode_length`"),
    "env argument": (lambda t: ["--env", "tag_continuous", "--backend", "cpu", "env.num_runner=5"], "did you mean `env.num_runners`"),
    "env name": (lambda t: ["--env", "cartpol", "--backend", "cpu"], "did you mean 'cartpole'"),
    "checkpoint missing": (lambda t: TINY + ["--resume", str(t / "nope")], "no such file or folder"),
    "results folder": (lambda t: TINY + ["--results_dir", "/proc/not_here"], "is not writable"),
    "resume elsewhere": (lambda t: TINY + ["--resume", str(_corrupt_run(t)), "--results_dir", str(t / "x")],
                         "continues in the checkpoint's run folder"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_expected_errors_are_one_or_two_lines_and_exit_2(tmp_path, capsys, case):
    make_argv, expected = ERROR_CASES[case]
    argv = make_argv(tmp_path)
    if "--results_dir" not in argv and "--resume" not in argv:
        argv += ["--results_dir", str(tmp_path / "run")]
    rc, out, err = _run_main(argv, capsys)
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("error: ") and expected in lines[0], err
    assert "Traceback" not in err + out


def test_device_error_is_two_lines_and_exit_2(tmp_path, capsys):
    from warp_drive.cuda.device import has_cuda_device

    if has_cuda_device():
        pytest.skip("this machine has a usable GPU")
    rc, out, err = _run_main(TINY[:2] + ["--backend", "pycuda", "--results_dir", str(tmp_path / "run")], capsys)
    assert rc == 2 and err.startswith("error: the pycuda backend needs") and len(err.strip().splitlines()) <= 2


def test_debug_shows_the_traceback(tmp_path):
    from warp_drive.errors import ConfigError

    with pytest.raises(ConfigError, match="trainer.num_envs"):
        script.main(TINY + ["trainer.num_env=5", "--debug", "--results_dir", str(tmp_path / "run")])


def test_results_folder_is_checked_before_anything_is_built(tmp_path):
    """Fails in well under a second: before torch is even imported."""
    code = ("import sys, time; t = time.perf_counter(); from warp_drive.training.example_training_script import main; "
            "rc = main(['--env', 'tag_continuous', '--results_dir', '/proc/cannot/be/made']); "
            "print(rc, round(time.perf_counter() - t, 3), 'torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    rc, seconds, torch_imported = res.stdout.split()
    assert rc == "2" and torch_imported == "False" and float(seconds) < 1.0, res.stdout + res.stderr
    assert "results folder /proc/cannot/be/made is not writable" in res.stderr


def test_unwritable_results_folder_fails_the_other_clis_too(tmp_path, capsys):
    from warp_drive.training.lightning import train as lightning_train

    rc = lightning_train.main(["--env", "cartpole", "--backend", "cpu", "--results-dir", "/proc/not_here"])
    assert rc == 2 and "is not writable" in capsys.readouterr().err


def test_evaluate_without_weights_refuses(tmp_path, capsys):
    rc = script.main(TINY + ["--evaluate", "--results_dir", str(tmp_path / "run")])
    assert rc == 2 and "add --resume RUN_FOLDER" in capsys.readouterr().err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("cli", ["example", "lightning", "setup_and_train"])
def test_both_flag_spellings_are_accepted(cli):
    if cli == "example":
        parse, base = script.parse_args, ["--env", "cartpole"]
        flags = {"results_dir": "r", "num_gpus": "2"}
    elif cli == "lightning":
        from warp_drive.training.lightning.train import parse_args as parse

        base = ["--env", "cartpole"]
        flags = {"results_dir": "r", "max_epochs": "2", "log_every_n_steps": "3"}
    else:
        from warp_drive.training.setup_and_train import parse_args as parse

        base = ["--env", "tag_continuous"]
        flags = {"results_dir": "r", "num_gpus": "2"}
    for sep in ("_", "-"):
        argv = list(base)
        for name, value in flags.items():
            argv += [f"--{name.replace('_', sep)}", value]
        args = parse(argv)
        for name, value in flags.items():
            assert str(getattr(args, name)) == value, (cli, sep, name)


def test_without_flag_strips_every_spelling():
    argv = ["--env", "x", "--num-gpus", "2", "--num_gpus=2", "-n", "2", "a=1"]
    assert script.without_flag(argv, ("--num_gpus", "--num-gpus", "-n")) == ["--env", "x", "a=1"]


def _bundled_configs() -> list[Path]:
    found = sorted(ROOT.glob("example_envs/**/run_config*.yaml")) + sorted(ROOT.glob("warp_drive/training/run_configs/*.yaml"))
    assert len(found) >= 17
    return found


@pytest.mark.parametrize("path", _bundled_configs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_bundled_config_loads_with_config(tmp_path, path, capsys):
    from warp_drive.config.env_kwargs import check_env_kwargs
    from warp_drive.training.setup_and_train import env_class_for

    plan = script.plan_run(script.parse_args(["--config", str(path), "--backend", "cpu", "--results_dir", str(tmp_path)]))
    cls = env_class_for(plan.config.name)
    check_env_kwargs(cls, plan.config.env, supplied_by_caller=("env_backend",))
    cls(**plan.config.env)


def test_a_classic_control_config_trains_with_config(tmp_path, capsys):
    path = ROOT / "example_envs" / "classic_control" / "cartpole" / "run_config.yaml"
    rc = script.main(["--config", str(path), "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
                      "trainer.num_episodes=2", "env.episode_length=100", "--results_dir", str(tmp_path / "run")])
    assert rc == 0 and (tmp_path / "run" / "checkpoint_latest.pt").is_file()


@pytest.mark.parametrize("name", ["tag_continuous", "tag_gridworld", "cartpole", "acrobot", "mountain_car",
                                  "continuous_mountain_car", "pendulum"])
def test_every_bundled_config_loads_and_builds(name):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.config.env_kwargs import check_env_kwargs

    cfg = load_run_config(get_default_config_path(name))
    cls = get_example_env_class(name)
    check_env_kwargs(cls, cfg.env, supplied_by_caller=("env_backend",))
    cls(**cfg.env)


def test_env_names_of_every_kind_resolve():
    from warp_drive.training.setup_and_train import example_env_name

    assert example_env_name("cartpole") == "cartpole"
    assert example_env_name("single_cartpole") == "cartpole"
    assert example_env_name("ClassicControlCartPoleEnv") == "cartpole"
    assert example_env_name("ClassicControlPendulumEnv") == "pendulum"
    from warp_drive.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean"):
        example_env_name("cartpol")


def test_out_of_memory_becomes_a_clear_message(monkeypatch, capsys):
    def boom(args, failures=None):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")

    from warp_drive.cli import train  # the module whose run() main() calls

    monkeypatch.setattr(train, "run", boom)
    assert script.main(["--env", "cartpole", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "does not fit in GPU memory" in err and "--auto_scale" in err and len(err.strip().splitlines()) <= 2


@pytest.mark.parametrize("name", sorted(script.CPU_SIZED_OVERRIDES))
def test_cpu_sized_settings_are_valid_and_small(name):
    from example_envs import get_default_config_path
    from warp_drive.config import load_run_config

    cfg = load_run_config(get_default_config_path(name), script.CPU_SIZED_OVERRIDES[name])
    iters = cfg.trainer.num_iterations(int(cfg.env["episode_length"]))
    assert f"{iters} iterations" in script.CPU_SIZED_SUMMARY[name]
    assert iters * cfg.trainer.train_batch_size <= 1_000_000  # about a minute on 2 cores (measured in the report)
