"""benchmarks/learning_side_by_side.py on the CPU backend at a tiny size: training to wall-clock
marks writes loadable snapshots, and cross-play gives tagged fractions with intervals.

The published policies are stood in for by policies of a tiny config written here (CI has no copy
of them); the reference's trainer is not run (it needs a GPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def stand_in_published_policies(mod, tmp_path, monkeypatch) -> Path:
    """Policies of a tiny Tag config written as the published ones (``mod``: learning_side_by_side), with the
    module on the CPU backend and run from ``tmp_path``; returns the stand-in published folder."""
    env = dict(num_taggers=1, num_runners=3, grid_length=5.0, episode_length=20, max_acceleration=0.1,
               min_acceleration=-0.1, max_turn=2.35, min_turn=-2.35, num_acceleration_levels=10,
               num_turn_levels=10, seed=7, use_full_observation=False, num_other_agents_observed=2,
               runner_exits_game_after_tagged=True, tag_reward_for_tagger=10.0, tag_penalty_for_runner=-10.0,
               step_penalty_for_tagger=0.0, step_reward_for_runner=0.0, edge_hit_penalty=0.0,
               end_of_game_reward_for_runner=1.0, tagging_distance=0.5)
    policy = {"to_train": True, "algorithm": "A2C", "gamma": 0.98, "lr": 0.005,
              "model": {"type": "fully_connected", "fc_dims": [8, 8], "model_ckpt_filepath": ""}}
    cfg = {"name": "tag_continuous", "env": env,
           "trainer": {"num_envs": 4, "train_batch_size": 40, "num_episodes": 10},
           "policy": {"runner": dict(policy), "tagger": dict(policy)},
           "saving": {"metrics_log_freq": 100, "model_params_save_freq": 100, "basedir": str(tmp_path),
                      "name": "tag_continuous", "tag": "t"}}
    published = tmp_path / "published"
    published.mkdir()
    (published / "run_config.yaml").write_text(yaml.safe_dump(cfg))
    for name in mod.FILES.values():
        (published / name).touch()  # found as the published folder; written below
    monkeypatch.setenv("WARP_DRIVE_PRETRAINED_DIR", str(published))
    monkeypatch.setattr(mod, "BACKEND", "cpu")
    monkeypatch.chdir(tmp_path)
    from warp_drive.training.run.checkpoint import policy_file_state

    assert mod.pretrained_dir() == published
    trainer = mod.build_trainer(mod.published_config())
    for tag, name in mod.FILES.items():
        torch.save(policy_file_state(trainer.engine.policies[tag].model), published / name)
    mod.release(trainer)
    return published


@pytest.fixture()
def lsbs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import learning_side_by_side as mod

    monkeypatch.setattr(mod, "SIDE", tmp_path / "side")
    stand_in_published_policies(mod, tmp_path, monkeypatch)
    yield mod
    sys.modules.pop("learning_side_by_side", None)


def test_training_to_marks_writes_snapshots_that_cross_play(lsbs):
    cfg = lsbs.ours_config(["trainer.num_envs=4", "trainer.train_batch_size=40", "policy.tagger.model.fc_dims=[8,8]",
                            "policy.runner.model.fc_dims=[8,8]"])
    assert cfg["env"]["num_runners"] == 3 and cfg["trainer"]["seed"] == lsbs.SEED
    run = lsbs.train_ours(cfg, [1, 2], lsbs.SIDE / "ours")
    assert [s["mark_s"] for s in run["snapshots"]] == [1, 2]
    first, second = run["snapshots"]
    assert 1 <= first["elapsed_s"] <= second["elapsed_s"] and 0 < first["env_steps"] <= second["env_steps"]
    assert first["env_steps"] % 40 == 0
    for mark in (1, 2):
        for tag in ("tagger", "runner"):
            assert (lsbs.SIDE / "ours" / f"{mark}s_{tag}.state_dict").is_file()

    ev = lsbs.Evaluator(num_envs=4)
    row = ev.tagged(lsbs.SIDE / "ours" / "2s_tagger.state_dict", "random", episodes=2)
    assert row["n"] == 8 and 0.0 <= row["mean"] <= 1.0 and np.isfinite(row["ci95"])
    # every tagged fraction is a multiple of 1/3 (3 runners): the return -> fraction map is exact
    ret = ev.trainer.evaluate(deterministic=False, num_episodes=1)["runner"]["episode_return"]
    frac = (lsbs.END_REWARD - ret) / (lsbs.END_REWARD - lsbs.TAG_PENALTY)
    assert np.allclose(frac * 3, np.round(frac * 3), atol=1e-5)
    versus = ev.versus_published(lsbs.SIDE / "ours", 1)
    assert set(versus) == {"taggers_vs_published_runners", "published_taggers_vs_runners"}


def test_reference_paths_and_sources(lsbs):
    assert lsbs.source_path("ours-2min", "tagger") == lsbs.SIDE / "ours" / "120s_tagger.state_dict"
    assert lsbs.source_path("reference-5min", "runner") == lsbs.SIDE / "reference" / "300s_runner.state_dict"
    assert lsbs.source_path("random", "runner") == "random"
    assert lsbs.marks()[:2] == [30, 60] and set(lsbs.BUDGETS) <= set(lsbs.marks())
    assert lsbs.expand(["policy.{p}.lr=0.1", "trainer.num_envs=3"]) == [
        "policy.tagger.lr=0.1", "policy.runner.lr=0.1", "trainer.num_envs=3"]


def test_bundled_tag_config_carries_the_chosen_settings(lsbs):
    """example_envs/tag_continuous/run_config.yaml holds the sweep's chosen settings (README and
    the run config's comment cite the benchmark that chose them)."""
    import copy

    from warp_drive.config.load import apply_override

    bundled = yaml.safe_load((BENCH.parent / "example_envs/tag_continuous/run_config.yaml").read_text())
    applied = copy.deepcopy(bundled)
    for override in [o for o in lsbs.COMMON if o.startswith("trainer.")] + lsbs.expand(lsbs.SWEEP[lsbs.CHOSEN]):
        apply_override(applied, override)
    assert applied["policy"] == bundled["policy"] and applied["trainer"] == bundled["trainer"]
    assert bundled["policy"]["runner"]["algorithm"] == "PPO"


