"""Action masks and agents that leave the game (issue 38 item 2; warp_drive/training/agent_masks.py).

On the Corridor env (tests/helpers/corridor_env.py: illegal moves in some cells, agents that die in a pit or
finish at the goal): no illegal action is ever sampled or picked greedily (cpu backend, both step orders, env
parts, policies over subsets of agents, a separate critic, two heads); the record holds the masks the env wrote;
the losses with inactive agents equal the losses computed on the active rows alone (by hand), in chunks too;
advantage normalization ignores inactive rows; the return rule (an agent's trajectory ends in the step it leaves)
against a hand loop over a real rollout; config errors; checkpoints; and a masked policy learning at least as
well as an unmasked one. Envs without the arrays: tests/cpu/training/test_network_inputs.py's bit-identity run.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tests.helpers.corridor_env import Corridor
from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.managers.cpu_core.sampler import sample_action_rows
from warp_drive.training.agent_masks import agent_ends, trajectory_flags
from warp_drive.training.algorithms.actor_critic.a2c import A2C
from warp_drive.training.algorithms.actor_critic.ppo import PPO
from warp_drive.training.algorithms.actor_critic.returns import compute_gae
from warp_drive.training.algorithms.actor_critic.update import update_policy
from warp_drive.training.algorithms.compiled import LossFunction
from warp_drive.training.buffers import RolloutBatch
from warp_drive.training.models import FullyConnected, ModelFactory
from warp_drive.training.models.masked_input import ACTIVE, INPUT, split_masks, with_masks
from warp_drive.training.models.separate_critic import FullyConnectedSeparateCritic
from warp_drive.training.trainer import Trainer
from warp_drive.training.utils.minibatch import flatten_leading, index_tree
from warp_drive.vocab.constants import Constants

GOAL = 6


class StrictCorridor(Corridor):
    """The corridor that fails the step where any agent's action is illegal under the mask of its cell."""

    def numpy_step(self, data: dict) -> None:
        x, on = data["x"], data[self.active_name] != 0
        legal = self.legal_mask(x, on)
        actions = data[Constants.ACTIONS].astype(np.intp)
        ok = np.take_along_axis(legal[..., :4], actions[..., :1], -1)[..., 0] != 0
        if self.heads == 2:
            ok &= np.take_along_axis(legal[..., 4:], actions[..., 1:2], -1)[..., 0] != 0
        assert ok.all(), f"illegal actions sampled: {actions[~ok].tolist()} at cells {x[~ok].tolist()}"
        self.steps = getattr(self, "steps", 0) + 1
        super().numpy_step(data)


def _policy(**kw) -> dict:
    return {"to_train": True, "algorithm": "PPO", "lr": 0.01, "num_minibatches": 2, "entropy_coeff": 0.05,
            "model": {"fc_dims": [16]}, **kw}


def _trainer(tmp_path, policies: dict, policy_map: dict | None = None, env_cls: type = StrictCorridor, envs: int = 8,
             steps: int = 10, seed: int = 1, trainer: dict | None = None, **env_kw) -> Trainer:
    env = env_cls(**{"num_agents": 3, "episode_length": 10, **env_kw})
    cfg = {"name": "corridor", "trainer": {"num_envs": envs, "train_batch_size": envs * steps, "num_episodes": 5000,
                                           "env_backend": "cpu", "seed": seed, **(trainer or {})},
           "policy": policies, "saving": {"metrics_log_freq": 10**6, "model_params_save_freq": 10**6,
                                          "basedir": str(tmp_path)}}
    pmap = policy_map or {tag: list(range(env.num_agents)) for tag in policies}
    t = Trainer(EnvWrapper(env, num_envs=envs, env_backend="cpu"), cfg, pmap, verbose=False,
                results_dir=str(tmp_path / "run"))
    t.env_wrapper.reset_all_envs()
    return t


