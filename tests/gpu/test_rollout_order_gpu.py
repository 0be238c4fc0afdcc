"""GPU (pycuda): the reset-first rollout order trains the Tag tutorial config (bundled
``warp_drive/training/run_configs/tag_continuous.yaml``: 100 envs, 10 taggers + 100 runners,
``bootstrap_at_time_limit: false``) to the bootstrap order's buffers and weights, bit for bit,
replayed from a CUDA graph and eagerly (the CPU twin: ``tests/cpu/training/test_rollout_order.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _tutorial_trainer(tmp_path: Path, overrides: list[str]):
    import warp_drive.training
    from example_envs import get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    path = Path(warp_drive.training.__file__).parent / "run_configs" / "tag_continuous.yaml"
    cfg = load_run_config(path, ["trainer.env_backend=pycuda", "trainer.seed=7", f"saving.basedir={tmp_path}", *overrides])
    env = get_example_env_class("tag_continuous")(**cfg.env)
    w = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend="pycuda")
    t = Trainer(w, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, results_dir=str(tmp_path / "run"))
    t.env_wrapper.reset_all_envs()
    return t


def _state(t, lasts) -> dict[str, torch.Tensor]:
    out = {f"last{i}.{tag}": v for i, last in enumerate(lasts) for tag, v in last.items()}
    for tag, p in t.policies.items():
        for field in p.buffers.__dataclass_fields__:
            if field != "next_values":  # written only by the bootstrap order, read only when bootstrapping
                out[f"{tag}.{field}"] = getattr(p.buffers, field).clone()
        out.update({f"{tag}.weights.{k}": v.clone() for k, v in p.model.state_dict().items()})
    out.update({f"shared.{k}": v.clone() for k, v in vars(t.rollout.shared).items() if v is not None})
    out.update({f"sampler.{k}": v for k, v in t.sampler.counters_state().items()})
    return out


@pytest.mark.parametrize("graph", [True, False], ids=["cuda_graph", "eager"])
@pytest.mark.parametrize("overrides, iterations", [([], 4), (["env.episode_length=90"], 3)],
                         ids=["tutorial", "mid_rollout_resets"])
def test_tutorial_config_trains_the_same_in_both_step_orders(tmp_path, graph, overrides, iterations):
    states = {}
    for reset_first in (True, False):
        t = _tutorial_trainer(tmp_path / str(reset_first), [*overrides, f"trainer.use_cuda_graph={graph}"])
        assert t.rollout.reset_first  # the tutorial config does not bootstrap at time limits
        t.rollout.reset_first = reset_first
        lasts = []
        for _ in range(iterations):
            last = t.generate_rollout()
            lasts.append({k: v.clone() for k, v in last.items()})
            t.update(last)
        torch.cuda.synchronize()
        assert (t.graphed_rollout is not None and t.graphed_rollout.captured) == graph
        assert t.rollout.shared.done.any()  # episodes ended (and envs were reset) in the last rollout
        states[reset_first] = _state(t, lasts)
    a, b = states[True], states[False]
    assert a.keys() == b.keys()
    differ = [k for k in a if not torch.equal(a[k], b[k])]
    assert not differ
