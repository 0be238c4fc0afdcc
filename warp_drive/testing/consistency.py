"""Check that an env's CUDA kernel and its CPU reference compute the same thing.

:class:`EnvironmentCPUvsGPU` has two ways of running the CPU side, picked from the CPU env class:

- **vectorised** (envs with a ``numpy_step``, e.g. every env of this package): both backends start
  from the same host reset, receive the same actions every step, and *every* array with an env
  axis (state, observations, rewards, done flags, timesteps) is compared after every step and
  every reset, for several seeds and at least two finished episodes per env. By default the GPU
  state is then re-synchronised to the CPU state, so float32 rounding differences (``cosf`` vs
  NumPy's ``cos``) cannot grow into chaotic divergence: each step is checked from equal inputs.
- **gym style** (envs written for 2.7.1, whose ``step(actions)`` runs one env and returns
  ``(obs, rew, done, info)``): as 2.7.1 did, ``num_envs`` CPU instances are reset and stepped one
  by one next to a GPU wrapper, for ``num_episodes * episode_length`` steps; observations,
  rewards and done flags are compared after every step and after every reset.

Either way the first mismatch raises :class:`~warp_drive.errors.ConsistencyError` naming the config, seed,
step, array, env, agent, feature, both values and how many values differ (and :data:`SEED_HINT` if it applies).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from warp_drive.compat271.data_loader import create_and_push_data_placeholders
from warp_drive.vocab.constants import Constants
from warp_drive.env.context import has_vectorised_cpu_step
from warp_drive.env.placeholders import get_obs
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, ConsistencyError
from warp_drive.managers.data_manager import positive_int
from warp_drive.utils.spaces import to_gymnasium

logger = logging.getLogger(__name__)

#: Said when ``gpu_env_backend="cpu"``: both sides then run the NumPy step.
CPU_ONLY_WARNING = (
    "EnvironmentCPUvsGPU(gpu_env_backend='cpu') compares {cls}'s NumPy step with itself: it checks that the step "
    "and its resets run and repeat, not that the CUDA kernel agrees; run it with gpu_env_backend='pycuda' on a GPU "
    "to check the kernel (docs/adding_an_env.md, \"What a CPU-only author can check\")")

#: default (atol, rtol) for float arrays of vectorised envs; int arrays must match exactly
DEFAULT_TOLERANCE = (1e-5, 1e-4)
#: 2.7.1's default threshold (percent) for gym-style envs
DEFAULT_THRESHOLD_PCT = 1.0
_EPSILON = 1e-10
#: name of the ``__constant__`` action table 2.7.1's gridworld kernel reads (pushed when declared)
ACTION_TABLE_SYMBOL = "kIndexToActionArr"
#: added to a mismatch at the first reset where every value differs and the env config has no seed
SEED_HINT = "every value differs at the first reset: seed both sides alike (env config `seed`)"


@dataclass
class ConsistencyReport:
    """What was compared."""

    configs: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    steps: int = 0
    episodes_completed: int = 0
    arrays: list[str] = field(default_factory=list)
    max_abs_error: dict[str, float] = field(default_factory=dict)


# ============================================================================ random actions
def _random_action(space: Any, rng: np.random.Generator) -> Any:
    space = to_gymnasium(space)
    if isinstance(space, spaces.Discrete):
        return np.int32(rng.integers(0, space.n) + int(space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return (rng.integers(0, space.nvec) + space.start).astype(np.int32)
    if isinstance(space, spaces.Box):  # gymnasium's low and high have the space's shape
        return rng.uniform(space.low, space.high).astype(np.float32)
    raise ConsistencyError(f"cannot draw random actions for {space}; use Discrete, MultiDiscrete or Box")


def generate_random_actions(env: Any, num_envs: int, seed: Any = None) -> list[dict[Any, Any]]:
    """One random action per agent for each of ``num_envs`` envs: ``[{agent_id: action}, ...]``.

    ``seed``: an int, a ``numpy.random.Generator`` (drawn from, so successive calls differ) or None.
    The global NumPy RNG is never touched (2.7.1 re-seeded it on every call).
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    ids = list(env.action_space)
    return [{a: _random_action(env.action_space[a], rng) for a in ids} for _ in range(num_envs)]


