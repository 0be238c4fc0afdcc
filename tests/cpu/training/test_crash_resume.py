"""Crash-consistent checkpoints: a run stopped or killed at a random moment resumes to exactly the
state of an uninterrupted run (weights, optimizer, counters, env replicas, RNG, metric rows).

In-process tests inject the signal inside the rollout, inside the update and inside a checkpoint
write, or crash a checkpoint write half-way; subprocess tests send SIGINT/SIGTERM/SIGKILL to the
command-line script at random moments. Everything runs on the cpu backend with tiny configs.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import CheckpointError
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training.interrupt import TrainingInterrupted
from warp_drive.training.run.metrics import read_metrics, truncate_metrics
from warp_drive.training.trainer import Trainer

ITERS = 12
PMAP = {"a": [3, 1], "b": [0, 2]}


def _config(tmp_path, iters=ITERS, num_envs=8, goal=6.0, **saving):
    pol = {"to_train": True, "algorithm": "PPO", "lr": 0.01, "gamma": 0.9, "num_minibatches": 2, "num_epochs": 2,
           "model": {"fc_dims": [16, 16]}}
    # 8 steps per env per iteration, 20-step episodes: episodes span iterations
    return {"name": "toy", "env": {"num_agents": 4, "episode_length": 20, "goal": goal},
            "trainer": {"num_envs": num_envs, "train_batch_size": num_envs * 8, "num_episodes": -(-num_envs * 8 * iters // 20),
                        "env_backend": "cpu", "seed": 5},
            "policy": {"a": dict(pol), "b": dict(pol, algorithm="A2C")},
            "saving": {"metrics_log_freq": 3, "model_params_save_freq": 4, "basedir": str(tmp_path),
                       "checkpoint_every_seconds": 0, **saving}}


def _trainer(tmp_path, run, **kw):
    cfg = _config(tmp_path, **kw)
    env = ToyLine(num_agents=4, episode_length=20, goal=cfg["env"]["goal"])
    wrapper = EnvWrapper(env, num_envs=cfg["trainer"]["num_envs"], env_backend="cpu")
    return Trainer(wrapper, cfg, PMAP, verbose=False, results_dir=str(tmp_path / run))


def _state(t: Trainer) -> dict:
    """Everything that must match between a resumed and an uninterrupted run."""
    out = {"iteration": t.iteration, "generator": t.generator.get_state()}
    for tag, p in t.policies.items():
        out[f"{tag}/timestep"] = p.timestep
        for name, v in p.model.state_dict().items():
            out[f"{tag}/model/{name}"] = v
        for i, s in p.optimizer.state_dict()["state"].items():
            for k, v in s.items():
                out[f"{tag}/adam/{i}/{k}"] = v
        out[f"{tag}/running_return"] = p.stats.running_return
        out[f"{tag}/running_length"] = p.stats.running_length
        out[f"{tag}/return_sum"] = p.stats.return_sum
    for name, v in t.env_wrapper.cuda_data_manager.state_dict().items():
        out[f"env/{name}"] = v
    for name, v in t.sampler.counters_state().items():
        out[f"sampler/{name}"] = v
    return out


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], torch.Tensor):
            torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
        else:
            assert a[key] == b[key], key


def _rows(folder: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("perf/")} for r in read_metrics(folder / "metrics.jsonl")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run: its final state and metric rows."""
    tmp = tmp_path_factory.mktemp("reference")
    t = _trainer(tmp, "ref")
    t.train()
    return _state(t), _rows(tmp / "ref"), tmp


def _signal_at_call(obj, name, k, signum=signal.SIGINT):
    """Wrap ``obj.name`` so that its ``k``-th call sends ``signum`` to this process half-way."""
    original = getattr(obj, name)
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == k:
            os.kill(os.getpid(), signum)
        return original(*args, **kwargs)

    return wrapped, calls


