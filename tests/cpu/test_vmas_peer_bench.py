"""benchmarks/bench_vmas_peer.py: its PPO pieces are correct without VMAS (GAE against a plain loop, the
update moves the policy toward advantaged actions, minibatches repeat collected rows), its configs load
into our run config, and its quick mode runs both sides on the CPU when the staged VMAS wheels
(.device/peer/, not in the repository) can be installed offline."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def peer(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_vmas_peer as mod

    return mod


def test_grid_spec_parses_and_rejects_bad_items(peer):
    cfgs = peer.parse_grid("100x10+100@250, 4096x3+1@100")
    assert [(c.envs, c.taggers, c.runners, c.steps_per_env) for c in cfgs] == [(100, 10, 100, 250), (4096, 3, 1, 100)]
    assert cfgs[0].train_batch_size == 25_000 and cfgs[0].agents == 110 and cfgs[0].observed == 10
    assert cfgs[1].observed == 3  # K is capped at N - 1
    for bad in ("100x10@250", "0x1+1@5", "ax1+1@5"):
        with pytest.raises(SystemExit, match="ENVSxTAGGERS"):
            peer.parse_grid(bad)


def test_default_configs_are_the_briefed_sizes(peer):
    sizes = {(c.envs, c.taggers, c.runners) for c in peer.CONFIGS.values()}
    assert sizes == {(100, 10, 100), (1000, 5, 100), (4096, 3, 1)}
    assert peer.CONFIGS["tutorial_100envs"].train_batch_size == 25_000


def test_overrides_give_our_trainer_the_matched_ppo_config(peer):
    cfg = peer.PeerConfig("t", 8, 2, 5, 6)
    run = peer.our_run_config(cfg, "cpu")
    assert (run.env["num_taggers"], run.env["num_runners"], run.env["num_other_agents_observed"]) == (2, 5, 6)
    assert (run.trainer.num_envs, run.trainer.train_batch_size, run.trainer.env_backend) == (8, 48, "cpu")
    for team in ("runner", "tagger"):
        pol = run.policy[team]
        assert pol.algorithm == "PPO"
        assert (pol.num_epochs, pol.num_minibatches) == (peer.PPO["num_epochs"], peer.PPO["num_minibatches"])
        assert (pol.gamma, pol.gae_lambda, pol.clip_param) == (0.98, 0.95, 0.2)
        assert pol.lr == peer.PPO["lr"][team] and list(pol.model.fc_dims) == peer.PPO["fc_dims"]
    assert peer.our_obs_dim(cfg) == 7 * 6 + 1


def test_vmas_observation_lengths(peer):
    assert peer.vmas_obs_dims(10, 100) == {"tagger": 422, "runner": 420}
    assert peer.vmas_obs_dims(3, 1) == {"tagger": 12, "runner": 10}
    assert peer.vmas_obs_dims(3, 1, landmarks=2) == {"tagger": 16, "runner": 14}


def test_gae_matches_a_plain_loop(peer):
    g = torch.Generator().manual_seed(0)
    T, E, n = 5, 3, 2
    rew, val = torch.randn(T, E, n, generator=g), torch.randn(T, E, n, generator=g)
    done = torch.zeros(T, E, dtype=torch.bool)
    done[1, 0] = done[4, 2] = True
    last = torch.randn(E, n, generator=g)
    adv, ret = peer.gae(rew, val, done, last, 0.9, 0.8)
    for e in range(E):
        for i in range(n):
            running, nxt = 0.0, float(last[e, i])
            for t in reversed(range(T)):
                live = 0.0 if done[t, e] else 1.0
                delta = float(rew[t, e, i]) + 0.9 * nxt * live - float(val[t, e, i])
                running = delta + 0.9 * 0.8 * live * running
                assert adv[t, e, i].item() == pytest.approx(running, abs=1e-5)
                nxt = float(val[t, e, i])
    torch.testing.assert_close(ret, adv + val)


def test_sampled_actions_follow_the_logits(peer):
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 50.0, 0.0], [2.0, 0.0, 0.0]]).repeat(2000, 1)
    actions, logp = peer.sample_actions(logits)
    torch.testing.assert_close(logp, torch.log_softmax(logits, -1).gather(-1, actions[:, None]).squeeze(-1))
    assert bool((actions[0::2] == 1).all())
    share = (actions[1::2] == 0).float().mean().item()  # p = e^2 / (e^2 + 2) = 0.787
    assert abs(share - 0.787) < 0.03


@pytest.mark.parametrize("num_samples", [48, 200])  # 48: plain PPO on the rows; 200: rows repeated
def test_ppo_update_moves_the_policy_toward_advantaged_actions(peer, num_samples):
    torch.manual_seed(0)
    net = peer.TeamPolicy(4, 3, [16])
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    obs = torch.randn(48, 4)
    actions = torch.arange(48) % 3
    with torch.no_grad():
        before = torch.softmax(net(obs)[0], -1)[:, 0].mean().item()
        log_probs = torch.log_softmax(net(obs)[0], -1).gather(-1, actions[:, None]).squeeze(-1)
    batch = {"obs": obs, "actions": actions, "log_probs": log_probs,
             "advantages": torch.where(actions == 0, 1.0, -0.5), "returns": torch.ones(48)}
    stats = peer.ppo_update(net, opt, batch, num_samples, epochs=4, minibatches=2)
    with torch.no_grad():
        after = torch.softmax(net(obs)[0], -1)[:, 0].mean().item()
    assert after > before + 0.05
    assert all(torch.isfinite(torch.tensor(v)) for v in stats.values())


def test_timed_repeats_runs_warmup_calibration_and_repeats(peer):
    calls = []
    runs = peer.timed_repeats(lambda: calls.append(1), torch.device("cpu"), seconds=0.06, repeats=3, warmup=2)
    assert len(runs) == 3 and all(n >= 1 and s >= 0 for n, s in runs)
    assert len(calls) == 2 + 1 + sum(n for n, _ in runs)
    # a call slower than the whole cap: one call per repeat, and only the repeats that fit in twice the cap
    assert peer.timed_repeats(lambda: time.sleep(0.05), torch.device("cpu"), seconds=0.03, repeats=3, warmup=0) \
        == [(1, pytest.approx(0.05, abs=0.04))]
    summary = peer.rate_summary([(2, 1.0), (4, 1.0), (3, 1.0)], envs=10, agents=5)
    assert summary["env_steps_per_s"] == 30 and summary["agent_steps_per_s"] == 150


@pytest.fixture()
def vmas_installed(peer, tmp_path, monkeypatch):
    """vmas from the staged wheels, installed offline into tmp_path; the imports are undone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    try:
        yield peer.ensure_vmas(site=tmp_path / "site")
    except SystemExit as err:
        pytest.skip(f"VMAS is not importable here and cannot be installed from .device/peer/: {str(err)[:200]}")
    finally:
        for name in set(sys.modules) - before:
            if name.split(".")[0] in ("vmas", "gym", "gym_notices"):
                del sys.modules[name]