def random_actions(action_space: Mapping[Any, Any], num_envs: int, rng: np.random.Generator) -> np.ndarray:
    """(E, N, heads) random actions within each agent's space (agents in sorted id order)."""
    agents = sorted(action_space)
    cols = []
    for a in agents:
        space = to_gymnasium(action_space[a])
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


def _first_mismatch(bad: np.ndarray, a: np.ndarray, b: np.ndarray, config: str, seed: int, step: Any, name: str,
                    unseeded: bool = False) -> str:
    """The first bad entry's message, with :data:`SEED_HINT` when ``unseeded`` and every value differs at the first reset."""
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    env = idx[0] if idx else "-"
    agent = idx[1] if len(idx) > 1 else "-"
    feature = idx[2:] if len(idx) > 2 else "-"
    hint = f"; {SEED_HINT}" if unseeded and step == "reset" and bad.all() else ""
    return (
        f"[{config}, seed {seed}] step {step}: '{name}' differs at env {env}, agent {agent}, feature {feature}: "
        f"cpu={a[idx].item()!r} gpu={b[idx].item()!r} ({int(bad.sum())} of {int(bad.size)} values differ){hint}"
    )


class EnvironmentCPUvsGPU:
    """Compare the CPU reference and the CUDA kernel of an env (see the module docstring).

    The arguments are 2.7.1's, in 2.7.1's order; the keyword arguments are extras.

    Args:
        cpu_env_class, cuda_env_class: the two classes; or
        dual_mode_env_class: one class for both sides.
        env_configs: ``{label: constructor kwargs}``; each is checked.
        num_envs: replicas per backend.
        blocks_per_env: CUDA blocks per env (None: automatic).
        assert_equal_num_agents_per_block: require ``num_agents % blocks_per_env == 0``.
        num_episodes: episodes every env must finish (vectorised envs: at least 2).
        gpu_env_backend: "pycuda" (the env's CUDA C step) or "numba" (its Numba step).
        use_gpu_testing_mode, testing_bin_filename: passed to the wrapper as ``testing_mode`` /
            ``testing_bin_filename`` (see :class:`~warp_drive.env.env_wrapper.EnvWrapper`).
        env_registrar: where env classes and CUDA sources are registered.
        env_wrapper: the wrapper class.
        policy_tag_to_agent_id_map, create_separate_placeholders_for_each_policy, obs_dim_corresponding_to_num_agents:
            placeholder layout for envs whose step writes per-policy placeholders (see
            :func:`~warp_drive.compat271.data_loader.create_and_push_data_placeholders`).

    Keyword Args:
        tolerances: ``{array name: (atol, rtol)}`` for vectorised envs, overriding
            :data:`DEFAULT_TOLERANCE` and the env class's ``consistency_tolerances``.
        resync: copy the CPU state into the GPU store after each compared step (vectorised envs).
        max_steps: stop after this many steps.
    """

    def __init__(
        self,
        cpu_env_class: type | None = None,
        cuda_env_class: type | None = None,
        dual_mode_env_class: type | None = None,
        env_configs: Mapping[str, Mapping[str, Any]] | None = None,
        num_envs: int = 3,
        blocks_per_env: int | None = None,
        assert_equal_num_agents_per_block: bool = False,
        num_episodes: int = 2,
        gpu_env_backend: str = "pycuda",
        use_gpu_testing_mode: bool = False,
        testing_bin_filename: str | None = None,
        env_registrar: Any = None,
        env_wrapper: Callable[..., Any] = EnvWrapper,
        policy_tag_to_agent_id_map: Mapping[str, Sequence[Any]] | None = None,
        create_separate_placeholders_for_each_policy: bool = False,
        obs_dim_corresponding_to_num_agents: str = "first",
        *,
        tolerances: Mapping[str, tuple[float, float]] | None = None,
        resync: bool = True,
        max_steps: int | None = None,
    ) -> None:
        if dual_mode_env_class is not None:
            cpu_env_class = cuda_env_class = dual_mode_env_class
        if cpu_env_class is None or cuda_env_class is None:
            raise ConfigError("pass dual_mode_env_class=, or both cpu_env_class= and cuda_env_class=")
        for name, cls in (("cpu_env_class", cpu_env_class), ("cuda_env_class", cuda_env_class)):
            if not isinstance(cls, type):
                raise ConfigError(f"{name} must be an env class, got {type(cls).__name__} ({cls!r})")
        self.cpu_env_class = cpu_env_class
        self.cuda_env_class = cuda_env_class
        self.env_configs = dict(env_configs or {"default": {}})
        self.num_envs = positive_int("num_envs", num_envs)
        self.blocks_per_env = blocks_per_env
        self.assert_equal_num_agents_per_block = bool(assert_equal_num_agents_per_block)
        self.num_episodes = int(num_episodes)
        self.gpu_env_backend = gpu_env_backend
        self.use_gpu_testing_mode = bool(use_gpu_testing_mode)
        self.testing_bin_filename = testing_bin_filename
        self.env_registrar = env_registrar
        self.env_wrapper = env_wrapper
        self.policy_tag_to_agent_id_map = policy_tag_to_agent_id_map
        self.create_separate_placeholders_for_each_policy = bool(create_separate_placeholders_for_each_policy)
        self.obs_dim_corresponding_to_num_agents = obs_dim_corresponding_to_num_agents
        self.tolerances = {**getattr(cuda_env_class, "consistency_tolerances", {}), **dict(tolerances or {})}
        self.resync = resync
        self.max_steps = max_steps
        #: True: the CPU side is the env's vectorised NumPy step; False: gym-style instances.
        self.vectorised = has_vectorised_cpu_step(cpu_env_class)
        self._unseeded = False  # the config being checked has no seed: each side draws its own starts
        if str(gpu_env_backend).lower() == "cpu":
            warnings.warn(CPU_ONLY_WARNING.format(cls=getattr(cuda_env_class, "__name__", cuda_env_class)), stacklevel=2)

    def test_env_reset_and_step(
        self,
        consistency_threshold_pct: float | None = None,
        seed: int | None = None,
        *,
        seeds: Sequence[int] | None = None,
    ) -> ConsistencyReport:
        """Run every config (for each seed); raise :class:`ConsistencyError` on the first mismatch.

        Args:
            consistency_threshold_pct: a float value passes when it differs by less than
                ``pct / 100`` or by less than ``pct`` percent (2.7.1's rule). Default: 1 for
                gym-style envs; vectorised envs then use their per-array tolerances.
            seed: seed of the random actions (one run); default: seeds 0 and 1.
            seeds: several seeds (keyword only).

        Returns:
            A :class:`ConsistencyReport` of what was compared.
        """
        if seed is not None and seeds is not None:
            raise ConfigError("pass seed= or seeds=, not both")
        seed_list = [int(seed)] if seed is not None else [int(s) for s in (seeds if seeds is not None else (0, 1))]
        if consistency_threshold_pct is not None and not consistency_threshold_pct > 0:
            raise ConfigError(f"consistency_threshold_pct must be > 0 (a percentage), got {consistency_threshold_pct!r}")
        report = ConsistencyReport(seeds=seed_list)
        for label, config in self.env_configs.items():
            report.configs.append(label)
            self._unseeded = config.get("seed") is None
            for s in seed_list:
                logger.info("consistency check: config %s, seed %d", label, s)
                if self.vectorised:
                    self._run_vectorised(label, dict(config), s, report, consistency_threshold_pct)
                else:
                    pct = DEFAULT_THRESHOLD_PCT if consistency_threshold_pct is None else consistency_threshold_pct
                    self._run_gym_style(label, dict(config), s, report, pct)
        return report

    # ------------------------------------------------------------------------------------------ building
    def _gpu_wrapper(self, config: dict) -> Any:
        name = getattr(self.cuda_env_class, "name", "")
        registrar = self.env_registrar
        from_registrar = registrar is not None and name and registrar.has_env(name, self.gpu_env_backend)
        kwargs: dict[str, Any] = dict(
            env_obj=None if from_registrar else self.cuda_env_class(**config),
            env_name=name,
            env_config=config,
            num_envs=self.num_envs,
            blocks_per_env=self.blocks_per_env,
            env_backend=self.gpu_env_backend,
            env_registrar=registrar,
        )
        if self.use_gpu_testing_mode:
            kwargs.update(testing_mode=True, testing_bin_filename=self.testing_bin_filename)
        wrapper = self.env_wrapper(**kwargs)
        if self.assert_equal_num_agents_per_block and wrapper.n_agents % int(wrapper.blocks_per_env):
            raise ConfigError(
                f"{wrapper.n_agents} agents do not split evenly over blocks_per_env={wrapper.blocks_per_env} "
                f"(assert_equal_num_agents_per_block=True); pick a divisor of the agent count"
            )
        wrapper.reset_all_envs()
        self._push_placeholders(wrapper)
        self._push_action_table(wrapper)
        return wrapper

    def _push_placeholders(self, wrapper: Any) -> None:
        if self.create_separate_placeholders_for_each_policy or self.policy_tag_to_agent_id_map is not None:
            create_and_push_data_placeholders(
                env_wrapper=wrapper,
                action_sampler=None,
                policy_tag_to_agent_id_map=self.policy_tag_to_agent_id_map,
                create_separate_placeholders_for_each_policy=self.create_separate_placeholders_for_each_policy,
                obs_dim_corresponding_to_num_agents=self.obs_dim_corresponding_to_num_agents,
                training_batch_size_per_env=None,
                push_data_batch_placeholders=False,
            )

    @staticmethod
    def _push_action_table(wrapper: Any) -> None:
        """Fill :data:`ACTION_TABLE_SYMBOL` from ``env.step_actions`` when the compiled source declares it."""
        env, fm, dm = wrapper.env, wrapper.cuda_function_manager, wrapper.cuda_data_manager
        if not (hasattr(env, "step_actions") and hasattr(fm, "initialize_shared_constants")
                and ACTION_TABLE_SYMBOL in (getattr(fm, "source", None) or "")):
            return
        table = np.asarray(env.step_actions, np.int32)
        try:
            dm.shared_constant(ACTION_TABLE_SYMBOL)
        except KeyError:
            dm.add_shared_constants({ACTION_TABLE_SYMBOL: table})
        fm.initialize_shared_constants(dm, constant_names=[ACTION_TABLE_SYMBOL])

    def _agent_groups(self, wrapper: Any) -> list[tuple[str, list[Any]]]:
        """(placeholder suffix, agent ids) for each placeholder set."""
        if self.create_separate_placeholders_for_each_policy:
            return [(f"_{tag}", list(agents)) for tag, agents in self.policy_tag_to_agent_id_map.items()]
        return [("", sorted(wrapper.env.action_space))]

    def _push_actions(self, wrapper: Any, actions: np.ndarray) -> None:
        """``actions`` (E, N, heads), agents in sorted id order, into each action placeholder."""
        dm = wrapper.cuda_data_manager
        position = {a: i for i, a in enumerate(sorted(wrapper.env.action_space))}
        for suffix, agents in self._agent_groups(wrapper):
            name = Constants.ACTIONS + suffix
            idx = [position[a] for a in agents]
            dm.assign(name, np.ascontiguousarray(actions[:, idx]).astype(np.dtype(dm.get_dtype(name))))

    # ------------------------------------------------------------------------------------------ vectorised
    def _make_cpu_wrapper(self, config: dict) -> Any:
        wrapper = self.env_wrapper(
            env_obj=self.cpu_env_class(**config), num_envs=self.num_envs, blocks_per_env=self.blocks_per_env,
            env_backend="cpu",
        )
        wrapper.reset_all_envs()
        self._push_placeholders(wrapper)
        return wrapper

    def _run_vectorised(self, label: str, config: dict, seed: int, report: ConsistencyReport, pct: float | None) -> None:
        cpu = self._make_cpu_wrapper(config)
        gpu = self._gpu_wrapper(config)
        cdm, gdm = cpu.cuda_data_manager, gpu.cuda_data_manager
        names = [n for n in cdm.names() if not n.endswith(Constants.LOG_SUFFIX) and n not in cdm.scalar_data_list
                 and cdm.get_shape(n)[:1] == (self.num_envs,) and n not in cdm.reset_target_to_pool.values()]
        report.arrays = sorted(set(report.arrays) | set(names))
        rng = np.random.default_rng(seed)
        self._compare(cdm, gdm, names, label, seed, "reset", report, pct)
        episodes = np.zeros(self.num_envs, np.int64)
        num_episodes = max(2, self.num_episodes)
        limit = self.max_steps or (num_episodes + 1) * cpu.episode_length + 10
        for step in range(limit):
            actions = random_actions(cpu.env.action_space, self.num_envs, rng)
            self._push_actions(cpu, actions)
            self._push_actions(gpu, actions)
            cpu.step_all_envs()
            gpu.step_all_envs()
            self._compare(cdm, gdm, names, label, seed, step, report, pct)
            episodes += cdm.pull_data_from_device(Constants.DONE) > 0
            cpu.reset_only_done_envs()
            gpu.reset_only_done_envs()
            self._compare(cdm, gdm, names, label, seed, f"{step} (after reset)", report, pct)
            if self.resync:
                for n in names:
                    gdm.assign(n, cdm.pull_data_from_device(n))
            report.steps += 1
            if episodes.min() >= num_episodes:
                break
        if self.max_steps is None and episodes.min() < num_episodes:
            raise ConsistencyError(
                f"[{label}, seed {seed}] only {int(episodes.min())} episodes finished in {limit} steps; "
                f"the check needs {num_episodes}"
            )
        report.episodes_completed += int(episodes.sum())

    def _compare(self, cdm: Any, gdm: Any, names: list[str], label: str, seed: int, step: Any,
                 report: ConsistencyReport, pct: float | None) -> None:
        for name in names:
            a = cdm.pull_data_from_device(name)
            b = gdm.pull_data_from_device(name)
            if a.dtype.kind == "f":
                atol, rtol = self.tolerances.get(name, DEFAULT_TOLERANCE if pct is None else (pct / 100.0, pct / 100.0))
                bad = ~np.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
                err = float(np.nanmax(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
                report.max_abs_error[name] = max(report.max_abs_error.get(name, 0.0), err)
            else:
                bad = a != b
            if bad.any():
                raise ConsistencyError(_first_mismatch(bad, a, b, label, seed, step, name, self._unseeded))

    # ------------------------------------------------------------------------------------------ gym style
    def _make_cpu_env(self, config: dict) -> Any:
        name = getattr(self.cpu_env_class, "name", "")
        registrar = self.env_registrar
        if registrar is not None and name and registrar.has_env(name, "cpu"):
            return registrar.get(name, "cpu")(**config)
        return self.env_wrapper(env_obj=self.cpu_env_class(**config), env_backend="cpu")

    def _run_gym_style(self, label: str, config: dict, seed: int, report: ConsistencyReport, pct: float) -> None:
        E = self.num_envs
        cpu_envs = [self._make_cpu_env(config) for _ in range(E)]
        obs = [env.reset() for env in cpu_envs]
        gpu = self._gpu_wrapper(config)
        dm = gpu.cuda_data_manager
        ids = sorted(gpu.env.action_space)
        rng = np.random.default_rng(seed)
        self._check_obs(obs, gpu, label, seed, "reset", report, pct)
        steps = self.max_steps or max(1, self.num_episodes) * gpu.episode_length
        episodes = np.zeros(E, np.int64)
        for t in range(1, steps + 1):
            actions = generate_random_actions(gpu.env, E, rng)
            stacked = np.atleast_3d(np.stack([np.stack([np.asarray(d[a]) for a in ids]) for d in actions]))
            self._push_actions(gpu, stacked)
            results = [env.step(a) for env, a in zip(cpu_envs, actions)]
            gpu.step_all_envs()
            obs = [r[0] for r in results]
            self._check_obs(obs, gpu, label, seed, t, report, pct)
            self._check_rewards([r[1] for r in results], gpu, label, seed, t, report, pct)
            done_cpu = np.array([bool(r[2]["__all__"]) for r in results])
            done_gpu = dm.pull_data_from_device(Constants.DONE) > 0
            bad = done_cpu != done_gpu
            if bad.any():
                raise ConsistencyError(_first_mismatch(bad, done_cpu, done_gpu, label, seed, t, "done"))
            episodes += done_cpu
            gpu.reset_only_done_envs()
            left = dm.pull_data_from_device(Constants.DONE)
            if left.any():
                raise ConsistencyError(
                    f"[{label}, seed {seed}] step {t}: done flags {left.tolist()} are still set after reset_only_done_envs()"
                )
            if done_cpu.any():
                for e in np.flatnonzero(done_cpu):
                    obs[e] = cpu_envs[e].reset()
                self._check_obs(obs, gpu, label, seed, f"{t} (after reset)", report, pct)
            report.steps += 1
        report.episodes_completed += int(episodes.sum())

    def _check_obs(self, obs: list, gpu: Any, label: str, seed: int, step: Any, report: ConsistencyReport, pct: float) -> None:
        dm = gpu.cuda_data_manager
        axis = self.obs_dim_corresponding_to_num_agents if self.create_separate_placeholders_for_each_policy else "first"
        for suffix, agents in self._agent_groups(gpu):
            first = obs[0][agents[0]]
            keys = list(first) if isinstance(first, Mapping) else [None]
            for key in keys:
                name = Constants.OBSERVATIONS + suffix + (f"_{key}" if key is not None else "")
                cpu = np.stack([get_obs(o, agents, axis, obs_key=key) for o in obs]).astype(np.float32)
                gpu_value = dm.pull_data_from_device(name)
                self._check_values(cpu.reshape(gpu_value.shape), gpu_value, name, label, seed, step, report, pct)

    def _check_rewards(self, rewards: list, gpu: Any, label: str, seed: int, step: Any, report: ConsistencyReport,
                       pct: float) -> None:
        dm = gpu.cuda_data_manager
        for suffix, agents in self._agent_groups(gpu):
            name = Constants.REWARDS + suffix
            cpu = np.array([[r[a] for a in agents] for r in rewards], dtype=np.float32)
            self._check_values(cpu, dm.pull_data_from_device(name), name, label, seed, step, report, pct)

    def _check_values(self, cpu: np.ndarray, gpu: np.ndarray, name: str, label: str, seed: int, step: Any,
                      report: ConsistencyReport, pct: float) -> None:
        """2.7.1's rule: a value passes when it differs by < pct/100 or by < pct percent."""
        if name not in report.arrays:
            report.arrays.append(name)
        a, b = cpu.astype(np.float64), gpu.astype(np.float64)
        diff = np.abs(a - b)
        rel_pct = diff / np.abs(_EPSILON + a) * 100.0
        ok = (diff < pct / 100.0) | (rel_pct < pct) | (np.isnan(a) & np.isnan(b))
        if a.size:
            report.max_abs_error[name] = max(report.max_abs_error.get(name, 0.0), float(np.nanmax(diff)))
        if not ok.all():
            raise ConsistencyError(_first_mismatch(~ok, cpu, gpu, label, seed, step, name, self._unseeded))
