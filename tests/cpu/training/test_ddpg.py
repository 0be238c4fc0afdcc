"""DDPG (TrainerDDPG) on the cpu backend: 2.7.1's DDPG configs, n-step targets, frozen critic in the
actor step, target updates, OU noise statistics, checkpoints, and learning Pendulum."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch
import yaml

from tests.cpu.training.test_compat_configs import REFERENCE_CONFIGS
from tests.helpers.threads import torch_threads
from warp_drive.config import load_run_config
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.ddpg import DDPGNets, OUNoise, bootstrap_targets, ddpg_update, nstep_returns
from warp_drive.training.run.trainer271 import (
    TrainerDDPG, trainer_class_for,
)
from warp_drive.training.models.actor_critic import FullyConnectedActionValueCritic, FullyConnectedActor
from warp_drive.training.models.factory import ModelFactory

DDPG_CONFIGS = ("single_continuous_mountain_car", "single_pendulum")


def _pendulum_config(tmp_path, envs=64, steps=8, iters=10, seed=1, **policy):
    pol = {"to_train": True, "algorithm": "DDPG", "gamma": 0.95, "tau": 0.05, "clip_grad_norm": True, "max_grad_norm": 3,
           "num_minibatches": 4, "lr": {"actor": 2e-3, "critic": 3e-3},
           "model": {"actor": {"type": "fully_connected_actor", "fc_dims": [64, 64], "output_w": 2.0},
                     "critic": {"type": "fully_connected_action_value_critic", "fc_dims": [64, 64]},
                     "model_ckpt_filepath": {"actor": "", "critic": ""}}}
    pol.update(policy)
    return {"name": "single_pendulum", "env": {"episode_length": 200},
            "trainer": {"num_envs": envs, "train_batch_size": envs * steps, "num_episodes": iters * envs * steps // 200 + 1,
                        "n_step": 3, "env_backend": "cpu", "seed": seed},
            "policy": {"shared": pol}, "sampler": {"params": {"damping": 0.15, "stddev": 0.2, "scale": 1.0}},
            "saving": {"metrics_log_freq": 10**6, "model_params_save_freq": 10**6, "basedir": str(tmp_path)}}


def _pendulum(envs=64):
    from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv

    return EnvWrapper(ClassicControlPendulumEnv(episode_length=200, reset_pool_size=500, seed=1), num_envs=envs, env_backend="cpu")


# ------------------------------------------------------------------ configs
@pytest.mark.parametrize("name", DDPG_CONFIGS)
def test_reference_ddpg_configs_load_with_their_values(tmp_path, name):
    raw = REFERENCE_CONFIGS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    cfg = load_run_config(path)
    p = cfg.policy["shared"]
    assert (p.algorithm, p.tau, p.gamma, p.max_grad_norm, cfg.trainer.n_step) == ("DDPG", 0.05, 0.99, 3.0, 5)
    assert p.model.actor.type == "fully_connected_actor" and p.model.critic.fc_dims == (64, 64)
    assert p.model.model_ckpt_filepath == {"actor": "", "critic": ""}
    lr = raw["policy"]["shared"]["lr"]
    for role in ("actor", "critic"):
        expected = lr[role] if isinstance(lr[role], float) else tuple(tuple(float(x) for x in pair) for pair in lr[role])
        assert p.lr[role] == expected
    assert cfg.sampler.ou_noise == raw["sampler"]["params"]
    assert p.model.actor.output_w == raw["policy"]["shared"]["model"]["actor"].get("output_w")
    assert load_run_config(cfg.to_dict()) == cfg  # round trip
    assert trainer_class_for(cfg) is TrainerDDPG


@pytest.mark.parametrize("mutate,match", [
    (lambda r: r["policy"]["shared"].update(taw=0.1), "did you mean `policy.shared.tau`"),
    (lambda r: r["policy"]["shared"]["model"]["actor"].update(output_ww=1.0), "did you mean `policy.shared.model.actor.output_w`"),
    (lambda r: r["policy"]["shared"]["lr"].update(critc=0.1), "did you mean `policy.shared.lr.critic`"),
    (lambda r: r["policy"]["shared"].update(tau=0.0), "policy.shared.tau"),
    (lambda r: r["policy"]["shared"].update(normalize_return=True), "normalize_return"),
    (lambda r: r["policy"]["shared"]["model"]["critic"].update(output_w=2.0), "policy.shared.model.critic"),
    (lambda r: r["sampler"]["params"].update(damping=1.5), "sampler.params.damping"),
    (lambda r: r["policy"]["shared"].update(lr={"actor": 0.1}), r"`policy.shared.lr` lacks `critic`"),
    (lambda r: r["policy"]["shared"].update(model={"type": "fully_connected"}), "a DDPG policy has two networks"),
    (lambda r: r["policy"]["shared"]["model"].update(model_ckpt_filepath="x.pt"), "a DDPG policy loads two weight files"),
    (lambda r: r["policy"]["shared"]["model"].update(model_ckpt_filepath={"actr": "x.pt"}), "did you mean `policy.shared.model.model_ckpt_filepath.actor`"),
    (lambda r: r["policy"]["shared"].update(algorithm="DDPGG"), "did you mean DDPG"),
    (lambda r: r["trainer"].update(n_step=3) or r.update(sampler={}) or r["policy"].update(shared={"algorithm": "PPO"}),
     r"`trainer.n_step`=3: only DDPG policies read it \(.*n-step targets.*\); these policies are PPO, which do not "
     r"\(A2C and PPO bootstrap GAE over the whole rollout: tune `policy.<tag>.gae_lambda` instead\)"),
])
def test_bad_ddpg_configs_name_the_key(mutate, match):
    raw = copy.deepcopy(REFERENCE_CONFIGS["single_pendulum"])
    mutate(raw)
    with pytest.raises(ConfigError, match=match):
        load_run_config(raw)


def test_a_single_ddpg_model_section_builds_both_networks():
    """2.7.1 accepted one model section for both networks: each gets it, with its own default type,
    the critic without the actor's output scale; weight files come from the section's own key."""
    raw = copy.deepcopy(REFERENCE_CONFIGS["single_pendulum"])
    raw["policy"]["shared"]["model"] = {"fc_dims": [32, 16], "output_w": 2.0,
                                        "model_ckpt_filepath": {"critic": "c.pt"}}
    cfg = load_run_config(raw)
    model = cfg.policy["shared"].model
    assert (model.actor.type, model.actor.fc_dims, model.actor.output_w) == ("fully_connected_actor", (32, 16), 2.0)
    assert (model.critic.type, model.critic.fc_dims, model.critic.output_w) == (
        "fully_connected_action_value_critic", (32, 16), None)
    assert model.model_ckpt_filepath == {"actor": "", "critic": "c.pt"}
    assert "output_w" not in cfg.to_dict()["policy"]["shared"]["model"]["critic"]
    assert load_run_config(cfg.to_dict()) == cfg


def test_ddpg_config_trains_through_setup_trainer_and_train(tmp_path):
    """2.7.1's pendulum config, scaled down, goes to TrainerDDPG and writes 2.7.1's file names."""
    from warp_drive.training.scripts.example_training_script_pycuda import setup_trainer_and_train

    raw = copy.deepcopy(REFERENCE_CONFIGS["single_pendulum"])
    raw["env"].update(episode_length=10, reset_pool_size=20)
    raw["trainer"].update(num_envs=4, train_batch_size=40, num_episodes=8, seed=0)
    raw["saving"].update(basedir=str(tmp_path), metrics_log_freq=1)
    setup_trainer_and_train(raw, results_directory="run", verbose=False)
    run = tmp_path / raw["saving"]["name"] / raw["saving"]["tag"] / "run"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["iteration"] == 2 and np.isfinite(rows[-1]["shared/critic_loss"])
    assert sorted(p.name for p in run.glob("*.state_dict")) == ["shared_actor_80.state_dict", "shared_critic_80.state_dict"]


def test_the_one_trainer_trains_ddpg_and_trainer_ddpg_refuses_other_algorithms_and_discrete(tmp_path):
    """DDPG runs through Trainer.train (one loop for every algorithm); TrainerDDPG keeps 2.7.1's
    rule (DDPG policies only, Box actions)."""
    from tests.helpers.toy_env import ToyLine
    from warp_drive.training.trainers.trainer_ddpg import TrainerDDPG
    from warp_drive.training.trainer import Trainer

    cfg = _pendulum_config(tmp_path)
    t = Trainer(_pendulum(), cfg, verbose=False)
    before = {k: v.clone() for k, v in t.policies["shared"].nets.critic.state_dict().items()}
    t.train(2)
    assert t.iteration == 2 and type(t.policies["shared"]).__name__ == "DDPGPolicy"
    assert any(not torch.equal(before[k], v) for k, v in t.policies["shared"].nets.critic.state_dict().items())
    ppo = {**cfg, "trainer": {**cfg["trainer"], "n_step": 1}, "sampler": {},
           "policy": {"shared": {"to_train": True, "algorithm": "PPO", "model": {"fc_dims": [8]}}}}
    with pytest.raises(ConfigError, match="not DDPG"):
        TrainerDDPG(_pendulum(), ppo, verbose=False)
    toy = EnvWrapper(ToyLine(num_agents=2, episode_length=20, goal=6.0), num_envs=64, env_backend="cpu")
    cfg["name"] = "toy"
    with pytest.raises(ConfigError, match="continuous"):
        TrainerDDPG(toy, cfg, verbose=False)


# ------------------------------------------------------------------ algorithm pieces
def _hand_targets(r, done, trunc, gamma, n, q_next):
    """Per step: sum of discounted rewards up to n steps, cut at episode ends and the rollout end,
    + gamma^m * Q'(obs after step t+m-1) unless step t+m-1 terminated. q_next[k] = Q' after step k."""
    B = len(r)
    out = []
    for t in range(B):
        g, y = 1.0, 0.0
        for k in range(n):
            y += g * r[t + k]
            g *= gamma
            k_last = t + k
            if done[k_last] and not trunc[k_last]:
                g = 0.0
                break
            if trunc[k_last] or k_last == B - 1 or k == n - 1:
                break
        out.append(y + g * q_next[k_last])
    return np.array(out)


@pytest.mark.parametrize("n", [1, 3, 5])
def test_nstep_targets_match_a_hand_computation(n):
    rng = np.random.default_rng(n)
    B, gamma = 9, 0.9
    r = rng.normal(size=B).astype(np.float32)
    done = np.zeros(B, bool)
    trunc = np.zeros(B, bool)
    done[3] = True  # terminal
    done[6] = trunc[6] = True  # time limit
    q_next = rng.normal(size=B).astype(np.float32)
    R, last, coef = nstep_returns(torch.tensor(r)[:, None, None], torch.tensor(done & ~trunc)[:, None],
                                  torch.tensor(trunc)[:, None], gamma, n)
    got = (R[:, 0, 0] + coef[:, 0] * torch.tensor(q_next)[last[:, 0]]).numpy()
    np.testing.assert_allclose(got, _hand_targets(r, done, trunc, gamma, n, q_next), rtol=1e-5, atol=1e-6)
    if n == 3:  # spot checks written out
        assert last[0, 0] == 2 and coef[0, 0] == pytest.approx(gamma ** 3)
        assert last[2, 0] == 3 and coef[2, 0] == 0.0  # cut at the terminal step, no bootstrap
        assert last[5, 0] == 6 and coef[5, 0] == pytest.approx(gamma ** 2)  # time limit: bootstrap
        assert last[8, 0] == 8 and coef[8, 0] == pytest.approx(gamma)  # rollout end: bootstrap from s_B


def _nets(seed=0, obs=3, d=1):
    torch.manual_seed(seed)
    actor, critic = FullyConnectedActor((obs,), d, (16,), output_w=2.0), FullyConnectedActionValueCritic((obs,), d, (16,))
    ta, tc = copy.deepcopy(actor), copy.deepcopy(critic)
    return DDPGNets(actor, critic, ta, tc, torch.optim.Adam(actor.parameters(), 1e-2), torch.optim.Adam(critic.parameters(), 1e-2))


def test_actor_step_leaves_the_critic_gradient_alone_and_targets_move_by_tau():
    nets = _nets()
    torch.manual_seed(1)
    obs, actions, y = torch.randn(32, 3), torch.rand(32, 1) * 4 - 2, torch.randn(32)
    # expected critic gradient: from the critic loss alone
    ref = copy.deepcopy(nets.critic)
    torch.nn.functional.mse_loss(ref(obs, actions), y).backward()
    expected = [p.grad.clone() for p in ref.parameters()]
    before_t = [p.clone() for p in nets.target_critic.parameters()]
    before_ta = [p.clone() for p in nets.target_actor.parameters()]
    ddpg_update(nets, obs, actions, y, tau=0.25, max_grad_norm=None)
    for p, g in zip(nets.critic.parameters(), expected):
        torch.testing.assert_close(p.grad, g)  # the actor's loss added nothing
        assert p.requires_grad
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in nets.actor.parameters())
    for t, b, s in zip(nets.target_critic.parameters(), before_t, nets.critic.parameters()):
        torch.testing.assert_close(t, 0.75 * b + 0.25 * s)
    for t, b, s in zip(nets.target_actor.parameters(), before_ta, nets.actor.parameters()):
        torch.testing.assert_close(t, 0.75 * b + 0.25 * s)
    assert not any(p.requires_grad for p in nets.target_critic.parameters())


def test_bootstrap_uses_the_target_networks():
    nets = _nets()
    boot = torch.randn(5, 3)
    with torch.no_grad():
        for p in nets.actor.parameters():
            p.add_(1.0)  # online nets differ from the targets now
        expected = 1.0 + 0.5 * nets.target_critic(boot, nets.target_actor(boot))
    torch.testing.assert_close(bootstrap_targets(nets, torch.ones(5), torch.full((5,), 0.5), boot), expected)


def test_ou_noise_std_and_autocorrelation_match_the_ou_formulas():
    damping, stddev = 0.15, 0.2
    ou = OUNoise((20000,), torch.device("cpu"), torch.Generator().manual_seed(0))
    xs = torch.stack([ou.step(damping, stddev).clone() for _ in range(160)])[100:]  # stationary after ~100 steps
    theory_std = stddev / (1 - (1 - damping) ** 2) ** 0.5
    assert xs.std(1).mean().item() == pytest.approx(theory_std, rel=0.02)
    cov10 = ((xs[:-10] - xs[:-10].mean(1, keepdim=True)) * (xs[10:] - xs[10:].mean(1, keepdim=True))).mean(1).mean().item()
    assert cov10 == pytest.approx(theory_std ** 2 * (1 - damping) ** 10, rel=0.05)
    mu = torch.zeros(20000)
    torch.testing.assert_close(ou.perturb(mu, damping, stddev, 0.0), mu)  # scale 0: deterministic


def test_factory_builds_ddpg_models_with_2_7_1_parameter_names():
    from warp_drive.config.ddpg import DDPGPolicyConfig
    from warp_drive.training.models.action_spec import ActionSpec

    pc = DDPGPolicyConfig.from_dict(REFERENCE_CONFIGS["single_pendulum"]["policy"]["shared"], "policy.shared")
    f = ModelFactory()
    actor = f.build(pc.model.actor, (3,), ActionSpec(gaussian_dim=1))
    critic = f.build(pc.model.critic, (3,), ActionSpec(gaussian_dim=1))
    assert sorted(actor.state_dict()) == ["fc.0.0.bias", "fc.0.0.weight", "fc.1.0.bias", "fc.1.0.weight",
                                          "policy_head.bias", "policy_head.weight"]
    assert sorted(critic.state_dict())[-2:] == ["vf_head.bias", "vf_head.weight"]
    assert critic.fc["0"][0].in_features == 4  # obs + action
    a = actor(torch.randn(7, 3) * 100)
    assert a.shape == (7, 1) and a.abs().max() <= 2.0  # output_w = 2
    assert critic(torch.randn(2, 5, 3), [a[:5][None].expand(2, 5, 1)]).shape == (2, 5)


# ------------------------------------------------------------------ trainer
def test_rollout_stays_on_the_device_and_fills_consistent_buffers(tmp_path):
    t = TrainerDDPG(_pendulum(8), _pendulum_config(tmp_path, envs=8, steps=5), verbose=False)
    t.train(1)
    b = t.policies["shared"].buffers
    np.testing.assert_allclose(b.obs[1:].numpy(), b.next_obs[:-1].numpy())  # no resets within 5 steps of T=200
    dm = t.env_wrapper.cuda_data_manager
    np.testing.assert_allclose(b.next_obs[-1].numpy(), dm.pull_data_from_device("observations"))
    np.testing.assert_allclose(b.actions[-1, :, :, 0].numpy(), dm.pull_data_from_device("sampled_actions")[:, :, 0])
    targets = t.policies["shared"].targets
    assert (targets.last[-1] == 4).all() and targets.coef[-1].allclose(torch.tensor(0.95))


def test_checkpoints_round_trip(tmp_path):
    cfg = _pendulum_config(tmp_path, envs=8, steps=5)
    t1 = TrainerDDPG(_pendulum(8), cfg, verbose=False, results_dir="a")
    t1.train(3)
    files = t1.save_model_checkpoint(0)
    assert sorted(p.name for p in files) == ["shared_actor_120.state_dict", "shared_critic_120.state_dict"]
    t2 = TrainerDDPG(_pendulum(8), cfg, verbose=False, results_dir="b")
    t2.load_model_checkpoint({"shared": {"actor": str(files[0]), "critic": str(files[1])}})
    assert t2.current_timestep["shared"] == 120
    for role in ("actor", "critic"):
        for a, b, tb in zip(getattr(t1.policies["shared"].nets, role).parameters(),
                            getattr(t2.policies["shared"].nets, role).parameters(),
                            getattr(t2.policies["shared"].nets, "target_" + role).parameters()):
            torch.testing.assert_close(a, b)
            torch.testing.assert_close(b, tb)  # targets start at the loaded weights
    # via the config's model_ckpt_filepath
    cfg2 = copy.deepcopy(cfg)
    cfg2["policy"]["shared"]["model"]["model_ckpt_filepath"] = {"actor": str(files[0]), "critic": str(files[1])}
    assert TrainerDDPG(_pendulum(8), cfg2, verbose=False).current_timestep["shared"] == 120
    bad = tmp_path / "shared_critic_40.state_dict"
    bad.write_bytes(files[1].read_bytes())
    with pytest.raises(ConfigError, match="timestep"):
        t2.load_model_checkpoint({"shared": {"actor": str(files[0]), "critic": str(bad)}})
    # full state: an identical continuation
    path = t1.save_checkpoint(tmp_path / "full.pt")
    t1.train(2)
    t3 = TrainerDDPG(_pendulum(8), cfg, verbose=False, results_dir="c")
    t3.load_checkpoint(path)
    t3.train(2)
    for a, b in zip(t1.policies["shared"].nets.actor.parameters(), t3.policies["shared"].nets.actor.parameters()):
        torch.testing.assert_close(a, b)


def test_ddpg_learns_pendulum_and_beats_random(tmp_path):
    """Pendulum (T = 200): a random or untrained policy returns about -1200. 700 iterations of
    64 envs x 8 steps (4 gradient steps each; about 20 s on one core) improve it clearly."""
    with torch_threads(1):  # restored after: later tests keep the default thread count
        t = TrainerDDPG(_pendulum(64), _pendulum_config(tmp_path, iters=700), verbose=False)
        before = float(t.evaluate()["shared"]["episode_return"].mean())
        t.train()
        after = float(t.evaluate()["shared"]["episode_return"].mean())
    assert before < -1000 and after > before + 300, (before, after)


def test_checkpoints_of_the_former_ddpg_trainer_still_load(tmp_path):
    """TrainerDDPG wrote format "ddpg-1" before DDPG joined the one loop; such a file resumes:
    networks, optimizers, OU state, timestep, iteration and env replicas."""
    cfg = _pendulum_config(tmp_path, envs=8, steps=5)
    t1 = TrainerDDPG(_pendulum(8), cfg, verbose=False, results_dir="a")
    t1.train(2)
    p = t1.policies["shared"]
    legacy = {
        "format": "ddpg-1", "iteration": t1.iteration, "seed": t1.seed, "config": t1.config.to_dict(),
        "policies": {"shared": {"nets": {k: getattr(p.nets, k).state_dict() for k in
                                         ("actor", "critic", "target_actor", "target_critic", "actor_optimizer",
                                          "critic_optimizer")},
                                "ou": p.ou.state.clone() + 0.5, "timestep": p.timestep,
                                "episode_carry": (p.stats.running_return.clone(), p.stats.running_length.clone())}},
        "generator": t1.generator.get_state(), "data_store": t1.env_wrapper.cuda_data_manager.state_dict(),
        "env_resetter": t1.env_wrapper.env_resetter.state_dict(), "started": True, "perf": dict(t1.perf),
    }
    torch.save(legacy, tmp_path / "old.pt")
    t2 = TrainerDDPG(_pendulum(8), cfg, verbose=False, results_dir="b")
    t2.load_checkpoint(tmp_path / "old.pt")
    q = t2.policies["shared"]
    assert t2.iteration == 2 and q.timestep == p.timestep == 80
    for role in ("actor", "critic", "target_actor", "target_critic"):
        for a, b in zip(getattr(p.nets, role).parameters(), getattr(q.nets, role).parameters()):
            torch.testing.assert_close(a, b)
    torch.testing.assert_close(q.ou.state, p.ou.state + 0.5)
    np.testing.assert_array_equal(t2.env_wrapper.cuda_data_manager.pull_data_from_device("observations"),
                                  t1.env_wrapper.cuda_data_manager.pull_data_from_device("observations"))
    t2.train(1)
    assert t2.iteration == 3
