"""cpu backend: chunked policy forwards (rollout) and gradient accumulation over chunks (update).

A chunked update must be the same gradient step as the whole minibatch at once (up to float
rounding), with every metric the same; the trainer must run its cpu forwards and backwards on
chunks of at most ``cpu_chunk_samples`` agent-samples, and its GPU path (no chunks) is unchanged.
"""

from __future__ import annotations

import copy

import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.actor_critic.a2c import A2C
from warp_drive.training.algorithms.actor_critic.ppo import PPO
from warp_drive.training.algorithms.actor_critic.update import CONSTANT_METRICS, update_policy
from warp_drive.training.models.action_spec import ActionSpec
from warp_drive.training.models.fully_connected import FullyConnected
from warp_drive.training.engine.acting import forward_in_chunks
from warp_drive.training.trainer import Trainer


def _batch(B=6, E=5, A=3, obs=7):
    g = torch.Generator().manual_seed(0)
    return {"obs": torch.randn(B, E, A, obs, generator=g), "actions": torch.randint(0, 4, (B, E, A, 2), generator=g),
            "advantages": torch.randn(B, E, A, generator=g), "returns": torch.randn(B, E, A, generator=g),
            "old_log_probs": torch.randn(B, E, A, generator=g) - 2.0, "old_values": torch.randn(B, E, A, generator=g)}


def _run(algorithm, chunk_rows, epochs=2, minibatches=2):
    torch.manual_seed(1)
    model = FullyConnected(7, [4, 4], [16, 16])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    metrics = update_policy(model, opt, copy.deepcopy(algorithm), _batch(), timestep=0, num_epochs=epochs,
                            num_minibatches=minibatches, max_grad_norm=0.5,
                            generator=torch.Generator().manual_seed(0), chunk_rows=chunk_rows)
    return metrics, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("algorithm", [
    A2C(normalize_advantage=True, normalize_return=True, vf_loss_coeff=0.5, entropy_coeff=0.05),
    PPO(normalize_advantage=True, vf_clip_param=0.3, vf_loss_coeff=0.5, entropy_coeff=0.05),
], ids=["a2c", "ppo"])
@pytest.mark.parametrize("chunk_rows", [1, 4, 7])
def test_chunked_update_is_the_same_gradient_step(algorithm, chunk_rows):
    """15 rows per minibatch in chunks of 1, 4 (uneven last chunk) or 7 rows: same weights after 4
    Adam steps, same metrics (explained variance over the whole minibatch, coefficients exact)."""
    whole_metrics, whole = _run(algorithm, None)
    metrics, params = _run(algorithm, chunk_rows)
    for a, b in zip(params, whole):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert metrics.keys() == whole_metrics.keys()
    for key in metrics:
        torch.testing.assert_close(metrics[key], whole_metrics[key], rtol=1e-5, atol=1e-6, msg=key)
    for key in CONSTANT_METRICS:
        assert float(metrics[key]) == float(whole_metrics[key])


def test_chunks_bound_the_rows_of_every_forward():
    seen = []
    model = FullyConnected(7, [4, 4], [8])
    model.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape[0]))
    update_policy(model, torch.optim.SGD(model.parameters(), lr=0.1), A2C(), _batch(), timestep=0,
                  num_minibatches=1, chunk_rows=4)
    assert seen == [4] * 7 + [2]  # 30 (time, env) rows


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_chunk_rows_is_a_config_error(bad):
    model = FullyConnected(7, [4, 4], [8])
    with pytest.raises(ConfigError, match="chunk_rows"):
        update_policy(model, torch.optim.SGD(model.parameters(), lr=0.1), A2C(), _batch(), timestep=0, chunk_rows=bad)


