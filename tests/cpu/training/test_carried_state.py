"""Carried state (issue 38 items 1b and 2, recurrent policies): the GRU model's step and sequence forms, the
rollout's carried state and record, the update's first minibatch recomputing the rollout (across episode resets
inside the chunk, in both step orders), sequence-aware minibatches, config errors, and the stateless path
untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from example_envs import get_example_env_class
from warp_drive.config import load_run_config
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.compiled import LossFunction
from warp_drive.training.buffers import RolloutBatch
from warp_drive.training.models import ActionSpec, ModelFactory
from warp_drive.training.models.distributions import log_prob_and_entropy
from warp_drive.training.models.gru import GRUActorCritic, is_recurrent
from warp_drive.training.trainer import Trainer

N, E, STEPS = 3, 4, 30  # simple_spread's episodes are 25 steps: every rollout chunk holds a reset
GRU = {"type": "gru", "fc_dims": [16], "kwargs": {"hidden_size": 8}}


def gru_policy(**kw) -> dict:
    return {"to_train": True, "algorithm": "PPO", "lr": 0.003, "num_minibatches": 2, "model": GRU, **kw}


def spread(tmp_path: Path, policies: dict, policy_map: dict | None = None, bootstrap: bool = False,
           trainer: dict | None = None, envs: int = E, steps: int = STEPS, model_factory: ModelFactory | None = None
           ) -> Trainer:
    env = get_example_env_class("mpe_simple_spread")(num_agents=N, seed=1)
    cfg = {"name": "spread", "trainer": {"num_envs": envs, "train_batch_size": envs * steps, "num_episodes": 1000,
                                         "env_backend": "cpu", "seed": 1, "bootstrap_at_time_limit": bootstrap,
                                         **(trainer or {})},
           "policy": policies, "saving": {"metrics_log_freq": 10**6, "model_params_save_freq": 10**6,
                                          "basedir": str(tmp_path)}}
    pmap = policy_map or {tag: list(range(N)) for tag in policies}
    t = Trainer(EnvWrapper(env, num_envs=envs, env_backend="cpu"), cfg, pmap, verbose=False,
                results_dir=str(tmp_path / "run"), model_factory=model_factory)
    t.env_wrapper.reset_all_envs()
    return t


# ---------------------------------------------------------------------------------------------- the model
@pytest.mark.parametrize("separate", [False, True], ids=["one_trunk", "own_critic"])
def test_a_sequence_equals_its_steps_one_after_another(separate):
    """The update's form (a time-first sequence with resets) gives what the rollout's form (one step at a time,
    the state zeroed where an episode starts) gives: outputs and the last state."""
    torch.manual_seed(0)
    model = GRUActorCritic((5,), ActionSpec(categorical=(4, 2)), (12,), hidden_size=6, init_method="orthogonal",
                           critic_dims=(9,) if separate else None, activation="tanh")
    T, lead = 7, (3, 2)
    obs = torch.randn(T, *lead, 5)
    if separate:
        obs = {"actor": obs, "critic": torch.randn(T, *lead, 9)}
    starts = torch.rand(T, *lead) < 0.3
    state0 = torch.randn(*lead, model.state_size)
    with torch.no_grad():
        (heads, values), last = model(obs, state0, starts)
        h = state0
        for t in range(T):
            h = torch.where(starts[t][..., None], model.initial_state(lead), h)
            step = {k: v[t] for k, v in obs.items()} if separate else obs[t]
            (step_heads, step_values), h = model(step, h)
            for a, b in zip(step_heads, heads):
                torch.testing.assert_close(a, b[t], rtol=0, atol=1e-6)
            torch.testing.assert_close(step_values, values[t], rtol=0, atol=1e-6)
    torch.testing.assert_close(h, last, rtol=0, atol=1e-6)
    assert [tuple(x.shape) for x in heads] == [(T, *lead, 4), (T, *lead, 2)] and values.shape == (T, *lead)
    assert is_recurrent(model) and model.state_size == (12 if separate else 6)


def test_gradients_flow_through_time_within_an_episode_and_stop_at_its_start():
    torch.manual_seed(1)
    model = GRUActorCritic((4,), ActionSpec(categorical=(3,)), (8,), hidden_size=5)
    obs = torch.randn(6, 2, 4, requires_grad=True)
    starts = torch.zeros(6, 2, dtype=torch.bool)
    starts[3, 0] = True  # row 0's episode starts again at step 3
    (heads, values), _ = model(obs, model.initial_state((2,)), starts)
    (values[5].sum() + heads[0][5].log().sum()).backward()
    grad = obs.grad.abs().sum(-1)  # (T, rows)
    assert (grad[:, 1] > 0).all()  # row 1: every earlier step shapes the last one
    assert (grad[:3, 0] == 0).all() and (grad[3:, 0] > 0).all()  # row 0: nothing before its episode start


def test_the_factory_builds_gru_and_its_own_critic_and_checks_its_keys():
    factory, spec = ModelFactory(), ActionSpec(categorical=(5,))
    cfg = load_run_config({"name": "x", "policy": {"a": {"model": GRU}}}).policy["a"].model
    model = factory.build(cfg, (6,), spec)
    assert type(model) is GRUActorCritic and not model.separate and model.state_size == 8
    model = factory.build(cfg, (6,), spec, critic_dims=(11,))
    assert model.separate and model.state_size == 16 and model.critic_gru.input_size == 16
    typo = load_run_config({"name": "x", "policy": {"a": {"model": {**GRU, "kwargs": {"hiden_size": 8}}}}})
    with pytest.raises(ConfigError, match=r"unknown key `policy.a.model.kwargs.hiden_size`.*did you mean.*hidden_size"):
        factory.build(typo.policy["a"].model, (6,), spec, "policy.a.model")
    with pytest.raises(ConfigError, match="hidden_size=0"):
        GRUActorCritic((6,), spec, hidden_size=0)


# ---------------------------------------------------------------------------------------------- the rollout
@pytest.mark.parametrize("bootstrap", [False, True], ids=["reset_first", "bootstrap"])
def test_the_rollout_carries_the_state_and_resets_it_where_an_episode_ends(tmp_path, bootstrap):
    """Replayed one step at a time from the recorded start state, the model gives the recorded values and
    log-probabilities when its state is zeroed after every done flag, and the record's episode starts are those
    flags one step later; the policy ends the rollout holding the state the replay ends with."""
    t = spread(tmp_path, {"a": gru_policy(critic_input="global_state")}, bootstrap=bootstrap)
    t.train(1)  # the next rollout starts mid-episode, from a state that is not the initial one
    p = t.policies["a"]
    before = p.carried.hidden.clone()
    t.generate_rollout()
    b, done = p.buffers, t.rollout.shared.done > 0
    assert done[:-1].any() and before.abs().sum() > 0
    torch.testing.assert_close(b.start_state, before, rtol=0, atol=0)
    assert torch.equal(b.episode_starts[1:], done[:-1, :, None].expand(-1, -1, N)) and not b.episode_starts[0].any()
    h = b.start_state
    with torch.no_grad():
        for step in range(STEPS):
            obs = {k: v[step] for k, v in b.obs.items()}
            (heads, values), h = p.model(obs, h)
            log_prob, _ = log_prob_and_entropy(heads, b.actions[step])
            torch.testing.assert_close(values, b.values[step], rtol=0, atol=1e-5)
            torch.testing.assert_close(log_prob, b.log_probs[step], rtol=0, atol=1e-5)
            h = torch.where(done[step][:, None, None], p.carried.initial, h)
    torch.testing.assert_close(p.carried.hidden, h, rtol=0, atol=1e-5)


@pytest.mark.parametrize("bootstrap", [False, True], ids=["reset_first", "bootstrap"])
@pytest.mark.parametrize("critic", ["local", "global_state"])
def test_the_first_minibatch_recomputes_the_rollout(tmp_path, critic, bootstrap):
    """Before any optimizer step, the update's forward of its first minibatch (whole sequences from their
    recorded start states, reset at the recorded episode starts inside the chunk) gives the rollout's
    log-probabilities and values."""
    t = spread(tmp_path, {"a": gru_policy(critic_input=critic)}, bootstrap=bootstrap)
    t.train(2)
    p = t.policies["a"]
    t.generate_rollout()
    batch = p.batch()
    mb = next(batch.minibatches(p.config.num_minibatches, generator=torch.Generator().manual_seed(3)))
    assert mb.start_state.shape == (E * N // 2, 16 if critic == "global_state" else 8)
    assert mb.episode_starts[:, 1:].any()  # an episode starts inside the chunk of this minibatch's sequences
    with torch.no_grad():
        heads, values = LossFunction(p.train_model, p.algorithm, None, compile=False)._sequence_forward(mb)
    log_prob, _ = log_prob_and_entropy(heads, mb.actions)
    torch.testing.assert_close(log_prob, mb.old_log_probs, rtol=0, atol=1e-5)
    torch.testing.assert_close(values, mb.old_values, rtol=0, atol=1e-5)


def test_sequence_minibatches_hold_whole_sequences_and_their_start_states():
    B, envs, A, S = 5, 4, 3, 2
    code = torch.arange(B * envs * A, dtype=torch.float32).reshape(B, envs, A)  # 100 t + ... : unique per sample
    batch = RolloutBatch(obs=code[..., None], actions=code[..., None].long(), advantages=code, returns=code,
                         old_log_probs=code, old_values=code,
                         start_state=torch.arange(envs * A * S, dtype=torch.float32).reshape(envs, A, S),
                         episode_starts=torch.zeros(B, envs, A, dtype=torch.bool))
    seen = []
    for mb in batch.minibatches(3, generator=torch.Generator().manual_seed(0)):
        assert mb.advantages.shape == (envs * A // 3, B) and mb.start_state.shape == (envs * A // 3, S)
        for row in range(mb.advantages.shape[0]):
            seq = int(mb.advantages[row, 0])  # step 0 of sequence (env, agent) = env * A + agent
            assert torch.equal(mb.advantages[row], code.reshape(B, -1)[:, seq])  # every step, in order
            assert torch.equal(mb.start_state[row], batch.start_state.reshape(-1, S)[seq])
            seen.append(seq)
    assert sorted(seen) == list(range(envs * A))
    sub = batch.env_subset(torch.tensor([1, 3]))  # trainer.neg_pos_env_ratio: the start states' env axis is first
    assert torch.equal(sub.start_state, batch.start_state[[1, 3]]) and sub.advantages.shape == (B, 2, A)


# ---------------------------------------------------------------------------------------------- the stateless path
def test_a_stateless_policy_carries_and_records_nothing(tmp_path):
    """The MLP path is untouched: no carried state, no extra record fields, batch keys, checkpoint entries."""
    t = spread(tmp_path, {"m": {"to_train": True, "algorithm": "PPO", "model": {"fc_dims": [16]}}})
    t.train(1)
    p = t.policies["m"]
    assert p.carried is None and p.buffers.start_state is None and p.buffers.episode_starts is None
    assert p.batch().keys() == ["obs", "actions", "advantages", "returns", "old_log_probs", "old_values"]
    assert "recurrent" not in p.state_dict() and "carried_state" not in t.engine.rank_state_dict()


# ---------------------------------------------------------------------------------------------- settings refused
def test_settings_a_recurrent_policy_cannot_take_are_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=r"`trainer.compile`=true.*policy.a.model.type=gru is recurrent.*"
                                          r"set `trainer.compile: false`"):
        spread(tmp_path / "c", {"a": gru_policy()}, trainer={"compile": True})
    with pytest.raises(ConfigError, match=r"`policy.a.num_minibatches`=5 must divide the policy's 12 sequences "
                                          r"\(4 envs x 3 agents\)"):
        spread(tmp_path / "m", {"a": gru_policy(num_minibatches=5)}, steps=25)


# ---------------------------------------------------------------------------------------------- a model from outside
class ElmanActorCritic(torch.nn.Module):
    """A recurrent model of a user's own, written against the contract of warp_drive.training.models only: an
    Elman RNN cell under a softmax head and a value head."""

    recurrent = True

    def __init__(self, obs_dims, action_spec, hidden: int = 6):
        super().__init__()
        self.action_spec = action_spec
        self.cell = torch.nn.RNNCell(obs_dims[0], hidden)
        self.pi = torch.nn.Linear(hidden, action_spec.categorical[0])
        self.v = torch.nn.Linear(hidden, 1)

    def initial_state(self, lead):
        return torch.zeros(*lead, self.cell.hidden_size)

    def forward(self, obs, state, starts=None):
        seq = obs if starts is not None else obs[None]
        h, outs = state, []
        for t in range(seq.shape[0]):
            if starts is not None:
                h = torch.where(starts[t][..., None], 0.0, h)
            h = self.cell(seq[t].reshape(-1, seq.shape[-1]), h.reshape(-1, h.shape[-1])).reshape(h.shape)
            outs.append(h)
        hs = torch.stack(outs) if starts is not None else outs[0]
        return ([torch.softmax(self.pi(hs), -1)], self.v(hs).squeeze(-1)), h


def test_a_recurrent_model_from_outside_touches_no_library_file(tmp_path):
    """The file count of docs/architecture.md: a recurrent model registered with ModelFactory.add trains, its
    state carried by the rollout and its sequences re-run by the update, with no library file edited."""
    factory = ModelFactory()
    factory.add("elman", ElmanActorCritic)
    t = spread(tmp_path, {"a": gru_policy(model={"type": "elman", "kwargs": {"hidden": 5}})}, model_factory=factory)
    p = t.policies["a"]
    assert type(p.model) is ElmanActorCritic and p.carried.shape == (E, N, 5)
    t.train(2)
    t.generate_rollout()
    mb = next(p.batch().minibatches(2, generator=torch.Generator().manual_seed(0)))
    with torch.no_grad():
        heads, values = LossFunction(p.model, p.algorithm, None, compile=False)._sequence_forward(mb)
    torch.testing.assert_close(log_prob_and_entropy(heads, mb.actions)[0], mb.old_log_probs, rtol=0, atol=1e-5)
    torch.testing.assert_close(values, mb.old_values, rtol=0, atol=1e-5)