def test_parity_with_several_seeds_runs_each_both_ways_and_averages(lsbs, monkeypatch, tmp_path):
    small = ["trainer.num_envs=4", "trainer.train_batch_size=40", "policy.tagger.model.fc_dims=[8,8]",
             "policy.runner.model.fc_dims=[8,8]", "policy.tagger.num_minibatches=1", "policy.runner.num_minibatches=1"]
    real = lsbs.ours_config
    seen = []
    monkeypatch.setattr(lsbs, "ours_config", lambda overrides=(): seen.append(list(overrides)) or real([*small, *overrides]))
    evaluator = lsbs.Evaluator
    monkeypatch.setattr(lsbs, "Evaluator", lambda num_envs=200: evaluator(4))
    monkeypatch.setattr(lsbs, "RESULTS", tmp_path / "results")
    monkeypatch.setenv("WARP_DRIVE_BENCH_RESULTS", str(tmp_path / "results"))
    lsbs.main(["parity", "--iterations", "2", "--seeds", "5", "6"])
    import json

    doc = json.loads(next((tmp_path / "results").glob("learning_parity_*.json")).read_text())
    assert set(doc["runs"]) == {"as-is@5", "changed@5", "as-is@6", "changed@6"} and doc["seeds"] == [5, 6]
    assert seen == [["trainer.seed=5"], ["trainer.seed=5", "trainer.update_precision=bf16"],
                    ["trainer.seed=6"], ["trainer.seed=6", "trainer.update_precision=bf16"]]
    for name in ("as-is", "changed"):
        for side, mean in doc["mean_over_seeds"][name]["2"].items():
            runs = [doc["runs"][f"{name}@{s}"]["scores"]["2"][side]["mean"] for s in (5, 6)]
            assert mean == pytest.approx(sum(runs) / 2)