# ---------------------------------------------------------------------------------------------- the samplers
def test_the_cpu_sampler_never_draws_a_zero_probability_action():
    """The sampler twin of the CUDA kernel (inverse CDF on float32 running sums) over 20,000 rows of masked
    probabilities (zeros first, last, in runs, all but one): every draw has a positive probability."""
    rng = np.random.default_rng(0)
    rows, n = 20_000, 7
    legal = rng.random((rows, n)) < 0.4
    legal[np.arange(rows), rng.integers(0, n, rows)] = True
    legal[:50] = False
    legal[:50, -1] = True  # only the last action legal
    logits = torch.as_tensor(rng.normal(size=(rows, n)) * 3, dtype=torch.float32)
    probs = torch.softmax(logits.masked_fill(~torch.as_tensor(legal), torch.finfo(torch.float32).min), -1).numpy()
    assert (probs[~legal] == 0).all()
    actions, error = np.zeros(rows, np.int32), np.zeros(1, np.int32)
    for use_argmax in (0, 1):
        sample_action_rows(0, probs, actions, np.zeros(rows, np.uint32), error, None, rows, n, 1, 0, 7, 1, use_argmax)
        assert legal[np.arange(rows), actions].all() and error[0] == 0


def test_masked_logits_give_zero_probability_and_argmax_a_legal_action():
    torch.manual_seed(0)
    model = FullyConnected(5, [4, 2], fc_dims=(8,))
    obs = torch.randn(6, 3, 5)
    mask = torch.rand(6, 3, 6) < 0.5
    mask[..., 1] = mask[..., 4] = True  # at least one legal action per head
    active = torch.rand(6, 3) < 0.7
    heads, values = model(with_masks(obs, mask, active))
    plain_heads, plain_values = model(obs)
    torch.testing.assert_close(values, plain_values, rtol=0, atol=0)
    for probs, m in zip(heads, torch.split(mask, [4, 2], -1)):
        assert (probs[~m] == 0).all() and torch.allclose(probs.sum(-1), torch.ones(6, 3))
        assert m.gather(-1, probs.argmax(-1, keepdim=True)).all()
    assert split_masks(with_masks(obs, mask, active))[0] is obs
    assert split_masks({"actor": obs, "critic": obs, ACTIVE: active})[0].keys() == {"actor", "critic"}
    # Dict observations: the masks join the observation's keys
    dict_model = FullyConnected({"pos": 3, "vel": 2}, [4, 2], fc_dims=(8,), normalize_obs=True)
    seen = {"pos": obs[..., :3], "vel": obs[..., 3:]}
    heads, _ = dict_model(with_masks(seen, mask, active))
    assert all((probs[~m] == 0).all() for probs, m in zip(heads, torch.split(mask, [4, 2], -1)))
    dict_model.update_obs_normalizer(with_masks(seen, mask, active))  # the active agents' rows only
    rows = torch.cat([obs[..., :3], obs[..., 3:]], -1)[active].double()
    torch.testing.assert_close(dict_model.obs_normalizer.mean, rows.mean(0) * len(rows) / (len(rows) + 1e-4))


# ---------------------------------------------------------------------------------------------- rollouts
@pytest.mark.parametrize("order", ["reset_first", "bootstrap"])
@pytest.mark.parametrize("case", ["ppo gather", "mappo two heads", "parts", "gru"])
def test_no_illegal_action_is_ever_sampled(tmp_path, case, order):
    """Over 12 iterations x 10 steps x 8 envs x 3 agents, and evaluation episodes (greedy, and the uniform-random
    baseline's draws among the legal actions), StrictCorridor's step sees only legal actions; agents do leave the
    game, and the masks do forbid actions."""
    from tests.helpers.threads import torch_threads
    from warp_drive.training.engine.cpu_pipeline import why_not_parts

    policies = {"a": _policy(), "b": _policy(algorithm="A2C")}
    pmap = {"a": [0, 2], "b": [1]}
    kw = {}
    if case == "mappo two heads":
        policies, pmap, kw = {"m": _policy(algorithm="MAPPO", actor_input="obs_agent_id")}, None, {"heads": 2}
    if case == "gru":  # a recurrent policy (models/gru.py) with a critic of its own
        gru = {"type": "gru", "fc_dims": [16], "kwargs": {"hidden_size": 16}}
        policies, pmap = {"g": _policy(algorithm="MAPPO", model=gru, normalize_return=True)}, None
    with torch_threads(2 if case == "parts" else 1):
        t = _trainer(tmp_path, policies, pmap, trainer={"bootstrap_at_time_limit": order == "bootstrap"}, **kw)
        left = forbidden = 0
        for _ in range(12):
            t.train(1)
            for p in t.policies.values():
                left += int((~p.buffers.obs[ACTIVE]).sum())
                forbidden += int((~p.buffers.obs[Constants.ACTION_MASK]).sum())
        t.evaluate(deterministic=True, num_episodes=2, fresh_starts=False)  # greedy, and the uniform-random baseline
        parts = why_not_parts(t.rollout) is None
    assert left > 0 and forbidden > 0 and t.env_wrapper.env.steps >= 120
    assert parts == (case == "parts")


