"""``trainer.update_precision: bf16``: the update's forward and backward under bfloat16 autocast.

Weights, gradients and optimizer state stay float32; the step is close to the float32 step (bf16
rounding of activations), not identical; the config rejects other precisions by name.
"""

from __future__ import annotations

import copy

import pytest
import torch

from tests.cpu.training.test_cpu_chunking import _batch, _trainer
from warp_drive.config import load_run_config
from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.actor_critic.ppo import PPO
from warp_drive.training.algorithms.actor_critic.update import update_policy
from warp_drive.training.models.fully_connected import FullyConnected


def _step(autocast_dtype, chunk_rows=None):
    torch.manual_seed(1)
    model = FullyConnected(7, [4, 4], [64, 64])
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    before = [p.detach().clone() for p in model.parameters()]
    seen = []
    model.register_forward_hook(lambda m, args, out: seen.append(out[1].dtype))
    metrics = update_policy(model, opt, copy.deepcopy(PPO(normalize_advantage=True, entropy_coeff=0.05)), _batch(),
                            timestep=0, max_grad_norm=None, autocast_dtype=autocast_dtype, chunk_rows=chunk_rows)
    steps = [(p.detach() - b) for p, b in zip(model.parameters(), before)]  # SGD lr 1: minus the gradient
    return metrics, steps, model, seen


@pytest.mark.parametrize("chunk_rows", [None, 4])
def test_bf16_update_is_close_to_the_fp32_step_and_keeps_fp32_state(chunk_rows):
    ref_metrics, ref_steps, _, ref_seen = _step(None, chunk_rows)
    metrics, steps, model, seen = _step(torch.bfloat16, chunk_rows)
    assert set(ref_seen) == {torch.float32} and set(seen) == {torch.bfloat16}  # the forward ran in bf16
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(v.dtype == torch.float32 for v in metrics.values())
    assert all(s.dtype == torch.float32 for s in steps)
    got, want = (torch.cat([s.flatten() for s in x]) for x in (steps, ref_steps))
    assert float(want.abs().max()) > 0  # a real step was taken
    # bf16 keeps 8 bits of mantissa: the step points the same way and is within 10% in norm (measured
    # here: cosine 0.9992, relative error 3.9%)
    assert float(torch.nn.functional.cosine_similarity(got, want, dim=0)) > 0.995
    assert float((got - want).norm() / want.norm()) < 0.1
    for key in ref_metrics:
        torch.testing.assert_close(metrics[key], ref_metrics[key], rtol=0.05, atol=0.02, msg=key)


def test_trainer_reads_update_precision_and_trains(tmp_path):
    t = _trainer(tmp_path, 10**9)
    assert t.update_autocast_dtype is None
    cfg = t.config.to_dict()
    cfg["trainer"]["update_precision"] = "bf16"
    from tests.helpers.toy_env import ToyLine
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    w = EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=16, env_backend="cpu")
    bf = Trainer(w, cfg, {"a": [3, 1], "b": [0, 2]}, verbose=False, results_dir=str(tmp_path / "bf16"))
    assert bf.update_autocast_dtype is torch.bfloat16
    before = [p.detach().clone() for p in bf.policies["a"].model.parameters()]
    bf.train(1)
    after = list(bf.policies["a"].model.parameters())
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in after)
    assert any(not torch.equal(a, b) for a, b in zip(after, before))


@pytest.mark.parametrize("value", ["fp16", "half", "float16"])
def test_unknown_precision_is_a_config_error_naming_the_choices(value):
    from example_envs import get_default_config_path

    with pytest.raises(ConfigError, match=r"update_precision.*fp32, bf16"):
        load_run_config(get_default_config_path("tag_continuous"), [f"trainer.update_precision={value}"])
