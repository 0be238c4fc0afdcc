"""Periodic evaluation against a fixed (uniform-random) opponent, keep-the-best-evaluated weights, and the
summary lines that read them (cpu backend, toy env: a few seconds)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.config import load_run_config
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import CheckpointError, ConfigError
from warp_drive.training.run import periodic_eval as pe
from warp_drive.training.run import run_summary
from warp_drive.training.trainer import Trainer

T, E, N = 20, 8, 4
PMAP = {"a": [3, 1], "b": [0, 2]}


def _config(tmp_path, iters=6, policies=("a", "b"), **trainer):
    pol = {"to_train": True, "algorithm": "A2C", "lr": 0.01, "gamma": 0.9, "model": {"fc_dims": [8, 8]}}
    return {"name": "toy", "trainer": {"num_envs": E, "train_batch_size": E * T, "num_episodes": E * iters,
                                       "env_backend": "cpu", "seed": 5, **trainer},
            "policy": {tag: dict(pol) for tag in policies},
            "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path), "name": "toy",
                       "tag": "t"}}


def _trainer(tmp_path, policies=("a", "b"), **trainer):
    wrapper = EnvWrapper(ToyLine(num_agents=N, episode_length=T, goal=6.0), num_envs=E, env_backend="cpu")
    pmap = PMAP if len(policies) == 2 else {policies[0]: list(range(N))}
    return Trainer(wrapper, _config(tmp_path, policies=policies, **trainer), pmap, results_dir="run", verbose=False)


def _scripted(monkeypatch, scores):
    """``returns_against_random`` replaced: the i-th evaluation returns ``scores[i]`` for every policy."""
    calls = []

    def fake(engine, total_episodes, greedy=None):
        calls.append({tag: {k: v.clone() for k, v in p.model.state_dict().items()} for tag, p in engine.policies.items()})
        value = scores[len(calls) - 1]
        return {tag: torch.full((total_episodes,), float(value), dtype=torch.float64) for tag in engine.policies}

    monkeypatch.setattr(pe, "returns_against_random", fake)
    return calls


# ----------------------------------------------------------------------------- config and schedule
def test_config_keys_defaults_and_checks():
    base = {"name": "x", "policy": {"shared": {"to_train": True}}}
    cfg = load_run_config(base).trainer
    assert (cfg.eval_every, cfg.eval_episodes, cfg.keep_best) == (0, 16, False)
    cfg = load_run_config({**base, "trainer": {"eval_every": 10, "eval_episodes": 40, "keep_best": True}}).trainer
    assert (cfg.eval_every, cfg.eval_episodes, cfg.keep_best) == (10, 40, True)
    with pytest.raises(ConfigError, match="trainer.eval_every` is 0"):
        load_run_config({**base, "trainer": {"keep_best": True}})
    for key, bad in (("eval_every", -1), ("eval_episodes", 0), ("keep_best", "yes")):
        with pytest.raises(ConfigError, match=f"trainer.{key}"):
            load_run_config({**base, "trainer": {key: bad}})


def test_schedule_is_the_first_every_nth_and_the_last_iteration():
    sched = pe.PeriodicEvaluation(every=4, episodes=8, keep_best=True)
    assert [i for i in range(0, 12) if sched.due(i, 10)] == [1, 4, 8, 10]
    off = pe.PeriodicEvaluation(every=0, episodes=8, keep_best=True)
    assert not off.enabled and not off.keep_best and not any(off.due(i, 10) for i in range(12))


# ----------------------------------------------------------------------------- in the training loop
def test_two_policies_are_each_evaluated_against_uniform_random_others(tmp_path, monkeypatch):
    from warp_drive.training.run import evaluation as ev

    seen = []
    play = ev.play_episodes
    monkeypatch.setattr(ev, "play_episodes", lambda engine, per_env, greedy, random_tags, fresh=True: (
        seen.append((per_env, greedy, sorted(random_tags))), play(engine, per_env, greedy, random_tags, fresh))[1])
    t = _trainer(tmp_path, iters=5, eval_every=2, eval_episodes=12)
    t.train()
    # iterations 1, 2, 4 and 5; ceil(12 / 8) = 2 episodes per env; sampled actions (a game); the other policy random
    assert seen == [(2, False, ["b"]), (2, False, ["a"])] * 4
    rows = [json.loads(line) for line in (t.save_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows if "a/eval_return" in r] == [1, 2, 4, 5]
    assert all("b/eval_return" in r for r in rows if "a/eval_return" in r)
    lines = run_summary.learning_lines(t.save_dir, ["a", "b"], 12)
    assert lines[0].startswith("learning (return against uniform-random opponents): a ") and "(iteration 5)" in lines[0]
    assert "12 sampled episodes" in lines[1] and "fixed opponent" in lines[1]
    assert lines[2].startswith("training: a episode return") and "can fall while every policy improves" in lines[3]
    assert run_summary.kept_weights_line(t.periodic_eval) == ""  # keep_best off


def test_keep_best_restores_the_best_weights_and_saves_them(tmp_path, monkeypatch):
    # evaluations at iterations 1, 2, 4, 6: the best (7.0) at 4, tied by nothing later; the last scores 3.0
    calls = _scripted(monkeypatch, [1.0, 5.0, 7.0, 3.0])
    t = _trainer(tmp_path, policies=("shared",), iters=6, eval_every=2, eval_episodes=8, keep_best=True)
    t.train()
    at_4 = calls[2]["shared"]
    final = t.policies["shared"].model.state_dict()
    assert all(torch.equal(final[k], at_4[k]) for k in at_4)
    assert not all(torch.equal(final[k], calls[3]["shared"][k]) for k in at_4)  # training moved them after 4
    best = t.periodic_eval.restored["shared"]
    assert (best.iteration, best.score) == (4, 7.0) and t.periodic_eval.last["shared"] == (6, 3.0)
    saved = torch.load(t.save_dir / "checkpoint_latest.pt", weights_only=True)
    assert all(torch.equal(saved["policies"]["shared"]["model"][k], at_4[k]) for k in at_4)
    assert saved["periodic_eval"]["best"]["shared"]["iteration"] == 4
    line = run_summary.kept_weights_line(t.periodic_eval)
    assert "shared: the weights of iteration 4, its best evaluation (7; iteration 6's: 3)" in line
    lines = run_summary.learning_lines(t.save_dir, ["shared"], 8)
    assert lines[0] == "learning (greedy evaluation return): shared 1 (iteration 1) -> 3 (iteration 6), best 7 (iteration 4)"


def test_keep_best_ties_keep_the_later_weights_and_a_best_last_evaluation_changes_nothing(tmp_path, monkeypatch):
    calls = _scripted(monkeypatch, [2.0, 9.0, 9.0, 9.0])
    t = _trainer(tmp_path, policies=("shared",), iters=6, eval_every=2, eval_episodes=8, keep_best=True)
    t.train()
    assert t.periodic_eval.restored == {} and t.periodic_eval.best["shared"].iteration == 6
    final = t.policies["shared"].model.state_dict()
    assert all(torch.equal(final[k], calls[3]["shared"][k]) for k in final)
    assert "shared: the last evaluated weights, iteration 6 (9, its best)" in run_summary.kept_weights_line(t.periodic_eval)


def test_a_resumed_run_keeps_the_best_so_far(tmp_path, monkeypatch):
    calls = _scripted(monkeypatch, [1.0, 8.0, 2.0, 2.0])
    t = _trainer(tmp_path, policies=("shared",), iters=6, eval_every=2, eval_episodes=8, keep_best=True)
    t.train(3)  # evaluations at 1 and 2 (the best: 8.0)
    path = t.save_checkpoint()
    resumed = _trainer(tmp_path, policies=("shared",), iters=6, eval_every=2, eval_episodes=8, keep_best=True)
    resumed.load_checkpoint(path)
    assert resumed.periodic_eval.best["shared"].iteration == 2 and resumed.periodic_eval.last["shared"] == (2, 8.0)
    resumed.train()  # evaluations at 4 and 6 (2.0 each)
    final = resumed.policies["shared"].model.state_dict()
    assert all(torch.equal(final[k], calls[1]["shared"][k]) for k in final)
    assert resumed.periodic_eval.restored["shared"].iteration == 2


def test_malformed_checkpoint_entry_is_a_checkpoint_error():
    sched = pe.PeriodicEvaluation(every=2, episodes=8, keep_best=True)
    sched.load_state_dict(None, {"a": None})
    assert sched.best == {} and sched.last == {}
    sched.load_state_dict({"last": {"a": [3, 1.5], "gone": [1, 0.0]}, "best": {}}, {"a": None})
    assert sched.last == {"a": (3, 1.5)}  # policies the trainer lacks are dropped
    for bad in ({"last": {"a": "x"}}, {"best": {"a": {"iteration": 1}}}, {"last": 5}):
        with pytest.raises(CheckpointError, match="'periodic_eval' entry is malformed"):
            sched.load_state_dict(bad, {"a": None})


# ----------------------------------------------------------------------------- the summary's lines
def _write_rows(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_learning_lines_show_a_game_rising_against_random_while_its_training_return_falls(tmp_path):
    """The Tag pattern: the taggers' training return falls (the runners learn too) while their return
    against uniform-random runners rises; the summary shows both, each with what it means."""
    rows = [{"iteration": i, "runner/episode_return_mean": -1.7 + 0.04 * i, "tagger/episode_return_mean": 12.2 - 0.2 * i}
            for i in range(1, 9)]
    rows[0].update({"runner/eval_return": -2.3, "tagger/eval_return": 11.5})
    rows[-1].update({"runner/eval_return": -1.0, "tagger/eval_return": 15.0})
    _write_rows(tmp_path, rows)
    lines = run_summary.learning_lines(tmp_path, ["runner", "tagger"], 40)
    assert lines[0] == ("learning (return against uniform-random opponents): runner -2.3 (iteration 1) -> -1 "
                        "(iteration 8) | tagger 11.5 (iteration 1) -> 15 (iteration 8)")
    assert lines[1].startswith("  (each policy's mean return over 40 sampled episodes")
    assert lines[2] == ("training: runner episode return -1.64 (iterations 1-2) -> -1.4 (iterations 7-8) | "
                        "tagger episode return 11.9 (iterations 1-2) -> 10.7 (iterations 7-8)")
    assert run_summary.learning_signal(tmp_path, ["runner", "tagger"]).startswith("runner episode return -1.64")


def test_learning_lines_without_evaluations_are_the_training_return(tmp_path):
    _write_rows(tmp_path, [{"iteration": i, "shared/episode_return_mean": 10.0 * i} for i in range(1, 5)])
    assert run_summary.learning_lines(tmp_path, ["shared"]) == [
        "learning: shared episode return 10 (iteration 1) -> 40 (iteration 4)"]
    assert run_summary.learning_lines(tmp_path / "nothing", ["shared"]) == []


def test_kept_weights_line_is_empty_without_keep_best():
    assert run_summary.kept_weights_line(SimpleNamespace(keep_best=False, best={})) == ""