def test_the_record_holds_the_masks_the_env_wrote(tmp_path):
    """Row t of the record: the mask and active flag of each agent's cell at step t (read back from the recorded
    observation's one-hot and active feature); ``active_after``: the flags right after the step."""
    t = _trainer(tmp_path, {"a": _policy()}, trainer={"bootstrap_at_time_limit": True})
    t.train(2)
    b, env = t.policies["a"].buffers, t.env_wrapper.env
    seen = b.obs[INPUT].numpy()
    cell, on = seen[..., : GOAL + 1].argmax(-1), seen[..., GOAL + 1] > 0
    np.testing.assert_array_equal(b.obs[Constants.ACTION_MASK].numpy()[on], env.legal_mask(cell, on)[on] != 0)
    np.testing.assert_array_equal(b.obs[ACTIVE].numpy(), on)
    left = np.isin(b.rewards.numpy(), [np.float32(-1.02), np.float32(0.98)])  # the pit's or the goal's reward
    np.testing.assert_array_equal(b.active_after.numpy(), on & ~left)


def test_the_return_rule_against_a_hand_loop(tmp_path):
    """GAE of a real rollout (bootstrap order: time limits truncate) equals a NumPy loop where an agent's
    trajectory ends in the step that gave it the pit's or the goal's reward (read from the rewards, not from the
    recorded flags); samples of inactive agents are left out of the comparison."""
    gamma, lam = 0.9, 0.8
    t = _trainer(tmp_path, {"a": _policy(algorithm="A2C", gamma=gamma, gae_lambda=lam)},
                 trainer={"bootstrap_at_time_limit": True}, episode_length=7)
    t.train(1)
    last = t.engine.generate_rollout()["a"].numpy()  # V(s_B) of the rollout's own weights
    b = t.policies["a"].buffers
    r, v, nv = b.rewards.numpy(), b.values.numpy(), b.next_values.numpy()
    term, trunc = b.terminated.numpy(), b.truncated.numpy()
    left = np.isin(r, [np.float32(-1.02), np.float32(0.98)])
    active = b.obs[ACTIVE].numpy()
    B, E, A = r.shape
    adv = np.zeros_like(r)
    for e in range(E):
        for a in range(A):
            running = 0.0
            for s in range(B - 1, -1, -1):
                end = term[s, e] or left[s, e, a]
                nxt = 0.0 if end else (nv[s, e, a] if trunc[s, e] else (v[s + 1, e, a] if s + 1 < B else last[e, a]))
                delta = r[s, e, a] + gamma * nxt - v[s, e, a]
                running = delta + (0.0 if end or trunc[s, e] else gamma * lam * running)
                adv[s, e, a] = running
    assert left.any() and trunc.any() and (~active).any()
    np.testing.assert_allclose(b.advantages.numpy()[active], adv[active], rtol=1e-5, atol=1e-5)


