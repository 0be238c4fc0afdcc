"""SAC's pieces on the cpu backend, one at a time: the config section and its errors, the device
replay (wrap-around, draws, state), one gradient step (critic loss falls on a fixed batch, frozen
critics in the actor step, the temperature, Polyak targets) and the policy behind the seam (greedy
acting, bounds, replay pushes at terminations and truncations, driver hooks, state round trip)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from warp_drive.vocab.constants import Constants
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.algorithms.base import BuildContext, UpdateContext
from warp_drive.training.algorithms.sac import ReplayBuffer, SACPolicyConfig, build_policy
from warp_drive.training.algorithms.sac.update import SACNets, StepHooks, StepSettings, TwinQ, sac_step
from warp_drive.training.models.actor_critic import FullyConnectedActionValueCritic
from warp_drive.training.models.factory import ModelFactory
from warp_drive.training.models.squashed_gaussian import SquashedGaussianActor
from warp_drive.training.engine.rollout import policy_obs

SMALL_MODEL = {"actor": {"fc_dims": [32, 32]}, "critic": {"fc_dims": [32, 32]}}


def _section(**kw):
    d = {"algorithm": "SAC", "to_train": True, "model": copy.deepcopy(SMALL_MODEL)}
    d.update(kw)
    return d


# ------------------------------------------------------------------ config
def test_defaults_and_round_trip():
    c = SACPolicyConfig.from_dict({"algorithm": "sac"}, "policy.shared")
    assert (c.algorithm, c.gamma, c.tau, c.batch_size, c.buffer_size, c.learning_starts) == ("SAC", 0.99, 0.005, 256, 10**6, 100)
    assert c.lr == {"actor": 3e-4, "critic": 3e-4, "alpha": 3e-4} and c.alpha is None and c.target_entropy is None
    assert (c.num_minibatches, c.to_train, c.clip_grad_norm) == (1, False, False)
    assert c.model.actor.type == "squashed_gaussian_actor" and c.model.critic.type == "fully_connected_action_value_critic"
    assert c.model.model_ckpt_filepath == {"actor": "", "critic": ""}
    assert c.gradient_steps_for(640) == 640
    c2 = SACPolicyConfig.from_dict(_section(lr={"actor": 1e-3, "critic": [[0, 1e-3], [10, 0]]}, alpha=0.2, target_entropy=-3,
                                            gradient_steps=7, model={"model_ckpt_filepath": {"actor": "a.pt"}}), "p")
    assert c2.lr["alpha"] == c2.lr["critic"] == ((0.0, 1e-3), (10.0, 0.0)) and (c2.alpha, c2.target_entropy) == (0.2, -3.0)
    assert c2.gradient_steps_for(640) == 7 and c2.model.model_ckpt_filepath == {"actor": "a.pt", "critic": ""}
    for cfg in (c, c2):
        assert SACPolicyConfig.from_dict(cfg.to_dict(), "p") == cfg
    assert SACPolicyConfig.from_dict(_section(replay_ratio=0.25), "p").gradient_steps_for(10) == 2


@pytest.mark.parametrize("section,match", [
    (_section(batchsize=64), r"unknown key `policy.shared.batchsize`; did you mean `policy.shared.batch_size`"),
    (_section(gamma=0.0), r"`policy.shared.gamma`=0.0 is out of range"),
    (_section(tau=1.5), r"`policy.shared.tau`=1.5 is out of range"),
    (_section(lr={"actor": 1e-3}), r"`policy.shared.lr` lacks `critic`"),
    (_section(lr={"actor": 1e-3, "critic": 1e-3, "alfa": 1e-3}), r"did you mean `policy.shared.lr.alpha`"),
    (_section(lr=-1.0), r"`policy.shared.lr`=-1.0 must be > 0"),
    (_section(alpha="autox"), r"`policy.shared.alpha`='autox' must be `auto` or a number"),
    (_section(alpha=-0.1), r"`policy.shared.alpha`=-0.1 must be >= 0"),
    (_section(target_entropy="high"), r"`policy.shared.target_entropy`='high' must be `auto` or a number"),
    (_section(initial_alpha=0), r"`policy.shared.initial_alpha`=0.0 must be > 0"),
    (_section(num_minibatches=4), r"`policy.shared.num_minibatches`=4: SAC draws `batch_size`"),
    (_section(gradient_steps=0), r"`policy.shared.gradient_steps`=0 is too small"),
    (_section(buffer_size=0), r"`policy.shared.buffer_size`=0 is too small"),
    (_section(batch_size=1.5), r"`policy.shared.batch_size`=1.5 must be an integer"),
    (_section(learning_starts=-1), r"`policy.shared.learning_starts`=-1 is too small"),
    (_section(replay_ratio=0), r"`policy.shared.replay_ratio`=0.0 must be > 0"),
    (_section(noise_correlation=1.0), r"`policy.shared.noise_correlation`=1.0 is out of range; expected 0 <= rho < 1"),
    (_section(to_train="yes"), r"`policy.shared.to_train`='yes' must be a boolean"),
    (_section(model={"actr": {}}), r"did you mean `policy.shared.model.actor`"),
    (_section(model={"actor": {"fc_dim": [3]}}), r"did you mean `policy.shared.model.actor.fc_dims`"),
    (_section(model={"model_ckpt_filepath": "x.pt"}), r"`policy.shared.model.model_ckpt_filepath`='x.pt': a SAC policy loads two"),
    (_section(algorithm="PPO"), r"reads SAC sections only"),
])
def test_bad_sections_name_the_key_and_the_fix(section, match):
    with pytest.raises(ConfigError, match=match):
        SACPolicyConfig.from_dict(section, "policy.shared")


# ------------------------------------------------------------------ replay
def _rows(start, n, obs=2, d=1):
    x = torch.arange(start, start + n, dtype=torch.float32)
    return {"obs": x[:, None].expand(n, obs).clone(), "actions": x[:, None].expand(n, d) / 100, "rewards": x,
            "next_obs": x[:, None].expand(n, obs) + 0.5, "not_done": torch.ones(n)}


def test_replay_ring_wraps_around_and_keeps_the_newest_rows():
    r = ReplayBuffer(5, (2,), 1, "cpu")
    r.push(_rows(0, 3))
    assert (len(r), r.position, r.pushed) == (3, 3, 3)
    r.push(_rows(3, 4))  # rows 3, 4 then 5, 6 over 0, 1
    assert (len(r), r.position, r.pushed) == (5, 2, 7)
    assert r.data["rewards"].tolist() == [5, 6, 2, 3, 4]
    assert torch.equal(r.data["next_obs"][:, 0], r.data["rewards"] + 0.5)
    r.push(_rows(10, 12))  # more than the capacity: the last 5 of them
    assert sorted(r.data["rewards"].tolist()) == [17, 18, 19, 20, 21] and (len(r), r.pushed) == (5, 19)


def test_replay_draws_are_uniform_over_filled_rows_and_follow_the_generator():
    r = ReplayBuffer(100, (2,), 1, "cpu")
    r.push(_rows(0, 10))
    a = r.sample(4000, torch.Generator().manual_seed(3))
    b = r.sample(4000, torch.Generator().manual_seed(3))
    assert all(torch.equal(a[k], b[k]) for k in a) and a["obs"].shape == (4000, 2) and a["actions"].shape == (4000, 1)
    counts = np.bincount(a["rewards"].long().numpy(), minlength=10)
    assert len(counts) == 10 and counts.min() > 300  # only the 10 filled rows, each about 400 times
    assert torch.equal(a["obs"][:, 0], a["rewards"])  # rows stay whole
    with pytest.raises(ConfigError, match="empty"):
        ReplayBuffer(3, (2,), 1, "cpu").sample(1)


def test_replay_state_round_trip_and_shape_errors():
    r = ReplayBuffer(6, (2,), 1, "cpu")
    r.push(_rows(0, 8))
    fresh = ReplayBuffer(6, (2,), 1, "cpu")
    fresh.load_state_dict(r.state_dict())
    assert (fresh.position, fresh.size, fresh.pushed) == (r.position, r.size, r.pushed)
    assert all(torch.equal(fresh.data[k], r.data[k]) for k in r.data)
    with pytest.raises(ConfigError, match="buffer_size"):
        ReplayBuffer(7, (2,), 1, "cpu").load_state_dict(r.state_dict())
    bad = _rows(0, 3)
    bad["obs"] = torch.zeros(3, 5)
    with pytest.raises(DataShapeError, match="'obs'"):
        r.push(bad)
    with pytest.raises(DataShapeError, match="missing"):
        r.push({"obs": torch.zeros(3, 2)})


# ------------------------------------------------------------------ one gradient step
def _nets(seed=0, obs=3, d=1, width=32):
    torch.manual_seed(seed)
    actor = SquashedGaussianActor((obs,), d, (width, width))
    critic = TwinQ(FullyConnectedActionValueCritic((obs,), d, (width, width)), FullyConnectedActionValueCritic((obs,), d, (width, width)))
    return SACNets(actor, critic, copy.deepcopy(critic), torch.nn.Parameter(torch.zeros(())))


def _adam(nets, lr=1e-3):
    return {"actor": torch.optim.Adam(nets.actor.parameters(), lr), "critic": torch.optim.Adam(nets.critic.parameters(), lr),
            "alpha": torch.optim.Adam([nets.log_alpha], lr)}


def _batch(n=128, obs=3, d=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(n, obs, generator=g), "actions": torch.rand(n, d, generator=g) * 2 - 1,
            "rewards": torch.randn(n, generator=g), "next_obs": torch.randn(n, obs, generator=g),
            "not_done": (torch.rand(n, generator=g) > 0.1).float()}


def test_critic_loss_falls_on_a_fixed_batch():
    """gamma = 0: the target is the reward itself, so one step must lower the critic loss on the same
    batch; with gamma = 0.9 and a smooth reward, many steps on it fit the soft Bellman target."""
    def critic_loss(nets, batch):
        with torch.no_grad():
            q1, q2 = nets.critic(batch["obs"], batch["actions"])
            return float(0.5 * ((q1 - batch["rewards"]).pow(2).mean() + (q2 - batch["rewards"]).pow(2).mean()))

    nets, batch = _nets(), _batch()
    batch["rewards"] = batch["obs"][:, 0] - batch["actions"][:, 0] ** 2
    g = torch.Generator().manual_seed(0)
    before = critic_loss(nets, batch)
    m = sac_step(nets, batch, StepSettings(gamma=0.0, tau=0.005, target_entropy=-1.0), StepHooks(_adam(nets, 1e-3)), g)
    assert float(m["critic_loss"]) == pytest.approx(before, rel=1e-5) and critic_loss(nets, batch) < before
    hooks, settings = StepHooks(_adam(nets, 3e-3)), StepSettings(gamma=0.9, tau=0.005, target_entropy=-1.0)
    losses = [float(sac_step(nets, batch, settings, hooks, g)["critic_loss"]) for _ in range(100)]
    assert losses[-1] < 0.2 * losses[0], losses[::10]


def test_one_step_metrics_frozen_critics_in_the_actor_step_and_polyak_targets():
    nets, batch = _nets(), _batch()
    before = copy.deepcopy(nets)
    opt = _adam(nets)
    opt["critic"] = torch.optim.SGD(nets.critic.parameters(), lr=0.0)  # the critic moves only through its own step
    m = sac_step(nets, batch, StepSettings(0.9, 1.0, -1.0), StepHooks(opt), torch.Generator().manual_seed(0))
    assert set(m) == {"critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean", "target_mean",
                      "grad_norm_critic", "grad_norm_actor"}
    assert all(v.dim() == 0 and torch.isfinite(v) for v in m.values())
    for p, q in zip(nets.critic.parameters(), before.critic.parameters()):
        assert torch.equal(p, q)  # the actor's loss did not step the critics
    for p, q in zip(nets.target_critic.parameters(), nets.critic.parameters()):
        assert torch.equal(p, q)  # tau = 1: targets = critics
    assert any(not torch.equal(p, q) for p, q in zip(nets.actor.parameters(), before.actor.parameters()))
    small = _nets()
    start = copy.deepcopy(small.target_critic)
    sac_step(small, batch, StepSettings(0.9, 0.25, -1.0), StepHooks(_adam(small)), torch.Generator().manual_seed(0))
    for t, s, o in zip(small.target_critic.parameters(), small.critic.parameters(), start.parameters()):
        torch.testing.assert_close(t, 0.75 * o + 0.25 * s)  # Polyak with tau = 0.25


def test_the_temperature_falls_when_the_entropy_is_above_target_and_stays_when_fixed():
    nets = _nets()
    hooks = StepHooks(_adam(nets, 1e-2))
    for _ in range(5):  # a wide policy (log_std near 0): entropy well above -10
        m = sac_step(nets, _batch(), StepSettings(0.9, 0.005, target_entropy=-10.0), hooks, torch.Generator().manual_seed(0))
    assert float(nets.log_alpha.detach()) < -0.04 and float(m["alpha"]) < 1.0
    fixed = _nets()
    m = sac_step(fixed, _batch(), StepSettings(0.9, 0.005, -1.0, fixed_alpha=0.2), StepHooks(_adam(fixed)),
                 torch.Generator().manual_seed(0))
    assert float(fixed.log_alpha.detach()) == 0.0 and float(m["alpha"]) == pytest.approx(0.2) and float(m["alpha_loss"]) == 0.0


# ------------------------------------------------------------------ the policy behind the seam
def _pendulum(envs):
    from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv

    wrapper = EnvWrapper(ClassicControlPendulumEnv(episode_length=200, reset_pool_size=500, seed=1), num_envs=envs,
                         env_backend="cpu")
    wrapper.reset_all_envs()  # pushes the env's arrays
    return wrapper


def _ctx(wrapper, steps=4, seed=0, **section):
    dm = wrapper.cuda_data_manager
    names = [Constants.OBSERVATIONS]
    pc = SACPolicyConfig.from_dict(_section(**section), "policy.shared")
    return BuildContext(tag="shared", agent_ids=[0], config=pc, run_config=None, env=wrapper.env, data_manager=dm,
                        sampler=None, obs_names=names, steps_per_iter=steps, num_envs=wrapper.n_envs, num_agents=wrapper.n_agents,
                        device=torch.device("cpu"), generator=torch.Generator().manual_seed(seed),
                        model_factory=ModelFactory(), obs_agents_last=False, wrap_model=lambda m: m,
                        observe=lambda p: policy_obs(dm, p, names))


def _fill(p, seed=0):
    """A rollout's rows: random observations, actions in [-2, 2], rewards; env 1 terminates at step 1,
    env 2 is truncated at step 2."""
    g = torch.Generator().manual_seed(seed)
    b = p.buffers
    for t in (b.obs, b.next_obs, b.rewards):
        t.copy_(torch.randn(t.shape, generator=g))
    b.actions.copy_(torch.rand(b.actions.shape, generator=g) * 4 - 2)
    b.terminated.zero_()
    b.truncated.zero_()
    b.terminated[1, 1] = True
    b.truncated[2, 2] = True


def test_build_refuses_categorical_actions_and_sizes_its_buffers():
    p = build_policy(_ctx(_pendulum(3), steps=4, buffer_size=50))
    assert p.buffers.obs.shape == p.buffers.next_obs.shape == (4, 3, 1, 3) and p.buffers.actions.shape == (4, 3, 1, 1)
    assert p.replay.capacity == 50 and p.target_entropy == -1.0 and p.model is p.nets.actor
    assert set(p.optimizers()) == {"actor", "critic", "alpha"} and set(p.weight_files()) == {"actor", "critic"}
    assert p.learning_rates() == {"": 3e-4, "_critic": 3e-4, "_alpha": 3e-4}
    from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv

    cartpole = EnvWrapper(ClassicControlCartPoleEnv(episode_length=50, reset_pool_size=10, seed=1), num_envs=2, env_backend="cpu")
    cartpole.reset_all_envs()
    with pytest.raises(ConfigError, match="SAC needs continuous"):
        build_policy(_ctx(cartpole))


def test_greedy_actions_are_deterministic_tanh_of_the_mean_and_every_action_is_in_bounds():
    p = build_policy(_ctx(_pendulum(64)))
    obs = torch.randn(64, 1, 3) * 5
    with torch.no_grad():
        out = p.model(obs)  # what the rollout runs
        greedy = p.act(out, True)
        assert torch.equal(greedy, p.act(out, True))
        torch.testing.assert_close(greedy, 2.0 * torch.tanh(out[0]))
        sampled = [p.act(out, False) for _ in range(20)]
    assert greedy.shape == (64, 1, 1) and not torch.equal(sampled[0], sampled[1])
    allowed = torch.stack(sampled)
    assert float(allowed.min()) >= -2.0 and float(allowed.max()) <= 2.0 and float(allowed.std()) > 0.3


def test_correlated_exploration_draws_follow_an_ar1_process_with_unit_variance():
    p = build_policy(_ctx(_pendulum(256), noise_correlation=0.9))
    assert p.noise.shape == (256, 1, 1)
    mean, log_std = torch.zeros(256, 1, 1), torch.zeros(256, 1, 1)  # u = z: atanh(y) recovers the draw
    draws = []
    with torch.no_grad():
        for _ in range(200):
            draws.append(torch.atanh(p.act((mean, log_std), False).clamp(-1.999, 1.999) / 2.0))
    z = torch.stack(draws)[..., 0, 0]  # (T, E)
    lag1 = float((z[1:] * z[:-1]).mean() / (z * z).mean())
    assert abs(lag1 - 0.9) < 0.03 and abs(float(z.std()) - 1.0) < 0.1
    assert torch.equal(p.state_dict()["noise"], p.noise)


@pytest.mark.parametrize("bootstrap", [True, False])
def test_finalize_pushes_every_transition_without_bootstrap_after_terminations(bootstrap):
    p = build_policy(_ctx(_pendulum(3), steps=4))
    _fill(p)
    p.finalize(None, bootstrap)
    r = p.replay
    assert (len(r), p.env_steps) == (12, 12)
    not_done = r.data["not_done"][:12].reshape(4, 3)
    expected = torch.ones(4, 3)
    expected[1, 1] = 0.0
    if not bootstrap:
        expected[2, 2] = 0.0  # a time limit ends the episode like a termination
    assert torch.equal(not_done, expected)
    torch.testing.assert_close(r.data["actions"][:12], p.buffers.actions.reshape(12, 1) / 2.0)  # unit box
    assert torch.equal(r.data["next_obs"][:12], p.buffers.next_obs.reshape(12, 3))
    obs = torch.randn(3, 1, 3)
    p.record_next_obs(3, obs)
    assert torch.equal(p.buffers.next_obs[3], obs)


def test_update_waits_for_learning_starts_then_steps_with_the_drivers_hooks():
    p = build_policy(_ctx(_pendulum(3), steps=4, learning_starts=20, batch_size=8, gradient_steps=3))
    calls = {"backward": 0, "step": {}}

    class Counting:
        def __init__(self, name, inner):
            self.name, self.inner = name, inner

        def zero_grad(self, set_to_none=True):
            self.inner.zero_grad(set_to_none=set_to_none)

        def step(self):
            calls["step"][self.name] = calls["step"].get(self.name, 0) + 1
            self.inner.step()

    def backward(loss):
        calls["backward"] += 1
        loss.backward()

    def context():
        wrapped = {k: Counting(k, o) for k, o in p.optimizers().items()}
        return UpdateContext(torch.Generator().manual_seed(1), 12, optimizers=wrapped, backward=backward)

    _fill(p)
    p.finalize(None, True)
    before = copy.deepcopy(p.nets.actor.state_dict())
    idle = p.update(p.batch(), context())
    assert calls["backward"] == 0 and all(torch.equal(before[k], v) for k, v in p.nets.actor.state_dict().items())
    _fill(p, 1)
    p.finalize(None, True)  # 24 env steps >= 20
    m = p.update(p.batch(), context())
    assert set(m) == set(idle) and calls["backward"] == 9 and calls["step"] == {"critic": 3, "actor": 3, "alpha": 3}
    assert float(m["critic_loss"]) > 0 and float(idle["critic_loss"]) == 0 and float(idle["alpha"]) == 1.0
    assert any(not torch.equal(before[k], v) for k, v in p.nets.actor.state_dict().items())


def test_state_dict_round_trip_then_identical_updates():
    a = build_policy(_ctx(_pendulum(3), seed=0, learning_starts=0, batch_size=16, gradient_steps=2, buffer_size=30))
    b = build_policy(_ctx(_pendulum(3), seed=1, learning_starts=0, batch_size=16, gradient_steps=2, buffer_size=30))
    for seed in range(3):
        _fill(a, seed)
        a.finalize(None, True)
        a.update(a.batch(), UpdateContext(torch.Generator().manual_seed(seed), 12))
    a.timestep = 36
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    assert (b.timestep, b.env_steps, b.replay.position, len(b.replay)) == (36, 36, 6, 30)
    assert torch.equal(a.nets.log_alpha, b.nets.log_alpha) and float(a.nets.log_alpha.detach()) != 0.0
    _fill(a, 9)
    _fill(b, 9)
    for p in (a, b):
        p.finalize(None, True)
        p.update(p.batch(), UpdateContext(torch.Generator().manual_seed(7), 12))
    for name in ("actor", "critic", "target_critic"):
        sa, sb = getattr(a.nets, name).state_dict(), getattr(b.nets, name).state_dict()
        assert all(torch.equal(sa[k], sb[k]) for k in sa), name


def test_a_critic_weight_file_sets_the_target_critics_too():
    a = build_policy(_ctx(_pendulum(2), seed=0))
    b = build_policy(_ctx(_pendulum(2), seed=1))
    b.load_weights("critic", a.nets.critic.state_dict())
    b.load_weights("actor", a.nets.actor.state_dict())
    for x, y in zip(b.nets.target_critic.parameters(), a.nets.critic.parameters()):
        assert torch.equal(x, y)
    assert all(torch.equal(x, y) for x, y in zip(b.nets.actor.parameters(), a.nets.actor.parameters()))
