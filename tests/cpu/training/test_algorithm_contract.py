"""The algorithm seam as a checked contract (issue 38 item 1): an algorithm written outside the
package registers with one call and trains through ``build_trainer`` on the cpu backend and under
Lightning (a policy with no optimizer: Lightning drives no optimizer for it); a policy
class that misses part of the :class:`~warp_drive.training.algorithms.Policy` contract is refused
at registration with a :class:`~warp_drive.errors.PolicyContractError` naming what is missing."""

from __future__ import annotations

import importlib
import textwrap

import pytest
import torch

from warp_drive.config import RunConfig
from warp_drive.config import algorithms as registry
from warp_drive.errors import ConfigError, PolicyContractError
from warp_drive.training.algorithms import AlgorithmEntry, Policy, register_algorithm
from warp_drive.training.run.build import build_trainer
from tests.helpers.toy_env import ToyLine

#: a whole algorithm, as a user writes it in a package of their own: no file of warp_drive is edited
TOY_ALGORITHM = '''
"""Uniform-random acting, a no-op update: the smallest algorithm behind the seam."""
from dataclasses import dataclass

import torch

from warp_drive.vocab.constants import Constants
from warp_drive.training.algorithms import Policy
from warp_drive.training.algorithms.transitions import TransitionBuffers
from warp_drive.training.models.action_spec import action_heads_from_space


@dataclass(frozen=True)
class RandomConfig:
    algorithm: str = "RANDOM"
    to_train: bool = True
    num_minibatches: int = 1

    @classmethod
    def from_dict(cls, section, prefix="policy"):
        section = dict(section or {})
        unknown = set(section) - {"algorithm", "to_train"}
        if unknown:
            raise ValueError(f"{prefix}: unknown keys {sorted(unknown)}")
        return cls(algorithm=str(section.get("algorithm", "RANDOM")).upper(), to_train=bool(section.get("to_train", True)))

    def to_dict(self):
        return {"algorithm": self.algorithm, "to_train": self.to_train}


class RandomPolicy(Policy):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.action_spec = action_heads_from_space(ctx.action_space())
        self.num_actions = self.action_spec.categorical[0]
        self.action_name = Constants.ACTIONS
        self.model = torch.nn.Identity()
        self.generator = ctx.generator
        self.buffers = TransitionBuffers.allocate(ctx.steps_per_iter, ctx.observe(self), 1)
        self.updates = 0

    def act(self, outputs, greedy):
        E, A = outputs.shape[:2]
        return torch.randint(0, self.num_actions, (E, A, 1), generator=self.generator, device=outputs.device)

    def update(self, batch, context):
        self.updates += 1
        return {"mean_reward": self.buffers.rewards.mean()}

    def state_dict(self):
        return {"timestep": self.timestep, "updates": self.updates}

    def load_state_dict(self, state):
        self.timestep, self.updates = int(state["timestep"]), int(state["updates"])
'''


@pytest.fixture
def clean_registry():
    saved = dict(registry._REGISTRY)
    yield registry
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


@pytest.fixture
def outside_package(tmp_path, monkeypatch):
    """``toy_algo`` written into tmp_path and imported by path (not part of warp_drive)."""
    pkg = tmp_path / "pkg" / "toy_algo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(TOY_ALGORITHM))
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    importlib.invalidate_caches()
    yield importlib.import_module("toy_algo")
    monkeypatch.delitem(__import__("sys").modules, "toy_algo", raising=False)


def _config(tmp_path, algorithm="random"):
    return RunConfig.from_dict({
        "name": "toy_line", "env": {"num_agents": 3, "episode_length": 5},
        "trainer": {"num_envs": 4, "train_batch_size": 20, "num_episodes": 12, "env_backend": "cpu", "seed": 1},
        "policy": {"shared": {"algorithm": algorithm, "to_train": True}},
        "saving": {"metrics_log_freq": 1, "model_params_save_freq": 1000, "basedir": str(tmp_path)}})