def test_agent_ends_and_trajectory_flags():
    term = torch.tensor([[0], [0], [1], [0]], dtype=torch.bool)  # (B=4, E=1)
    active = torch.tensor([[[1, 1]], [[1, 0]], [[0, 0]], [[1, 1]]], dtype=torch.bool)
    after = torch.tensor([[[1, 0]], [[0, 0]], [[0, 0]], [[1, 1]]], dtype=torch.bool)
    ends = agent_ends(term, active, after)
    assert ends[..., 0].flatten().tolist() == [False, True, True, False]
    assert ends[..., 1].flatten().tolist() == [True, False, True, False]
    buffers = SimpleNamespace(terminated=term, obs={INPUT: None, ACTIVE: active}, active_after=after)
    flags, mask = trajectory_flags(buffers, SimpleNamespace(active=True))
    assert torch.equal(flags, ends) and mask is active
    assert trajectory_flags(buffers, None) == (term, None)
    # rewards while inactive are credited to no action: agent 1's step 0 return is its own reward only
    rewards = torch.tensor([[[1.0, 2.0]], [[1.0, 5.0]], [[1.0, 5.0]], [[0.0, 0.0]]])
    _, returns = compute_gae(rewards, torch.zeros_like(rewards), torch.zeros(1, 2), ends, gamma=1.0)
    assert returns[0, 0].tolist() == [2.0, 2.0]


# ---------------------------------------------------------------------------------------------- the losses
def _batch(seed: int = 0, M: int = 24, A: int = 3, obs: int = 5, heads=(4, 2), masked: bool = True):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(M, A, sum(heads), generator=g) < 0.5
    mask[..., 0] = mask[..., heads[0]] = True
    cols = []
    for h, m in zip(heads, torch.split(mask, list(heads), -1)):
        weights = m.float() + 1e-9 * (~m).float()
        cols.append(torch.multinomial(weights.reshape(-1, h), 1, generator=g).reshape(M, A, 1))
    active = torch.rand(M, A, generator=g) < 0.6
    active[0] = True
    x = torch.randn(M, A, obs, generator=g)
    big = lambda t: torch.where(active, t, torch.full_like(t, 1e3))  # noqa: E731  (garbage in inactive rows)
    batch = RolloutBatch(obs=with_masks(x, mask, active) if masked else x, actions=torch.cat(cols, -1).int(),
                         advantages=big(torch.randn(M, A, generator=g)), returns=big(torch.randn(M, A, generator=g)),
                         old_log_probs=big(-torch.rand(M, A, generator=g)), old_values=big(torch.randn(M, A, generator=g)))
    return batch, x, mask, active


def _hand_ppo(model, algorithm, x, mask, active, batch, vf_clip):
    """PPO's loss over the active rows alone, from torch.distributions on the masked logits."""
    heads, values = model(with_masks(x, mask, None))
    cols = batch.actions.long()
    lp = ent = 0
    for h, probs in enumerate(heads):
        dist = torch.distributions.Categorical(probs=probs[active])
        lp, ent = lp + dist.log_prob(cols[..., h][active]), ent + dist.entropy()
    adv = batch.advantages[active]
    adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
    ratio = torch.exp(lp - batch.old_log_probs[active])
    policy = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    v, ret, old = values[active], batch.returns[active], batch.old_values[active]
    vf = torch.maximum((v - ret) ** 2, (old + (v - old).clamp(-vf_clip, vf_clip) - ret) ** 2).mean()
    return policy + 0.5 * vf - 0.01 * ent.mean(), {"policy_loss": policy, "value_loss": vf, "entropy": ent.mean(),
                                                  "mean_advantage": batch.advantages[active].mean(),
                                                  "mean_return": ret.mean(), "clip_fraction": ((ratio - 1).abs() > 0.2).float().mean()}


def test_the_masked_loss_is_the_loss_of_the_active_rows_alone():
    torch.manual_seed(0)
    model = FullyConnected(5, [4, 2], fc_dims=(16,))
    algorithm = PPO(clip_param=0.2, vf_clip_param=0.3, vf_loss_coeff=0.5, entropy_coeff=0.01, normalize_advantage=True)
    batch, x, mask, active = _batch()
    loss, metrics, _ = LossFunction(model, algorithm, None, compile=False)(batch, (0.5, 0.01))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    want, want_metrics = _hand_ppo(model, algorithm, x, mask, active, batch, 0.3)
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
    for key, value in want_metrics.items():
        torch.testing.assert_close(metrics[key], value.detach(), rtol=1e-5, atol=1e-6, msg=key)
    for g, w in zip(grads, torch.autograd.grad(want, list(model.parameters()))):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("algorithm", [A2C(normalize_advantage=True), PPO(normalize_advantage=True)],
                         ids=["A2C", "PPO"])
