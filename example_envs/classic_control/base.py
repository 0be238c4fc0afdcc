"""Shared base of the single-agent classic-control envs (gymnasium's dynamics, one agent per env).

Each env keeps one float32 state row per replica in the data store array ``state`` (E, 1, d).
Its NumPy step (:meth:`ClassicControlEnv.numpy_step`, the spec) and its CUDA step kernel
(``<env>_step.cu``, one thread per env on a flat grid) compute gymnasium's transition from that
row in the precision gymnasium uses (float64 for CartPole, Acrobot, MountainCar and Pendulum;
float32 for ContinuousMountainCar, whose gymnasium state is float32), then store it as float32.

Episode bookkeeping (both backends; CUDA: ``classic_control.cuh``): ``_timestep_`` += 1;
``_done_`` = ``TERMINAL_DONE_VALUE`` (1, or 2 for the MountainCars: goal reached) on termination,
even at the time limit, else 1 when ``_timestep_ >= episode_length``, else 0; ``_truncated_`` = 1
when the time limit ends an episode that did not terminate, else 0.

Initial states follow gymnasium's reset distribution, drawn by a numpy Generator seeded with
``seed``: :meth:`reset` uses ``Generator(PCG64(SeedSequence(seed)))``, the generator gymnasium's
``reset(seed=seed)`` builds, so successive ``reset()`` calls reproduce gymnasium's successive
initial states (as float32). With ``reset_pool_size = P >= 2`` a pool of P initial states (and
their observations, aligned row by row) is drawn once from a child of that seed sequence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import numpy as np
from gymnasium import spaces

from example_envs import check_backend, whole_number
from warp_drive.utils.checks import closest_match
from warp_drive.env import ArraySpec, Constants, CUDAEnvironmentContext, DataFeed
from warp_drive.vocab.start_state import StartKey, uniform_in
from warp_drive.errors import ConfigError

#: Name of the per-env state array (E, 1, state_dim) in the data store.
STATE = "state"
#: Threads per block of the flat-grid step kernels (one thread per env).
THREADS_PER_BLOCK = 128


class PhysicsParam(NamedTuple):
    """One overridable physics constant of an env (declared in the env's ``constants.py``).

    Attributes:
        default: gymnasium's value.
        rule: ``"finite"``, ``"positive"``, ``"nonnegative"`` (finite floats), ``"bool"``, or a
            tuple of allowed strings.
        cuda_name: name in the CUDA prelude, or None when the kernel only uses constants derived
            from it. Floats travel as ``<cuda_name>Hi/Mid/Lo`` (see :func:`split_double`); bools
            as 0/1 ints; strings as their index in ``rule``.
    """

    default: Any
    rule: Any
    cuda_name: str | None


class Transition(NamedTuple):
    """Result of one vectorised step (E envs)."""

    state: np.ndarray  # (E, state_dim) float32: next state as stored
    obs: np.ndarray  # (E, obs_dim) float32: gymnasium's observation
    reward: np.ndarray  # (E,) float32: gymnasium's reward, cast to float32
    terminated: np.ndarray  # (E,) bool: gymnasium's `terminated`


def split_double(value: float) -> tuple[float, float, float]:
    """Three float32-representable floats ``(hi, mid, lo)`` with ``hi + mid + lo == value`` exactly.

    warp_drive's prelude renders Python floats as ``constexpr float``; the CUDA sources rebuild the
    float64 constant as ``double(hi) + double(mid) + double(lo)`` (exact: 3 x 24 bits >= 53).
    """
    value = float(value)
    if value != 0.0 and not 1e-20 < abs(value) < 1e30:
        raise ConfigError(
            f"physics constant {value!r} cannot travel to CUDA exactly; use 1e-20 < |value| < 1e30 (or 0)"
        )
    hi = float(np.float32(value))
    mid = float(np.float32(value - hi))
    lo = value - hi - mid
    if not (float(np.float32(lo)) == lo and hi + mid + lo == value):  # pragma: no cover
        raise ConfigError(f"physics constant {value!r} cannot be split into three floats exactly")
    return hi, mid, lo


def scalar_pow2(x: np.ndarray) -> np.ndarray:
    """``x**2`` as gymnasium computes it on a NumPy scalar: C ``pow(x, 2)`` (``powf`` for float32).

    pow is not always correctly rounded, so it differs from ``x * x`` (and from ``x ** 2`` on an
    array, which NumPy turns into ``x * x``) by one ulp for about 0.1% of inputs. An array
    exponent makes NumPy call pow element by element.
    """
    return np.power(x, np.full_like(x, 2))


def _check_value(env: str, key: str, value: Any, rule: Any) -> Any:
    """Validate one physics override; returns the normalised value or raises ConfigError."""
    if isinstance(rule, tuple):
        if value not in rule:
            raise ConfigError(f"{env}: {key}={value!r} is not allowed; expected one of {list(rule)}")
        return value
    if rule == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"{env}: {key}={value!r} must be a bool (true/false)")
        return bool(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{env}: {key}={value!r} must be a number, got {type(value).__name__}")
    value = float(value)
    ok = {
        "finite": math.isfinite(value),
        "positive": math.isfinite(value) and value > 0.0,
        "nonnegative": math.isfinite(value) and value >= 0.0,
    }[rule]
    if not ok:
        raise ConfigError(f"{env}: {key}={value!r} must be a {rule} finite number")
    if value != 0.0 and not 1e-20 < abs(value) < 1e30:
        raise ConfigError(f"{env}: {key}={value!r} is out of range; use 1e-20 < |{key}| < 1e30")
    return value


def _check_int(env: str, key: str, value: Any, minimum: int) -> int:
    value = whole_number(value)  # 1e3 or 10.0: that integer
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{env}: {key}={value!r} must be an integer >= {minimum}")
    return int(value)


def map_to_single_agent(value: Any) -> dict[int, Any]:
    """``{0: value}``: a single agent's value in the multi-agent dict layout."""
    return {0: value}


def get_action_for_single_agent(action: Mapping[int, Any]) -> Any:
    """The one action of a single-agent action dict ``{agent_id: action}``.

    Raises:
        ConfigError: ``action`` is not a dict with exactly one entry.
    """
    if not isinstance(action, Mapping) or len(action) != 1:
        raise ConfigError(f"a single-agent env takes actions as {{0: action}}, got {action!r}")
    return next(iter(action.values()))


class SingleAgentEnv:
    """Bookkeeping shared by single-agent envs (2.7.1's ``example_envs.single_agent.base`` class).

    Sets ``num_agents = 1``, ``agents = {0: True}``, ``episode_length``, ``env_backend``,
    ``reset_pool_size`` and ``seed``; ``action_space``, ``observation_space`` and ``timestep``
    start as None for the subclass to fill. A gym-style env written for 2.7.1 can keep deriving
    from it.

    Raises:
        ConfigError: ``episode_length`` is not a positive integer.
    """

    def __init__(
        self, episode_length: int = 500, env_backend: str = "cpu", reset_pool_size: int = 0, seed: int | None = None
    ) -> None:
        self.num_agents = 1
        self.agents = {0: True}
        self.episode_length = _check_int(type(self).__name__, "episode_length", episode_length, 1)
        self.action_space: Any = None
        self.observation_space: Any = None
        self.timestep: int | None = None
        self.env_backend = env_backend
        self.reset_pool_size = reset_pool_size
        self.seed = seed


class ClassicControlEnv(SingleAgentEnv, CUDAEnvironmentContext):
    """Base of the classic-control envs: one agent (id 0), state ``(E, 1, STATE_DIM)``.

    The first four arguments are 2.7.1's, in its order.

    Args:
        episode_length: time limit T (``_done_`` = 1 at ``_timestep_ >= T``).
        env_backend: ``"cpu"`` (NumPy step), ``"pycuda"`` (CUDA step kernel) or ``"numba"`` (Numba
            step kernel); the EnvWrapper sets the one it runs.
        reset_pool_size: 0 -> every reset restores the initial state of :meth:`reset`; P >= 2 ->
            each reset draws one of P initial states (state and observation pools, one row per
            env per reset, shared by both pools).
        seed: seed of the initial-state draws (None: fresh entropy). Also the pool-draw and
            start-state seed the wrapper uses (``env.seed``).
        fresh_start_states: True -> every reset draws a new initial state for each env replica and
            episode on the device, from gymnasium's reset distribution (:meth:`numpy_start_state`
            and its CUDA twin ``ClassicControlStartState``); False -> 2.7.1's resets (saved copy
            or pool).
        **physics: overrides of the env's physics constants (see its ``constants.PHYSICS``).

    Raises:
        ConfigError: on any invalid argument (unknown physics key with a did-you-mean hint).
    """

    # ----------------------------------------------------------- set by each env class
    STATE_DIM: ClassVar[int] = 0
    OBS_DIM: ClassVar[int] = 0
    #: Overridable physics constants: keyword -> PhysicsParam.
    PHYSICS: ClassVar[Mapping[str, PhysicsParam]] = MappingProxyType({})
    #: ``_done_`` value on termination (MountainCars: 2 = goal reached).
    TERMINAL_DONE_VALUE: ClassVar[int] = 1

    step_kernel_args: ClassVar[tuple] = (
        STATE,
        Constants.OBSERVATIONS,
        Constants.ACTIONS,
        Constants.REWARDS,
        Constants.DONE,
        Constants.TRUNCATED,
        Constants.TIMESTEP,
        ("episode_length", "meta"),
    )
    writes_truncation = True  # _truncated_: the time limit ended an episode that did not terminate
    #: Arguments of the start-state hook ``<name>StartState`` (classic_control.cuh).
    start_state_args: ClassVar[tuple] = (STATE, Constants.OBSERVATIONS)
    array_schema: ClassVar[Mapping[str, ArraySpec]] = MappingProxyType({
        STATE: ArraySpec((1, "STATE_DIM")),
        # with reset_pool_size P >= 2 only
        Constants.OBSERVATIONS: ArraySpec((1, "OBS_DIM"), optional=True),
        f"{STATE}_reset_pool": ArraySpec(("reset_pool_size", 1, "STATE_DIM"), optional=True),
        f"{Constants.OBSERVATIONS}_reset_pool": ArraySpec(("reset_pool_size", 1, "OBS_DIM"), optional=True),
    })

    def __init__(
        self,
        episode_length: int = 500,
        env_backend: str = "cpu",
        reset_pool_size: int = 0,
        seed: int | None = None,
        fresh_start_states: bool = False,
        **physics: Any,
    ) -> None:
        env = type(self).__name__
        if not isinstance(fresh_start_states, (bool, np.bool_)):
            raise ConfigError(f"{env}: fresh_start_states={fresh_start_states!r} must be true or false")
        self.fresh_start_states = bool(fresh_start_states)
        reset_pool_size = _check_int(env, "reset_pool_size", reset_pool_size, 0)
        if reset_pool_size == 1:
            raise ConfigError(
                f"{env}: reset_pool_size=1 is not a pool; use 0 (restore one saved initial state) "
                f"or >= 2 (draw one of that many initial states at every reset)"
            )
        if seed is not None:
            seed = _check_int(env, "seed", seed, 0)
        env_backend = check_backend(env, env_backend)  # "pycuda", "numba" or "cpu"
        super().__init__(episode_length, env_backend, reset_pool_size, seed)
        self.timestep = 0
        self.params: Mapping[str, Any] = MappingProxyType(self._resolve_physics(physics))
        self.observation_space = {0: self.make_observation_space()}
        self.action_space = {0: self.make_action_space()}
        seed_seq = np.random.SeedSequence(seed)
        self._reset_rng = np.random.Generator(np.random.PCG64(seed_seq))
        self._pool_rng = np.random.Generator(np.random.PCG64(seed_seq.spawn(1)[0]))
        self._pool: tuple[np.ndarray, np.ndarray] | None = None
        self.state: np.ndarray | None = None  # host initial state (STATE_DIM,) float32

    def reseed(self, seed: int) -> None:
        """Re-seed the initial-state draws and redraw the reset pool, as if the env had been built
        with ``seed``. Data already on a device is not touched: the interop adapters push a new
        pool (``reset(seed=...)``).

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        self.seed = _check_int(type(self).__name__, "seed", seed, 0)
        seed_seq = np.random.SeedSequence(self.seed)
        self._reset_rng = np.random.Generator(np.random.PCG64(seed_seq))
        self._pool_rng = np.random.Generator(np.random.PCG64(seed_seq.spawn(1)[0]))
        self._pool = None

    def reseed_start_states(self, seed: int) -> None:
        """Re-seed only the initial-state draws (the pool is kept): the next ``reset()`` returns
        gymnasium's ``reset(seed=seed)`` initial state.

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        seed = _check_int(type(self).__name__, "seed", seed, 0)
        self._reset_rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))

    def _resolve_physics(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        env = type(self).__name__
        params = {key: p.default for key, p in self.PHYSICS.items()}
        for key, value in overrides.items():
            if key not in self.PHYSICS:
                match = closest_match(key, self.PHYSICS)
                hint = f"did you mean {match!r}? " if match else ""
                raise ConfigError(
                    f"{env} got an unknown argument {key!r}; {hint}physics keys: {', '.join(self.PHYSICS)}"
                )
            params[key] = _check_value(env, key, value, self.PHYSICS[key].rule)
        self.check_physics(params)
        return params

    # ----------------------------------------------------------- per-env hooks
    def check_physics(self, params: Mapping[str, Any]) -> None:
        """Cross-parameter checks (e.g. min < max); raise ConfigError."""

    def make_observation_space(self) -> spaces.Box:
        raise NotImplementedError

    def make_action_space(self) -> spaces.Space:
        raise NotImplementedError

    def sample_initial_states(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, STATE_DIM) float32 initial states from gymnasium's reset distribution."""
        low, high = self.start_bounds()
        return rng.uniform(low, high, size=(n, self.STATE_DIM)).astype(np.float32)

    def start_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """gymnasium's reset distribution: state component i uniform in [low[i], high[i])."""
        raise NotImplementedError

    def observe(self, state: np.ndarray) -> np.ndarray:
        """(n, OBS_DIM) float32 observations of (n, STATE_DIM) float32 states."""
        raise NotImplementedError

    def transition(self, state: np.ndarray, action: np.ndarray) -> Transition:
        """gymnasium's step for (E, STATE_DIM) float32 states and (E,) actions."""
        raise NotImplementedError

    def extra_cuda_constants(self) -> dict[str, int | float]:
        """Derived constants for the prelude (float values are split like physics floats)."""
        return {}

    # ----------------------------------------------------------- host side
    def reset(self) -> dict[int, np.ndarray]:
        """Draw a new initial state (gymnasium's distribution); returns ``{0: obs}``."""
        self.state = self.sample_initial_states(self._reset_rng, 1)[0]
        return {0: self.observe(self.state[None, :])[0]}

    def numpy_start_state(self, data: Mapping[str, Any], rows: np.ndarray, key: StartKey) -> None:
        """Start-state hook: a fresh initial state (and its observation) for each reset env.

        State component i = ``uniform_in(word i of slot 0, low[i], high[i])`` (:meth:`start_bounds`);
        mirrored by ``ClassicControlStartState`` (classic_control.cuh).
        """
        low, high = self.start_bounds()
        state = uniform_in(key.words(0)[:, : self.STATE_DIM], np.asarray(low), np.asarray(high))
        data[STATE][rows, 0, :] = state
        data[Constants.OBSERVATIONS][rows, 0, :] = self.observe(state)

    def reset_pool(self) -> tuple[np.ndarray, np.ndarray]:
        """``(states (P, 1, d), observations (P, 1, obs_dim))``, drawn once and cached."""
        if self._pool is None:
            states = self.sample_initial_states(self._pool_rng, self.reset_pool_size)
            self._pool = (states[:, None, :], self.observe(states)[:, None, :])
        return self._pool

    def _host_state(self) -> np.ndarray:
        if self.state is None:
            self.reset()
        return self.state

    def get_data_dictionary(self) -> DataFeed:
        """``state`` (1, STATE_DIM): restored from its saved copy at reset unless pooled."""
        feed = DataFeed()
        feed.add_data(
            STATE,
            self._host_state()[None, :].copy(),
            save_copy_and_apply_at_reset=self.reset_pool_size == 0,
        )
        return feed

    def get_tensor_dictionary(self) -> DataFeed:
        """With a reset pool: ``observations`` (1, OBS_DIM), a pool target like ``state``."""
        feed = DataFeed()
        if self.reset_pool_size:
            obs = self.observe(self._host_state()[None, :])
            feed.add_data(Constants.OBSERVATIONS, obs)
        return feed

    def get_reset_pool_dictionary(self) -> DataFeed:
        """With ``reset_pool_size`` P >= 2: state and observation pools of P aligned rows."""
        feed = DataFeed()
        if self.reset_pool_size:
            states, obs = self.reset_pool()
            feed.add_pool_for_reset(f"{STATE}_reset_pool", states.copy(), reset_target=STATE)
            feed.add_pool_for_reset(
                f"{Constants.OBSERVATIONS}_reset_pool", obs.copy(), reset_target=Constants.OBSERVATIONS
            )
        return feed

    def cuda_constants(self) -> dict[str, int | float]:
        """Prelude constants: physics (floats as exact Hi/Mid/Lo float triples) and flags."""
        out: dict[str, int | float] = {
            "kStateDim": self.STATE_DIM,
            "kObsDim": self.OBS_DIM,
            "kTerminalDoneValue": self.TERMINAL_DONE_VALUE,
            "kStartLow": tuple(float(v) for v in self.start_bounds()[0]),
            "kStartHigh": tuple(float(v) for v in self.start_bounds()[1]),
        }
        values = {p.cuda_name: (self.params[key], p.rule) for key, p in self.PHYSICS.items() if p.cuda_name}
        values.update({name: (v, None) for name, v in self.extra_cuda_constants().items()})
        for name, (value, rule) in values.items():
            if isinstance(rule, tuple):
                out[name] = rule.index(value)
            elif isinstance(value, (bool, np.bool_)) or isinstance(value, (int, np.integer)):
                out[name] = int(value)
            else:
                out[name + "Hi"], out[name + "Mid"], out[name + "Lo"] = split_double(value)
        return out

    # ----------------------------------------------------------- stepping
    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """CPU step of every env, in place: the spec the CUDA kernel mirrors."""
        state = data[STATE]  # (E, 1, d) float32
        actions = data[Constants.ACTIONS][:, 0, 0]
        result = self.transition(state[:, 0, :], actions)
        state[:, 0, :] = result.state
        data[Constants.OBSERVATIONS][:, 0, :] = result.obs
        data[Constants.REWARDS][:, 0] = result.reward
        timestep = data[Constants.TIMESTEP]
        timestep += 1
        time_up = timestep >= int(data["episode_length"])
        data[Constants.DONE][:] = np.where(result.terminated, self.TERMINAL_DONE_VALUE, time_up.astype(np.int32))
        data[Constants.TRUNCATED][:] = time_up & ~result.terminated  # the CUDA twin: ClassicControlEndStep

    def cuda_step_kernel(self) -> None:
        """Launch the step kernel on a flat grid: one thread per env, 128 threads per block."""
        num_envs = int(self.cuda_data_manager.num_envs)
        grid = ((num_envs + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, 1, 1)
        self.launch(
            self.step_function_name, self.step_kernel_args, grid=grid, block=(THREADS_PER_BLOCK, 1, 1)
        )
