"""The summary's "learned" line: each policy's return with the run's initial weights and with its final ones,
over the same episodes against the same fixed opponents (issue 39: a number that moves the right way for each
team), and the start weights it needs, kept in checkpoints (cpu backend, toy env: a few seconds)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import CheckpointError
from warp_drive.training.run import evaluation as ev
from warp_drive.training.run import run_summary
from warp_drive.training.run import start_weights as sw
from warp_drive.training.trainer import Trainer

T, E, N = 20, 8, 4


def _trainer(tmp_path, policies=("a", "b"), iters=6, name="run"):
    pol = {"to_train": True, "algorithm": "A2C", "lr": 0.05, "gamma": 0.9, "model": {"fc_dims": [8, 8]}}
    config = {"name": "toy", "trainer": {"num_envs": E, "train_batch_size": E * T, "num_episodes": E * iters,
                                         "env_backend": "cpu", "seed": 5},
              "policy": {tag: dict(pol) for tag in policies},
              "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path),
                         "name": "toy", "tag": "t"}}
    wrapper = EnvWrapper(ToyLine(num_agents=N, episode_length=T, goal=6.0), num_envs=E, env_backend="cpu")
    pmap = {"a": [3, 1], "b": [0, 2]} if len(policies) == 2 else {policies[0]: list(range(N))}
    return Trainer(wrapper, config, pmap, results_dir=name, verbose=False)


def _equal(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[r][k], b[r][k]) for r in a for k in a[r])


def test_the_start_weights_are_the_built_ones_and_survive_a_checkpoint(tmp_path):
    t = _trainer(tmp_path)
    built = sw.capture(t.engine.policies)
    assert all(_equal(t.start_weights[tag], built[tag]) for tag in built)
    t.train(3)
    assert not sw.same_as_current(t.engine.policies["a"], t.start_weights["a"])  # training moved the weights
    path = t.save_checkpoint()
    resumed = _trainer(tmp_path, name="other")
    with torch.no_grad():  # a resumed trainer is built with other weights: the checkpoint's start weights win
        for p in resumed.engine.policies["a"].model.parameters():
            p.add_(1.0)
    resumed.load_checkpoint(path)
    assert all(_equal(resumed.start_weights[tag], built[tag]) for tag in built)


def _tampered(tmp_path, t, edit):
    state = torch.load(t.save_dir / "checkpoint_latest.pt", weights_only=True)
    edit(state)
    path = tmp_path / "tampered.pt"
    torch.save(state, path)
    return path


@pytest.mark.parametrize("edit,field", [
    (lambda s: s["start_weights"].pop("b"), "`start_weights` must hold the weights of the policies ['a', 'b']"),
    (lambda s: s["start_weights"]["a"].update({"critic": {}}), "`start_weights.a` must hold the weight roles"),
    (lambda s: s["start_weights"]["a"][""].popitem(), "`start_weights.a` must hold the model's parameter"),
    (lambda s: s["start_weights"]["a"][""].update({k: torch.zeros(3) for k in list(s["start_weights"]["a"][""])[:1]}),
     "is torch.float32 (3,), not the model's"),
    (lambda s: next(iter(s["start_weights"]["b"][""].values())).fill_(float("nan")), "holds NaN or infinite values"),
    (lambda s: s.update(start_weights=[1, 2]), "`start_weights` must hold"),
])
def test_a_tampered_start_weights_entry_is_a_checkpoint_error_naming_it(tmp_path, edit, field):
    t = _trainer(tmp_path)
    t.train(1)
    t.save_checkpoint()
    path = _tampered(tmp_path, t, edit)
    fresh = _trainer(tmp_path, name="fresh")
    with pytest.raises(CheckpointError, match="start a new run") as info:
        fresh.load_checkpoint(path)
    assert field in str(info.value) and info.value.reason == "corrupt", str(info.value)  # exit 4, as other fields
    assert fresh.engine.iteration == 0  # checked before anything was loaded


def test_a_checkpoint_without_start_weights_resumes_without_them(tmp_path):
    t = _trainer(tmp_path)
    t.train(1)
    t.save_checkpoint()
    path = _tampered(tmp_path, t, lambda s: s.pop("start_weights"))
    fresh = _trainer(tmp_path, name="fresh")
    fresh.load_checkpoint(path)
    assert fresh.start_weights is None and fresh.engine.iteration == 1


def test_the_start_play_is_a_real_evaluation_of_the_start_weights(tmp_path):
    """One greedy policy on a deterministic env: the learned line's numbers equal a direct evaluation of the
    start weights and of the final weights from the same start states."""
    t = _trainer(tmp_path, policies=("shared",), iters=20)
    t.train()
    engine, policy = t.engine, t.engine.policies["shared"]
    final = sw.policy_weights(policy)
    comparisons = ev.compare_with_random(engine, 16, start_weights=t.start_weights)
    c = comparisons["shared"]
    assert sw.same_as_current(policy, final)  # the final weights came back
    with sw.playing(engine.policies, t.start_weights):
        direct_start = ev.evaluate(engine, deterministic=True, total_episodes=16, random_baseline=False)["shared"]
    direct_final = ev.evaluate(engine, deterministic=True, total_episodes=16, random_baseline=False)["shared"]
    assert c.start.n == c.learned.n == 16
    assert math.isclose(c.start.mean, float(direct_start["episode_return"].mean()), rel_tol=1e-6)
    assert math.isclose(c.trained.mean, float(direct_final["episode_return"].mean()), rel_tol=1e-6)
    assert math.isclose(c.learned.mean, c.trained.mean - c.start.mean, rel_tol=1e-6, abs_tol=1e-9)
    assert c.learned.mean > 0  # the greedy policy learns to walk to the goal in 20 iterations (-64.4 -> -15.25)
    lines = run_summary.learned_lines(comparisons)
    assert lines[0] == (f"learned (greedy return, initial -> final weights): shared {c.start.mean:.4g} -> "
                        f"{c.trained.mean:.4g} ({c.learned.mean:+.4g} ± {c.learned.half_width:.3g})")
    assert lines[1].startswith("  (the policy's mean greedy return over the same 16 episodes") and "rises" in lines[1]


def test_in_a_game_each_team_plays_its_start_weights_against_random_opponents(tmp_path, monkeypatch, capsys):
    t = _trainer(tmp_path, iters=4)
    t.train()
    plays = []
    play = ev.play_episodes

    def recording(engine, per_env, greedy, random_tags, fresh=True):
        out = play(engine, per_env, greedy, random_tags, fresh)
        holds_start = {tag: sw.same_as_current(p, t.start_weights[tag]) for tag, p in engine.policies.items()}
        plays.append((sorted(random_tags), holds_start, {tag: float(r["episode_return"].mean()) for tag, r in out.items()}))
        return out

    monkeypatch.setattr(ev, "play_episodes", recording)
    final = sw.capture(t.engine.policies)
    run_summary.print_random_comparison(SimpleNamespace(engine=t.engine, start_weights=t.start_weights), 16)
    lines = capsys.readouterr().out.splitlines()
    # per team: its verdict's play (the other team random), then, holding its start weights, the same play again
    starts = [(rt, means) for rt, holds, means in plays if any(holds.values())]
    assert [(rt, holds) for rt, holds, _ in plays if any(holds.values())] == [
        (["b"], {"a": True, "b": False}), (["a"], {"a": False, "b": True})]
    line = next(line for line in lines if line.startswith("learned (each team against uniform-random opponents"))
    assert f"a {starts[0][1]['a']:.4g} -> " in line and f"| b {starts[1][1]['b']:.4g} -> " in line
    meaning = lines[lines.index(line) + 1]
    assert "same 16 sampled episodes" in meaning and "fixed opponent" in meaning and "rises as a team learns" in meaning
    assert all(sw.same_as_current(p, final[tag]) for tag, p in t.engine.policies.items())  # the final weights came back


def test_no_learned_line_where_the_weights_are_the_start_weights(tmp_path):
    t = _trainer(tmp_path, policies=("shared",))
    comparisons = ev.compare_with_random(t.engine, 8, start_weights=t.start_weights)
    assert comparisons["shared"].start is None and run_summary.learned_lines(comparisons) == []
    assert run_summary.learned_lines(ev.compare_with_random(t.engine, 8)) == []