def test_inactive_rows_change_nothing_and_normalization_ignores_them(algorithm):
    """Whatever the inactive rows hold (advantages 1e3 or -1e3, other returns, other actions' log-probs), the
    loss, its gradient and the metrics stay; the advantages are standardized by the active rows' moments."""
    torch.manual_seed(1)
    model = FullyConnected(5, [4, 2], fc_dims=(16,))
    fn = LossFunction(model, algorithm, None, compile=False)
    batch, _, _, active = _batch(seed=3)
    loss, metrics, _ = fn(batch, (0.5, 0.01))
    other = RolloutBatch.of({**dict(batch), "advantages": torch.where(active, batch.advantages, -1e3),
                             "returns": torch.where(active, batch.returns, 7.0)})
    loss2, metrics2, _ = fn(other, (0.5, 0.01))
    torch.testing.assert_close(loss2, loss, rtol=1e-6, atol=1e-7)
    for key in metrics:
        torch.testing.assert_close(metrics2[key], metrics[key], rtol=1e-5, atol=1e-6, msg=key)
    from warp_drive.training.algorithms.actor_critic.a2c import loss_advantages

    adv = loss_advantages(batch.advantages, True, None, active)[active]
    torch.testing.assert_close(adv.mean(), torch.tensor(0.0), atol=1e-6, rtol=0)
    torch.testing.assert_close(adv.std(unbiased=False), torch.tensor(1.0), atol=1e-5, rtol=0)


def test_chunks_and_the_flat_indexed_path_train_what_the_whole_minibatch_trains():
    """update_policy in chunks of 5 rows (chunks without any active sample included) against whole minibatches,
    and the captured step's path (a flat batch and an index, graphed_update.py) against the minibatch's."""
    batch, _, _, active = _batch(seed=5, M=40)
    active[10:20] = False  # two chunks of 5 rows with no active sample
    batch = RolloutBatch.of({**dict(batch), "obs": {**batch.obs, ACTIVE: active}})
    trained = []
    for chunk_rows in (None, 5):
        torch.manual_seed(2)
        model = FullyConnectedSeparateCritic(5, [4, 2], fc_dims=(16,), critic_dims=(5,), normalize_obs=True)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        obs = batch.obs
        sep = RolloutBatch.of({**dict(batch), "obs": {"actor": obs[INPUT], "critic": obs[INPUT] * 2,
                                                    Constants.ACTION_MASK: obs[Constants.ACTION_MASK], ACTIVE: active}})
        metrics = update_policy(model, opt, PPO(normalize_advantage=True, normalize_return=True), sep, timestep=0,
                                num_epochs=2, num_minibatches=2, generator=torch.Generator().manual_seed(4),
                                chunk_rows=chunk_rows, max_grad_norm=0.5)
        trained.append((model.state_dict(), metrics))
    (whole, m1), (chunked, m2) = trained
    for k in whole:
        torch.testing.assert_close(chunked[k], whole[k], rtol=1e-4, atol=1e-6, msg=k)
    for k in m1:
        torch.testing.assert_close(m2[k], m1[k], rtol=1e-4, atol=1e-5, msg=k)
    model = FullyConnected(5, [4, 2], fc_dims=(16,))
    fn = LossFunction(model, PPO(normalize_advantage=True), None, compile=False)
    flat, index = flatten_leading(dict(batch), 1), torch.tensor([3, 11, 12, 30, 39])
    a, ma, _ = fn(flat, (0.5, 0.01), index=index)
    b, mb, _ = fn(RolloutBatch.of(index_tree(flat, index)), (0.5, 0.01))
    torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------- config
