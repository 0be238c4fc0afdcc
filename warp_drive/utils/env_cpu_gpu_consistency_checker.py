"""Check that an env's CUDA kernel and its NumPy reference compute the same thing.

Both backends start from the same host reset, receive the same actions every step, and every
array of the env (state, observations, rewards, done flags, timesteps) is compared after every
step and every reset, for several seeds and at least two episodes per env. The first mismatch is
reported as (config, seed, step, env, agent, feature, CPU value, GPU value).

By default the GPU state is re-synchronised to the CPU state after each compared step, so
float32 rounding differences (e.g. ``cosf`` vs NumPy's ``cos``) cannot accumulate into chaotic
divergence: each step is checked from identical inputs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from warp_drive.errors import ConsistencyError
from warp_drive.utils.constants import Constants

logger = logging.getLogger(__name__)

#: default (atol, rtol) for float arrays; int arrays must match exactly
DEFAULT_TOLERANCE = (1e-5, 1e-4)


@dataclass
class Mismatch:
    """First disagreement between the backends."""

    config: str
    seed: int
    step: int
    name: str
    index: tuple[int, ...]
    cpu_value: float
    gpu_value: float

    def __str__(self) -> str:
        env = self.index[0] if self.index else "-"
        agent = self.index[1] if len(self.index) > 1 else "-"
        feature = self.index[2:] if len(self.index) > 2 else "-"
        return (
            f"[{self.config}, seed {self.seed}] step {self.step}: '{self.name}' differs at env {env}, "
            f"agent {agent}, feature {feature}: cpu={self.cpu_value!r} gpu={self.gpu_value!r}"
        )


@dataclass
class ConsistencyReport:
    """What was compared."""

    configs: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    steps: int = 0
    episodes_completed: int = 0
    arrays: list[str] = field(default_factory=list)
    max_abs_error: dict[str, float] = field(default_factory=dict)


def random_actions(action_space: Mapping[Any, spaces.Space], num_envs: int, rng: np.random.Generator) -> np.ndarray:
    """(E, N, heads) random actions within each agent's space."""
    agents = sorted(action_space)
    cols = []
    for a in agents:
        space = action_space[a]
        if isinstance(space, spaces.Discrete):
            cols.append(rng.integers(0, space.n, size=(num_envs, 1)).astype(np.int32) + int(space.start))
        elif isinstance(space, spaces.MultiDiscrete):
            cols.append(rng.integers(0, space.nvec.reshape(-1), size=(num_envs, space.nvec.size)).astype(np.int32))
        elif isinstance(space, spaces.Box):
            low = np.broadcast_to(space.low, space.shape).reshape(-1)
            high = np.broadcast_to(space.high, space.shape).reshape(-1)
            cols.append(rng.uniform(low, high, size=(num_envs, low.size)).astype(np.float32))
        else:
            raise ConsistencyError(f"cannot draw random actions for {space}")
    return np.stack(cols, axis=1)