def test_an_algorithm_from_outside_the_package_registers_and_trains(tmp_path, clean_registry, outside_package):
    register_algorithm(AlgorithmEntry("RANDOM", section="toy_algo:RandomConfig", policy="toy_algo:RandomPolicy",
                                      summary="uniform-random acting, no-op update"))
    cfg = _config(tmp_path)
    assert isinstance(cfg.policy["shared"], outside_package.RandomConfig)
    trainer = build_trainer(cfg, ToyLine, backend="cpu", results_dir=tmp_path / "run", verbose=False)
    trainer.train(3)
    policy = trainer.engine.policies["shared"] if hasattr(trainer, "engine") else trainer.policies["shared"]
    assert isinstance(policy, outside_package.RandomPolicy) and policy.updates == 3
    actions = policy.buffers.actions
    assert actions.shape == (5, 4, 3, 1) and set(actions.unique().tolist()) <= {0.0, 1.0, 2.0}
    assert torch.isfinite(policy.buffers.rewards).all()


def _entry(name, cls_path="toy_algo:RandomPolicy"):
    return AlgorithmEntry(name, section="toy_algo:RandomConfig", policy=cls_path)


def test_a_policy_class_missing_hooks_is_refused_naming_them(clean_registry, outside_package):
    class NoUpdate(outside_package.RandomPolicy):
        update = Policy.update
        act = Policy.act

    outside_package.NoUpdate = NoUpdate
    with pytest.raises(PolicyContractError, match=r"does not implement update, act; subclass") as info:
        register_algorithm(_entry("BROKEN", "toy_algo:NoUpdate"))
    assert info.value.missing == ("update", "act") and isinstance(info.value, ConfigError)
    assert "BROKEN" not in registry.algorithm_names()


def test_a_class_that_is_no_policy_is_refused(clean_registry, outside_package):
    outside_package.NotAPolicy = type("NotAPolicy", (), {"build": classmethod(lambda cls, ctx: cls())})
    with pytest.raises(PolicyContractError, match="is not a subclass of warp_drive.training.algorithms.Policy"):
        register_algorithm(_entry("NOTPOLICY", "toy_algo:NotAPolicy"))


def test_a_built_policy_missing_fields_is_refused_by_the_engine(tmp_path, clean_registry, outside_package):
    """A plain builder function cannot be checked at registration; the engine checks what it builds."""
    class NoBuffers(outside_package.RandomPolicy):
        def __init__(self, ctx):
            super().__init__(ctx)
            self.buffers = None

    outside_package.build_without_buffers = NoBuffers
    register_algorithm(AlgorithmEntry("NOBUF", section="toy_algo:RandomConfig",
                                      policy="toy_algo:build_without_buffers"))
    with pytest.raises(PolicyContractError, match="does not set buffers"):
        build_trainer(_config(tmp_path, "nobuf"), ToyLine, backend="cpu", results_dir=tmp_path / "run", verbose=False)


def test_the_built_in_entries_meet_the_contract():
    from warp_drive.training.algorithms.base import check_entry

    for name in ("A2C", "PPO", "DDPG", "SAC"):
        check_entry(registry.algorithm_entry(name))


def test_the_toy_algorithm_trains_under_lightning(tmp_path, clean_registry, outside_package):
    """The same entry, no other code: Lightning drives the toy policy 2 iterations (no optimizer, no gradients)."""
    pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")
    from tests.cpu.training.test_lightning import _fit
    from warp_drive.training.lightning import WarpDriveModule

    register_algorithm(AlgorithmEntry("RANDOM", section="toy_algo:RandomConfig", policy="toy_algo:RandomPolicy"))
    trainer = build_trainer(_config(tmp_path), ToyLine, backend="cpu", results_dir=tmp_path / "run", verbose=False)
    module = WarpDriveModule(trainer, iterations_per_epoch=1)
    assert module.num_optimizers == 0
    _fit(module, tmp_path / "lightning", max_epochs=2, checkpoint=False, perf_stats=False)
    policy = module.engine.policies["shared"]
    assert isinstance(policy, outside_package.RandomPolicy) and policy.updates == 2
    assert module.engine.iteration == 2 and policy.timestep == 2 * 4 * 5
    assert set(policy.buffers.actions.unique().tolist()) <= {0.0, 1.0, 2.0}