def test_envs_without_the_arrays_and_off_read_nothing(tmp_path):
    t = _trainer(tmp_path / "a", {"a": _policy()}, env_cls=Corridor, declare_mask=False, declare_active=False)
    assert t.policies["a"].inputs is None and t.rollout.shared.active is None
    t = _trainer(tmp_path / "b", {"a": _policy(action_mask="off", mask_inactive=False)}, env_cls=Corridor)
    assert t.policies["a"].inputs is None and t.policies["a"].buffers.active_after is None
    t = _trainer(tmp_path / "c", {"a": _policy(action_mask=True, mask_inactive="off")}, env_cls=Corridor)
    masks = t.policies["a"].inputs.masks
    assert (masks.num_logits, masks.active, t.policies["a"].config.action_mask) == (4, False, "on")


@pytest.mark.parametrize("section, env_kw, match", [
    ({"action_mask": "maybe"}, {}, r"`policy.a.action_mask`='maybe' is unknown; expected one of auto, on, off"),
    ({"mask_inactive": "of"}, {}, r"did you mean `policy.a.mask_inactive: off`"),
    ({"action_mask": "on"}, {"declare_mask": False}, r"`policy.a.action_mask: on`, but Corridor declares no "
                                                     r"`action_mask` array: add `feed.add_data\('action_mask'"),
    ({"mask_inactive": "on"}, {"declare_active": False}, r"declares no `active` array"),
])
def test_config_errors_name_the_key_and_the_fix(tmp_path, section, env_kw, match):
    with pytest.raises(ConfigError, match=match):
        _trainer(tmp_path, {"a": _policy(**section)}, env_cls=Corridor, **env_kw)


class NarrowMask(Corridor):
    def get_data_dictionary(self):
        feed = super().get_data_dictionary()
        feed[Constants.ACTION_MASK]["data"] = feed[Constants.ACTION_MASK]["data"][:, :3]
        return feed


class UnsavedActive(Corridor):
    """``active`` without a saved copy: one array shared by every env."""

    def get_data_dictionary(self):
        feed = super().get_data_dictionary()
        feed[Constants.ACTIVE]["attributes"]["save_copy_and_apply_at_reset"] = False
        return feed


class PooledActive(UnsavedActive):
    """``active`` drawn from a reset pool: an env axis, but no saved copy for the bootstrap order's reset forward."""

    def get_reset_pool_dictionary(self):
        feed = type(super().get_data_dictionary())()
        feed.add_pool_for_reset("active_pool", np.ones((2, self.num_agents), np.int32), reset_target=Constants.ACTIVE)
        return feed


@pytest.mark.parametrize("env_cls, match", [
    (NarrowMask, r"`action_mask` array has shape \(8, 3, 3\) on the store; expected \(E, N, L\) with L >= 4"),
    (UnsavedActive, r"`active` array has shape \(3,\) on the store; expected \(E, N\) \(E=8 envs, N=3 agents\)"),
    (PooledActive, r"`active` array has no saved copy to restore at a reset"),
])
def test_arrays_the_policy_cannot_read_are_refused(tmp_path, env_cls, match):
    with pytest.raises(ConfigError, match=match):
        _trainer(tmp_path, {"a": _policy()}, env_cls=env_cls)


def test_a_model_that_takes_no_masked_input_is_refused_by_name(tmp_path):
    class Plain(FullyConnected):
        takes_agent_masks = False

    factory = ModelFactory()
    factory.add("plain", Plain)
    env = Corridor(num_agents=3)
    cfg = {"name": "c", "trainer": {"num_envs": 2, "train_batch_size": 20, "num_episodes": 100, "env_backend": "cpu"},
           "policy": {"a": _policy(model={"type": "plain", "fc_dims": [8]})}, "saving": {"basedir": str(tmp_path)}}
    with pytest.raises(ConfigError, match=r"policy.a: the env's action_mask \(4 logits\) and active reach the model as "
                                          r"a masked input, but Plain does not take one"):
        Trainer(EnvWrapper(env, num_envs=2, env_backend="cpu"), cfg, {"a": [0, 1, 2]}, verbose=False,
                model_factory=factory, results_dir=str(tmp_path / "run"))