class EnvironmentCPUvsGPU:
    """Compare the pycuda and cpu backends of a dual-mode env.

    Args:
        dual_mode_env_class: env class (a ``CUDAEnvironmentContext`` with a ``.cu`` and ``numpy_step``).
        env_configs: ``{label: constructor kwargs}``; each is checked.
        num_envs: replicas per backend.
        blocks_per_env: CUDA blocks per env (None: automatic).
        num_episodes: episodes every env must finish (at least; more for early terminations).
        tolerances: ``{array name: (atol, rtol)}`` overriding :data:`DEFAULT_TOLERANCE` and the
            env class's ``consistency_tolerances`` attribute.
        resync: copy the CPU state into the GPU store after each compared step.
        env_wrapper: wrapper class (for tests).
        cpu_env_class, cuda_env_class: separate classes for the two sides (parity with the
            reference); default to ``dual_mode_env_class``.
    """

    def __init__(
        self,
        dual_mode_env_class: type | None = None,
        env_configs: Mapping[str, Mapping[str, Any]] | None = None,
        num_envs: int = 3,
        blocks_per_env: int | None = None,
        num_episodes: int = 2,
        tolerances: Mapping[str, tuple[float, float]] | None = None,
        resync: bool = True,
        env_wrapper: Callable[..., Any] | None = None,
        cpu_env_class: type | None = None,
        cuda_env_class: type | None = None,
        max_steps: int | None = None,
    ) -> None:
        from warp_drive.env_wrapper import EnvWrapper

        self.cpu_env_class = cpu_env_class or dual_mode_env_class
        self.cuda_env_class = cuda_env_class or dual_mode_env_class
        if self.cpu_env_class is None or self.cuda_env_class is None:
            raise ConsistencyError("pass dual_mode_env_class, or both cpu_env_class and cuda_env_class")
        self.env_configs = dict(env_configs or {"default": {}})
        self.num_envs = num_envs
        self.blocks_per_env = blocks_per_env
        self.num_episodes = max(2, num_episodes)
        # env classes may state their own per-array tolerances (e.g. float32 transcendental drift)
        self.tolerances = {**getattr(self.cuda_env_class, "consistency_tolerances", {}), **dict(tolerances or {})}
        self.resync = resync
        self.wrapper = env_wrapper or EnvWrapper
        self.max_steps = max_steps

    def test_env_reset_and_step(self, seeds: Sequence[int] = (0, 1), consistency_threshold_pct: float | None = None) -> ConsistencyReport:
        """Run every config for every seed; raise :class:`ConsistencyError` on the first mismatch.

        ``consistency_threshold_pct`` (reference parity) sets a relative tolerance for every
        float array, in percent.
        """
        report = ConsistencyReport(seeds=list(seeds))
        for label, config in self.env_configs.items():
            report.configs.append(label)
            for seed in seeds:
                self._run_one(label, dict(config), int(seed), report, consistency_threshold_pct)
        return report

    # ------------------------------------------------------------------------------------------
    def _make(self, cls: type, config: dict, backend: str) -> Any:
        wrapper = self.wrapper(
            env_obj=cls(**config), num_envs=self.num_envs, blocks_per_env=self.blocks_per_env, env_backend=backend
        )
        wrapper.reset_all_envs()
        return wrapper

    def _run_one(self, label: str, config: dict, seed: int, report: ConsistencyReport, pct: float | None) -> None:
        cpu = self._make(self.cpu_env_class, config, "cpu")
        gpu = self._make(self.cuda_env_class, config, "pycuda")
        cdm, gdm = cpu.cuda_data_manager, gpu.cuda_data_manager
        names = [n for n in cdm.names() if not n.endswith(Constants.LOG_SUFFIX) and n not in cdm.scalar_data_list
                 and cdm.get_shape(n)[:1] == (self.num_envs,) and n not in cdm.reset_target_to_pool.values()]
        report.arrays = sorted(set(report.arrays) | set(names))
        rng = np.random.default_rng(seed)
        self._compare(cdm, gdm, names, label, seed, -1, report, pct)
        episodes = np.zeros(self.num_envs, np.int64)
        T = cpu.episode_length
        limit = self.max_steps or (self.num_episodes + 1) * T + 10
        for step in range(limit):
            actions = random_actions(cpu.env.action_space, self.num_envs, rng)
            cpu.step_all_envs(actions)
            gpu.step_all_envs(actions)
            self._compare(cdm, gdm, names, label, seed, step, report, pct)
            episodes += cdm.pull_data_from_device(Constants.DONE) > 0
            cpu.reset_only_done_envs()
            gpu.reset_only_done_envs()
            self._compare(cdm, gdm, names, label, seed, step, report, pct, after_reset=True)
            if self.resync:
                for n in names:
                    gdm.assign(n, cdm.pull_data_from_device(n))
            report.steps += 1
            if episodes.min() >= self.num_episodes:
                break
        if episodes.min() < self.num_episodes:
            raise ConsistencyError(
                f"[{label}, seed {seed}] only {int(episodes.min())} episodes finished in {limit} steps; "
                f"the check needs {self.num_episodes}"
            )
        report.episodes_completed += int(episodes.sum())

    def _tol(self, name: str, pct: float | None) -> tuple[float, float]:
        if name in self.tolerances:
            return self.tolerances[name]
        if pct is not None:
            return (DEFAULT_TOLERANCE[0], pct / 100.0)
        return DEFAULT_TOLERANCE

    def _compare(self, cdm: Any, gdm: Any, names: list[str], label: str, seed: int, step: int,
                 report: ConsistencyReport, pct: float | None, after_reset: bool = False) -> None:
        for name in names:
            a = cdm.pull_data_from_device(name)
            b = gdm.pull_data_from_device(name)
            if a.dtype.kind == "f":
                atol, rtol = self._tol(name, pct)
                bad = ~np.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
                err = float(np.nanmax(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
                report.max_abs_error[name] = max(report.max_abs_error.get(name, 0.0), err)
            else:
                bad = a != b
            if bad.any():
                idx = tuple(int(i) for i in np.argwhere(bad)[0])
                where = f"{step} (after reset)" if after_reset else str(step)
                mismatch = Mismatch(label, seed, where, name, idx, a[idx].item(), b[idx].item())  # type: ignore[arg-type]
                raise ConsistencyError(str(mismatch))