def test_parity_trains_both_runs_for_equal_iterations(lsbs, monkeypatch, tmp_path):
    """``parity``: the chosen settings as they are and with the bf16 update, 4 iterations each, snapshots
    at 2 and 4 iterations (equal env steps), both scored against the published policies."""
    small = ["trainer.num_envs=4", "trainer.train_batch_size=40", "policy.tagger.model.fc_dims=[8,8]",
             "policy.runner.model.fc_dims=[8,8]", "policy.tagger.num_minibatches=1", "policy.runner.num_minibatches=1"]
    real = lsbs.ours_config
    monkeypatch.setattr(lsbs, "ours_config", lambda overrides=(): real([*small, *overrides]))
    evaluator = lsbs.Evaluator
    monkeypatch.setattr(lsbs, "Evaluator", lambda num_envs=200: evaluator(4))
    monkeypatch.setenv("WARP_DRIVE_BENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(lsbs, "RESULTS", tmp_path / "results")
    lsbs.main(["parity", "--iterations", "4"])
    import json

    doc = json.loads(next((tmp_path / "results").glob("learning_parity_*.json")).read_text())
    runs = doc["runs"]
    assert runs["changed"]["overrides"] == ["trainer.update_precision=bf16"] and runs["as-is"]["overrides"] == []
    for run in runs.values():
        assert [s["mark_iterations"] for s in run["snapshots"]] == [2, 4]
        assert [s["env_steps"] for s in run["snapshots"]] == [80, 160]
        assert set(run["scores"]) == {"2", "4"}


def test_ours_train_from_fresh_starts_and_are_scored_from_both_start_modes(lsbs):
    """Ours train from fresh start states; the published start state and fresh ones both score."""
    assert lsbs.ours_config()["env"]["fresh_start_states"] is True
    assert "fresh_start_states" not in lsbs.published_config()["env"]
    same, fresh = lsbs.Evaluator(num_envs=4), lsbs.Evaluator(num_envs=4, fresh=True)
    assert same.trainer.env_wrapper.fresh_start_states is False
    assert fresh.trainer.env_wrapper.fresh_start_states is True
    starts = {}
    for name, ev in (("same", same), ("fresh", fresh)):
        ev.tagged("random", "random", episodes=1)  # plays: the envs are force-reset after
        x = ev.trainer.env_wrapper.cuda_data_manager.pull_data_from_device("loc_x")
        starts[name] = len({row.tobytes() for row in x})
    assert starts == {"same": 1, "fresh": 4}


def test_crossplay_command_plays_the_stored_runs_again(lsbs, monkeypatch, tmp_path):
    """``crossplay`` reads both frameworks' run.json and snapshots and writes the matrices, without training."""
    small = ["trainer.num_envs=4", "trainer.train_batch_size=40", "policy.tagger.model.fc_dims=[8,8]",
             "policy.runner.model.fc_dims=[8,8]"]
    cfg = lsbs.ours_config(small)
    for framework in ("ours", "reference"):  # the reference's snapshots stood in for by a second run of ours
        run = lsbs.train_ours(cfg, [1, 2], lsbs.SIDE / framework, by_iterations=True)
        run["snapshots"] = [{**s, "mark_s": s.pop("mark_iterations")} for s in run["snapshots"]]
        (lsbs.SIDE / framework / "run.json").write_text(json.dumps({"config": cfg, **run}))
    evaluator = lsbs.Evaluator
    monkeypatch.setattr(lsbs, "Evaluator", lambda num_envs=4, fresh=False: evaluator(4, fresh=fresh))
    monkeypatch.setattr(lsbs, "RESULTS", tmp_path / "results")
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    lsbs.main(["crossplay", "--budgets", "1", "2", "--sources", "ours-1s", "ours-2s", "reference-2s", "random"])
    doc = json.loads((tmp_path / "out" / "learning_side_by_side.json").read_text())
    assert len(doc["crossplay"]) == 16 and all(0.0 <= v["mean"] <= 1.0 and v["n"] == 8 for v in doc["crossplay"].values())
    assert doc["ours"]["snapshots"][-1]["mark_s"] == 2 and doc["budgets_s"] == [1, 2]
    fresh = ("ours-2s", "reference-2s", "published-1e9", "random")  # each framework at the longest budget
    assert doc["fresh_sources"] == list(fresh)
    assert set(doc["crossplay_fresh_starts"]) == {f"{t} | {r}" for t in fresh for r in fresh}


def test_policy_entropy_of_a_uniform_tagger_is_log_n(lsbs):
    """benchmarks/policy_entropy.py: the zero-head ("random") tagger's heads are uniform, so each
    head's entropy is log(n) and its largest probability 1/n; the model's forward is restored."""
    import policy_entropy

    ev = lsbs.Evaluator(num_envs=4, fresh=True)
    model = ev.trainer.policies["tagger"].model
    sizes = [head.out_features for head in model.policy_heads]
    heads = policy_entropy.head_stats(ev, "random")
    assert [h["entropy"] for h in heads] == pytest.approx([np.log(n) for n in sizes], rel=1e-5)
    assert [h["max_prob"] for h in heads] == pytest.approx([1 / n for n in sizes], rel=1e-5)
    published = policy_entropy.head_stats(ev, "published-1e9")
    assert all(0 <= h["entropy"] <= np.log(n) + 1e-5 for h, n in zip(published, sizes))
    assert "forward" not in vars(model)
    sys.modules.pop("policy_entropy", None)