def test_toy_line_has_no_masks(tmp_path):
    cfg = {"name": "toy", "trainer": {"num_envs": 2, "train_batch_size": 10, "num_episodes": 4, "env_backend": "cpu"},
           "policy": {"a": _policy(action_mask="auto")}, "saving": {"basedir": str(tmp_path)}}
    t = Trainer(EnvWrapper(ToyLine(num_agents=2), num_envs=2, env_backend="cpu"), cfg, {"a": [0, 1]}, verbose=False,
                results_dir=str(tmp_path / "run"))
    assert t.policies["a"].inputs is None and t.rollout.shared.active is None


# ---------------------------------------------------------------------------------------------- runs
def test_checkpoints_round_trip_with_masks(tmp_path):
    t = _trainer(tmp_path / "a", {"a": _policy(normalize_return=True, model={"fc_dims": [16],
                                                                            "kwargs": {"normalize_obs": True}})})
    t.train(2)
    path = t.save_checkpoint(tmp_path / "ckpt.pt")
    fresh = _trainer(tmp_path / "b", {"a": _policy(normalize_return=True, model={"fc_dims": [16],
                                                                                "kwargs": {"normalize_obs": True}})})
    fresh.load_checkpoint(path)
    for k, v in t.policies["a"].model.state_dict().items():
        torch.testing.assert_close(fresh.policies["a"].model.state_dict()[k], v, rtol=0, atol=0, msg=k)
    fresh.train(1)
    assert fresh.iteration == 3


def test_a_masked_policy_learns_at_least_as_well_as_an_unmasked_one(tmp_path):
    """Same seeds and 12 iterations on the corridor: the policy that reads the masks collects more reward per step
    over the run than the one that does not (which pays for illegal moves while it explores; on 8 of 8 seeds when
    written, by 0.017 to 0.07), and both end at the best greedy return (jump, jump, jump: 1 - 3 x 0.02)."""
    for seed in (2, 3):
        mean_reward, greedy = {}, {}
        for setting in ("auto", "off"):
            t = _trainer(tmp_path / f"{setting}{seed}", {"a": _policy(action_mask=setting, num_epochs=2)},
                         env_cls=Corridor, envs=16, steps=10, seed=seed)
            rewards = []
            for _ in range(12):
                t.train(1)
                rewards.append(float(t.policies["a"].buffers.rewards.mean()))
            mean_reward[setting] = np.mean(rewards)
            ev = t.evaluate(deterministic=True, num_episodes=1, random_baseline=False, fresh_starts=False)["a"]
            greedy[setting] = float(np.mean(ev["episode_return"]))
        assert mean_reward["auto"] > mean_reward["off"], (seed, mean_reward)
        assert greedy["auto"] == pytest.approx(0.94, abs=1e-5), (seed, greedy)


def test_the_corridor_kernel_takes_its_step_kernel_args(tmp_path):
    """The guide's CUDA side: CudaCorridorStep writes `action_mask` and `active` like any other array; its
    parameters are the env's step_kernel_args (parsed without a GPU), and nvcc builds it where it is installed."""
    import shutil
    import subprocess

    from warp_drive.cuda.compiler import render_source
    from warp_drive.cuda.signature import parse_kernel_signatures

    env = Corridor(heads=2, source_dir=str(tmp_path))
    step = parse_kernel_signatures(env.cuda_source.read_text())["CudaCorridorStep"]
    names = [a if isinstance(a, str) else a[0] for a in env.step_kernel_args]
    assert [p.name.removesuffix("_arr").strip("_") for p in step] == [n.strip("_") for n in names]
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH (the signature was checked)")
    source = tmp_path / "module.cu"
    source.write_text(render_source(4, env.num_agents, 1, env_source=env.cuda_source, constants=env.cuda_constants()))
    core = Path(__file__).resolve().parents[3] / "warp_drive" / "cuda" / "core"
    subprocess.run([nvcc, "-arch=sm_90", "-c", "-I", str(core), str(source), "-o", str(tmp_path / "m.o")], check=True)