@pytest.mark.parametrize("spec, obs", [
    ([3, 5], torch.randn(11, 4, 6)),
    (ActionSpec(gaussian_dim=2), torch.randn(11, 4, 6)),
], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("chunk", [None, 1, 3, 11, 50])
def test_forward_in_chunks_matches_one_forward(spec, obs, chunk):
    torch.manual_seed(0)
    model = FullyConnected(6, spec, [16])
    with torch.no_grad():
        heads, values = model(obs)
        c_heads, c_values = forward_in_chunks(model, obs, chunk)
    torch.testing.assert_close(c_values, values)
    assert len(c_heads) == len(heads)
    for a, b in zip(c_heads, heads):
        if isinstance(b, tuple):
            assert isinstance(a, tuple)
            for x, y in zip(a, b):
                torch.testing.assert_close(x, y.expand_as(x))
        else:
            torch.testing.assert_close(a, b)


def test_forward_in_chunks_splits_dict_observations():
    torch.manual_seed(0)
    model = FullyConnected({"a": 3, "b": (2, 2)}, [4], [8])
    obs = {"a": torch.randn(9, 2, 3), "b": torch.randn(9, 2, 2, 2)}
    sizes = []
    model.register_forward_pre_hook(lambda m, args: sizes.append(args[0]["a"].shape[0]))
    with torch.no_grad():
        heads, values = model(obs)
        c_heads, c_values = forward_in_chunks(model, obs, 4)
    assert sizes == [9, 4, 4, 1]
    torch.testing.assert_close(c_values, values)
    torch.testing.assert_close(c_heads[0], heads[0])


def _config(tmp_path, algorithm="A2C"):
    pol = {"to_train": True, "algorithm": algorithm, "lr": 0.01, "vf_loss_coeff": 0.5, "entropy_coeff": 0.05,
           "gamma": 0.9, "normalize_advantage": True, "model": {"fc_dims": [16, 16]}}
    return {"name": "toy", "trainer": {"num_envs": 16, "train_batch_size": 16 * 10, "num_episodes": 16 * 40,
                                       "env_backend": "cpu", "seed": 3},
            "policy": {"a": dict(pol), "b": dict(pol)},
            "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}


def _trainer(tmp_path, chunk_samples, algorithm="A2C"):
    w = EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=16, env_backend="cpu")
    t = Trainer(w, _config(tmp_path, algorithm), {"a": [3, 1], "b": [0, 2]}, verbose=False)
    t.cpu_chunk_samples = chunk_samples
    return t


@pytest.mark.parametrize("algorithm", ["A2C", "PPO"])
def test_trainer_chunks_its_cpu_forwards_and_trains_like_unchunked(tmp_path, algorithm):
    """Chunks of 6 agent-samples (3 rows of a 2-agent policy) vs none: same rollouts and weights."""
    big = _trainer(tmp_path / "big", 10**9, algorithm)
    small = _trainer(tmp_path / "small", 6, algorithm)
    assert big.cpu_chunk_rows(2) == 5 * 10**8 and small.cpu_chunk_rows(2) == 3
    rows = []
    small.policies["a"].model.register_forward_pre_hook(lambda m, args: rows.append(args[0].shape[0]))
    big.train(1)
    small.train(1)
    assert rows and max(rows) == 3  # rollout forwards: 3 envs; update chunks: 3 (time, env) rows
    for tag in big.policies:
        for a, b in zip(small.policies[tag].model.parameters(), big.policies[tag].model.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(small.policies[tag].buffers.actions, big.policies[tag].buffers.actions)


def test_no_chunks_off_the_cpu(tmp_path):
    t = _trainer(tmp_path, 6)
    t.engine.device = torch.device("cuda", 0)  # as on the pycuda backend: forwards and backwards stay whole
    assert t.cpu_chunk_rows(2) is None


class _Recorder(torch.nn.Module):
    """A DDP stand-in: records whether each forward ran inside ``no_sync``."""

    def __init__(self, model):
        super().__init__()
        self.module, self.syncing, self.calls = model, True, []

    def forward(self, obs):
        self.calls.append(self.syncing)
        return self.module(obs)

    def no_sync(self):
        import contextlib

        @contextlib.contextmanager
        def ctx():
            self.syncing = False
            try:
                yield
            finally:
                self.syncing = True
        return ctx()


def test_gradients_are_all_reduced_once_per_minibatch():
    wrapped = _Recorder(FullyConnected(7, [4, 4], [8]))
    update_policy(wrapped, torch.optim.SGD(wrapped.parameters(), lr=0.1), A2C(), _batch(), timestep=0,
                  num_minibatches=2, chunk_rows=4)
    assert wrapped.calls == [False, False, False, True] * 2  # 15 rows per minibatch: 4 + 4 + 4 + 3