@pytest.mark.parametrize("where,seed", [("rollout", 0), ("rollout", 1), ("update", 2), ("checkpoint_write", 3)])
def test_signal_at_a_random_moment_then_resume_equals_uninterrupted(tmp_path, reference, monkeypatch, where, seed):
    ref_state, ref_rows, _ = reference
    rng = random.Random(seed)
    t = _trainer(tmp_path, "run")
    signum = rng.choice([signal.SIGINT, signal.SIGTERM])
    if where == "rollout":  # inside an env step of some iteration
        k = rng.randrange(1, 8 * (ITERS - 2))
        wrapped, _ = _signal_at_call(t.env_wrapper, "step_all_envs", k, signum)
        monkeypatch.setattr(t.env_wrapper, "step_all_envs", wrapped)
    elif where == "update":  # inside an optimizer step of the update
        k = rng.randrange(1, 4 * (ITERS - 2))
        wrapped, _ = _signal_at_call(t.policies["a"].optimizer, "step", k, signum)
        monkeypatch.setattr(t.policies["a"].optimizer, "step", wrapped)
    else:  # while a periodic checkpoint is being written (iteration 4 or 8)
        k = rng.choice([1, 2, 3])
        wrapped, _ = _signal_at_call(torch, "save", k, signum)
        monkeypatch.setattr(torch, "save", wrapped)
    with pytest.raises(TrainingInterrupted) as info:
        t.train()
    monkeypatch.undo()
    stop = info.value
    assert stop.signum == signum and stop.exit_code == 128 + signum and 0 < stop.iteration < ITERS
    assert stop.checkpoint == tmp_path / "run" / f"checkpoint_{stop.iteration:08d}.pt"
    assert signal.getsignal(signal.SIGINT) is not None and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL

    resumed = _trainer(tmp_path, "run")
    resumed.load_checkpoint(tmp_path / "run")
    assert resumed.iteration == stop.iteration
    resumed.train()
    _assert_same(ref_state, _state(resumed))
    assert _rows(tmp_path / "run") == ref_rows  # same rows, each iteration once


def test_crash_inside_a_checkpoint_write_keeps_the_previous_one(tmp_path, reference, monkeypatch):
    """A process that dies half-way through writing checkpoint 8 leaves checkpoint 4 usable."""
    ref_state, ref_rows, _ = reference
    t = _trainer(tmp_path, "run")
    real_save = torch.save

    class Died(BaseException):
        pass

    def dying_save(obj, f, *args, **kwargs):
        if t.iteration == 8:  # the first file of checkpoint 8
            f.write(b"PK\x03\x04 half a zip")  # partial bytes on disk, then the process is gone
            raise Died
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", dying_save)
    with pytest.raises(Died):
        t.train()
    monkeypatch.undo()
    run = tmp_path / "run"
    assert not list(run.glob(".tmp_*")), "the half-written temporary file was not removed"
    (run / ".tmp_left_by_sigkill.pt").write_bytes(b"PK\x03\x04")  # what a SIGKILL would leave: ignored
    assert not (run / "checkpoint_00000008.pt").exists()
    assert torch.load(run / ckpt.LATEST, weights_only=True)["iteration"] == 4
    resumed = _trainer(tmp_path, "run")
    resumed.load_checkpoint(run)
    assert resumed.iteration == 4
    resumed.train()
    _assert_same(ref_state, _state(resumed))
    assert _rows(run) == ref_rows