def test_quick_mode_runs_both_sides_on_cpu(peer, vmas_installed, tmp_path):
    payload = peer.main(["--device", "cpu", "--quick", "--results-dir", str(tmp_path)])
    written = json.loads((tmp_path / "vmas_peer_quick_cpu.json").read_text())
    assert written["vmas_version"] == peer.VMAS_VERSION == payload["vmas_version"]
    row = written["configs"][peer.QUICK.name]
    for part in ("simulator", "ppo"):
        for side in ("vmas", "ours"):
            assert "error" not in row[part][side], row[part][side]
            assert row[part][side]["env_steps_per_s"] > 0
        assert row[part]["ratio_env_steps_per_s"] > 0
    vmas_ppo = row["ppo"]["vmas"]
    assert 1 <= vmas_ppo["rollout_steps_measured"] <= peer.QUICK.steps_per_env
    full = vmas_ppo["rollout_steps_measured"] == peer.QUICK.steps_per_env
    assert (vmas_ppo["measured"] == "full iteration") == full
    assert vmas_ppo["obs_dims"] == peer.vmas_obs_dims(peer.QUICK.taggers, peer.QUICK.runners)
    assert vmas_ppo["update_samples"] == {"tagger": 24 * 2, "runner": 24 * 3}
    assert row["simulator"]["ours"]["obs_dim"] == peer.our_obs_dim(peer.QUICK)
    assert "simple_tag" in written["games_differ"] and str(peer.our_obs_dim(peer.QUICK)) in written["games_differ"]