def test_corrupt_latest_checkpoint_is_named_and_the_previous_one_used(tmp_path, caplog):
    t = _trainer(tmp_path, "run")
    t.train(8)  # checkpoints 4 and 8 (+ latest = 8)
    run = tmp_path / "run"
    for name in (ckpt.LATEST, "checkpoint_00000008.pt"):
        data = (run / name).read_bytes()
        (run / name).write_bytes(data[: len(data) // 3])  # truncated, e.g. a full disk
    path, state = ckpt.resolve_checkpoint(run)
    assert path.name == "checkpoint_00000004.pt" and state["iteration"] == 4
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "checkpoint_latest.pt" in warned and "checkpoint_00000008.pt" in warned and "corrupt or truncated" in warned
    with pytest.raises(CheckpointError, match="checkpoint_00000008.pt.*corrupt or truncated"):
        ckpt.resolve_checkpoint(run / "checkpoint_00000008.pt")  # named explicitly: no silent fallback
    (run / "checkpoint_00000004.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="no intact checkpoint"):
        ckpt.resolve_checkpoint(run)


def test_latest_older_than_a_numbered_checkpoint_uses_the_newer_one(tmp_path):
    """A crash between writing checkpoint_<i>.pt and refreshing checkpoint_latest.pt."""
    t = _trainer(tmp_path, "run")
    t.train(4)
    run = tmp_path / "run"
    old_latest = (run / ckpt.LATEST).read_bytes()
    t.train(4)
    (run / ckpt.LATEST).write_bytes(old_latest)
    path, state = ckpt.resolve_checkpoint(run)
    assert path.name == "checkpoint_00000008.pt" and state["iteration"] == 8


def test_resume_with_other_env_model_or_num_envs_fails_up_front_naming_the_keys(tmp_path):
    t = _trainer(tmp_path, "run")
    t.train(4)
    other = _trainer(tmp_path, "other", num_envs=4, goal=5.0)
    with pytest.raises(CheckpointError) as info:
        other.load_checkpoint(tmp_path / "run")
    text = str(info.value)
    assert "trainer.num_envs: checkpoint 8, now 4" in text and "env.goal: checkpoint 6.0, now 5.0" in text
    assert other.iteration == 0  # nothing was loaded


def test_checkpoints_load_with_weights_only_and_hold_only_plain_data(tmp_path):
    t = _trainer(tmp_path, "run")
    t.train(4)
    state = torch.load(tmp_path / "run" / ckpt.LATEST, weights_only=True)

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        else:
            assert x is None or isinstance(x, (torch.Tensor, bool, int, float, str)), type(x)

    walk(state)
    assert state["config"]["trainer"]["num_envs"] == 8 and state["iteration"] == 4


class _RunsCode:
    """Unpickling this calls os.mkdir(marker): what a malicious checkpoint would do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


@pytest.mark.parametrize("kind", ["checkpoint", "policy file"])
def test_a_pickle_that_would_run_code_is_refused_naming_the_file(tmp_path, kind):
    marker = tmp_path / "code_ran"
    evil = tmp_path / ("evil_5.state_dict" if kind == "policy file" else "checkpoint_00000001.pt")
    payload = {"fc.weight": torch.zeros(2), "x": _RunsCode(marker)}
    if kind == "checkpoint":
        payload = {"format_version": 2, "iteration": 1, "policies": payload}
    torch.save(payload, evil)
    with pytest.raises(CheckpointError, match="refused to load") as info:
        if kind == "checkpoint":
            ckpt.resolve_checkpoint(evil)
        else:
            ckpt.load_state_dict_file(evil, "cpu")
    assert str(evil) in str(info.value) and "could run code" in str(info.value)
    assert not marker.exists()
    torch.load(evil, weights_only=False)  # the file is live: an unsafe load would have run it
    assert marker.is_dir()


def test_policy_files_from_model_ckpt_filepath_are_loaded_safely(tmp_path):
    marker = tmp_path / "code_ran"
    evil = tmp_path / "a_100.state_dict"
    torch.save({"w": _RunsCode(marker)}, evil)
    cfg = _config(tmp_path)
    cfg["policy"]["a"]["model"]["model_ckpt_filepath"] = str(evil)
    wrapper = EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=8, env_backend="cpu")
    with pytest.raises(CheckpointError, match="refused to load"):
        Trainer(wrapper, cfg, PMAP, verbose=False)
    assert not marker.exists()


def test_periodic_checkpoints_by_wall_clock_time(tmp_path, monkeypatch):
    t = _trainer(tmp_path, "run", checkpoint_every_seconds=30.0)
    clock = {"now": 1000.0}
    monkeypatch.setattr(time, "monotonic", lambda: clock["now"])

    real_update = t.engine.update_policies

    def update(*args, **kwargs):
        clock["now"] += 11.0  # each iteration takes 11 s
        return real_update(*args, **kwargs)

    monkeypatch.setattr(t.engine, "update_policies", update)
    t.train(7)
    names = sorted(p.name for p in (tmp_path / "run").glob("checkpoint_0*.pt"))
    # 30 s after the start (iteration 3) and after the last checkpoint (4 -> 7), plus every 4 iterations
    assert names == ["checkpoint_00000003.pt", "checkpoint_00000004.pt", "checkpoint_00000007.pt"]


def test_truncate_metrics_drops_later_rows_and_a_torn_line(tmp_path):
    from warp_drive.training.run.metrics import MetricsWriter

    with MetricsWriter(tmp_path, console_every=0) as w:
        for i in range(1, 6):
            w.write(i, 10 * i, {"a/x": float(i)})
    with open(tmp_path / "metrics.jsonl", "a") as fh:
        fh.write('{"iteration": 6, "timest')  # killed mid-write
    with open(tmp_path / "metrics.csv", "a") as fh:
        fh.write("6,60")
    assert truncate_metrics(tmp_path, 3) == 3 + 3
    assert [r["iteration"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2, 3]
    assert [r["iteration"] for r in read_metrics(tmp_path / "metrics.csv")] == [1, 2, 3]
    assert truncate_metrics(tmp_path, 3) == 0


# ----------------------------------------------------------------------------- the command line
ROOT = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "cartpole", "--backend", "cpu",
       "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=120", "env.episode_length=50", "trainer.seed=7",
       "trainer.num_episodes=144", "saving.metrics_log_freq=5", "saving.model_params_save_freq=10",
       "policy.shared.model.fc_dims=[16,16]"]  # 60 iterations of 30 steps x 4 envs


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), OMP_NUM_THREADS="1")


def _weights(run: Path) -> dict:
    state = torch.load(run / ckpt.LATEST, weights_only=True)
    return {"iteration": state["iteration"], **state["policies"]["shared"]["model"],
            **{f"data/{k}": v for k, v in state["rank_state"]["data_store"].items()}}


@pytest.fixture(scope="module")
def cli_reference(tmp_path_factory):
    run = tmp_path_factory.mktemp("cli") / "ref"
    res = subprocess.run(CLI + ["--results_dir", str(run)], env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return _weights(run), _rows(run)


def _start(run: Path, wait_for: str):
    proc = subprocess.Popen(CLI + ["--results_dir", str(run)], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while not (run / wait_for).is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("signum,code,seed", [(signal.SIGTERM, 143, 12), (signal.SIGKILL, -9, 13)])
def test_cli_killed_at_a_random_moment_resumes_to_the_uninterrupted_result(tmp_path, cli_reference, signum, code, seed):
    ref_weights, ref_rows = cli_reference
    run = tmp_path / "run"
    # SIGTERM: any time after training started; SIGKILL: after the first checkpoint (else nothing to resume)
    proc = _start(run, ckpt.LATEST if signum == signal.SIGKILL else "metrics.jsonl")
    time.sleep(random.Random(seed).uniform(0.1, 1.0))
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal (machine too fast for this delay)")
    assert proc.returncode == code, out[-2000:]
    if signum != signal.SIGKILL:
        assert "stopped after iteration" in out and "--resume" in out and "Traceback" not in out
    res = subprocess.run([sys.executable, "-m", "warp_drive.training.example_training_script", "--resume", str(run),
                          "--quiet"], env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "resumed from" in res.stdout
    mine = _weights(run)
    assert mine.keys() == ref_weights.keys()
    for key in mine:
        if isinstance(mine[key], torch.Tensor):
            torch.testing.assert_close(mine[key], ref_weights[key], rtol=0, atol=0, msg=key)
        else:
            assert mine[key] == ref_weights[key]
    rows = _rows(run)
    assert [r["iteration"] for r in rows] == [r["iteration"] for r in ref_rows]  # no duplicates, none missing
    assert rows == ref_rows


def test_cli_resume_with_another_num_envs_fails_up_front(tmp_path):
    run = tmp_path / "run"
    res = subprocess.run(CLI + ["--results_dir", str(run), "trainer.num_episodes=10"], env=_env(), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    before = sorted(p.name for p in run.iterdir())
    res = subprocess.run(CLI + ["--resume", str(run), "trainer.num_envs=6", "trainer.train_batch_size=180",
                                "env.episode_length=40"], env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) <= 4 and "Traceback" not in res.stderr  # what happened, intact, resume, where the log is
    assert "trainer.num_envs: checkpoint 4, now 6" in lines[0] and "env.episode_length: checkpoint 50, now 40" in lines[0]
    assert sorted(p.name for p in run.iterdir()) == sorted([*before, "error.log"])  # nothing else touched
