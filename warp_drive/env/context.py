"""CUDAEnvironmentContext: the base class every warp_drive environment derives from (the env contract).

An env is *dual mode*: the same class runs on the ``pycuda`` backend (its CUDA step kernel) and on
the ``cpu`` backend (its vectorised NumPy reference step). Both operate in place on the arrays of
the data manager, with identical names, shapes and dtypes.

The contract (see ``docs/adding_an_env.md``)::

    class MyEnv(CUDAEnvironmentContext):
        name = "MyEnv"                       # step kernel: CudaMyEnvStep
        cuda_source = Path(__file__).with_name("my_env_step.cu")
        numba_source = "my_pkg.my_env_step_numba"  # optional: kernel NumbaMyEnvStep, same arguments
        step_kernel_args = ("loc_x", "loc_y", Constants.ACTIONS, ..., ("episode_length", "meta"))
        phase_kernels = {"CudaMyEnvMove": (...), "CudaMyEnvFinish": (...)}  # optional: multi-block envs
        writes_truncation = True             # the step writes Constants.TRUNCATED (optional)
        max_blocks_per_env = 1               # a one-block-only step (optional; None: any geometry)
        array_schema = {"loc_x": ArraySpec(("num_agents",), "float32"), ...}  # checked at push (optional)

        def reset(self): ...                 # host reset of one env; returns {agent_id: obs}
        def get_data_dictionary(self): ...   # DataFeed of state arrays and parameters
        def get_tensor_dictionary(self): ... # DataFeed of torch-visible arrays (optional)
        def cuda_constants(self): ...        # {"kNumActions": 5, ...} -> constexpr in the prelude
        def numpy_step(self, data): ...      # CPU backend: vectorised over envs and agents
        def agent_groups(self): ...          # {"tagger": [...], "runner": [...]} (default: one group)
        def reseed(self, seed): ...          # re-seed everything random (default: a public ``rng``)
        def reseed_start_states(self, seed): ...  # re-seed only what reset() draws (default: reseed)
        def render_rollout(self, states, **kw): ...  # animation of one env's recorded states (optional)

``observation_space`` and ``action_space`` are dicts ``agent_id -> gymnasium.Space``.

Env classes written for WarpDrive 2.7.1 run unchanged: they have no ``cuda_source`` (the ``.cu``
path is registered with ``EnvironmentRegistrar.add_cuda_env_src_path``), no ``step_kernel_args``
and no ``numpy_step``; their own ``step()`` launches the kernel as
``self.cuda_step(*self.cuda_step_function_feed(args), block=..., grid=...)`` on the GPU, and on the
CPU runs one env gym style (``step(actions) -> (obs, rew, done, info)``). Their spaces may be
``gym.spaces`` (converted to gymnasium by the wrapper). See :func:`has_vectorised_cpu_step` for how
the cpu backend tells the two kinds apart.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

import numpy as np

from warp_drive.env.constants import Constants
from warp_drive.env.data_feed import DataFeed
from warp_drive.env.schema import ArraySpec
from warp_drive.errors import ConfigError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from warp_drive.managers.data_manager import DataManager
    from warp_drive.managers.function_manager import FunctionFeed, FunctionManager

logger = logging.getLogger(__name__)


class CUDAEnvironmentContext:
    """Mixin giving an env access to the data store and the compiled kernels.

    Attributes set by :class:`~warp_drive.env_wrapper.EnvWrapper`:
        cuda_data_manager: the data manager of the backend in use.
        cuda_function_manager: the function manager of the backend in use.
        cuda_step_function_feed: a FunctionFeed bound to the data manager.
        env_backend: ``"pycuda"``, ``"numba"`` or ``"cpu"``.
    """

    name: ClassVar[str] = ""
    #: Path of the env's CUDA source (the step kernel and any helper kernels).
    cuda_source: ClassVar[Path | None] = None
    #: Dotted module of the env's Numba step kernel ``Numba<name>Step`` (the numba backend), taking
    #: ``step_kernel_args`` like the CUDA kernel. None: the env has no Numba step.
    numba_source: ClassVar[str | None] = None
    #: Arguments of the step kernel, bound by name: "name" or (name, "device"|"meta"|"shared").
    step_kernel_args: ClassVar[Sequence[Any]] = ()
    #: Kernels that together make one step when an env spans several blocks, launched in order:
    #: a mapping ``kernel name -> its arguments`` (each phase takes only what it needs), or a
    #: sequence of names that all take ``step_kernel_args``. Empty when the step kernel handles
    #: every geometry.
    phase_kernels: ClassVar[Mapping[str, Sequence[Any]] | Sequence[str]] = ()
    #: True when the Numba step runs one block per env whatever ``blocks_per_env`` (its threads stride
    #: over the agents, its phases separated by ``cuda.syncthreads()``): it is launched on ``num_envs``
    #: blocks of up to 1024 threads. False: the function manager's grid and block.
    numba_block_per_env: ClassVar[bool] = False
    #: True when every step writes ``Constants.TRUNCATED``: the wrapper then creates that array and the
    #: rollout and the adapters read it. False (2.7.1 kernels, which write only ``_done_``): truncation is
    #: derived from the time limit (:func:`warp_drive.env.done.split_done`).
    writes_truncation: ClassVar[bool] = False
    #: True when ``numpy_step`` computes env ``e``'s rows of every per-env array (reset-registered
    #: arrays, placeholders, done flags, timesteps) from env ``e``'s rows only, and from arrays
    #: without an env axis: on two or more torch threads the cpu rollout then steps blocks of envs
    #: in parallel threads, each on a view of its rows (:mod:`warp_drive.training.cpu_pipeline`).
    numpy_step_is_env_separable: ClassVar[bool] = False
    #: The most CUDA blocks one env may span, or None for any number. ``1`` declares a one-block-only
    #: step (a reduction in ``__shared__`` memory, ``__syncthreads()`` as the env's barrier): the
    #: wrapper then refuses ``blocks_per_env > 1`` with a ConfigError, and ``check_build`` builds the
    #: kernel for one block per env only (so a ``static_assert(wkBlocksPerEnv == 1, ...)`` holds).
    max_blocks_per_env: ClassVar[int | None] = None
    #: Shapes and dtypes of the env's own arrays for ONE env (no env axis), ``name -> ArraySpec``, checked
    #: when the wrapper pushes them (:mod:`warp_drive.env.schema`); empty: only the data manager's checks.
    array_schema: ClassVar[Mapping[str, ArraySpec]] = {}
    #: Name of a per-agent int array (``(N,)`` for one env) that drops to 0 when an agent leaves the
    #: episode before the others (the PettingZoo adapter then ends that agent alone); None: all
    #: agents end together.
    active_agent_flag: ClassVar[str | None] = None

    env_backend: str = "cpu"
    cuda_data_manager: "DataManager | None" = None
    cuda_function_manager: "FunctionManager | None" = None
    cuda_step_function_feed: "FunctionFeed | None" = None
    cuda_step: Any = None

    # ----------------------------------------------------------------- data the env provides
    def get_data_dictionary(self) -> DataFeed:
        """State arrays and parameters pushed to the device (not visible to torch by default)."""
        return DataFeed()

    def get_tensor_dictionary(self) -> DataFeed:
        """Arrays pushed to the device and exposed to torch."""
        return DataFeed()

    def get_reset_pool_dictionary(self) -> DataFeed:
        """Reset pools (``DataFeed.add_pool_for_reset``); one row is drawn per env at each reset."""
        return DataFeed()

    def cuda_constants(self) -> dict[str, int | float]:
        """Compile-time constants rendered as ``constexpr`` into the kernel prelude."""
        return {}

    def agent_groups(self) -> dict[str, list[Any]]:
        """Agent ids by role, e.g. ``{"tagger": [0, 3], "runner": [1, 2, 4]}``; a policy map that
        names roles maps each to its group. Default: one group ``"agents"`` of every agent."""
        ids = getattr(self, "action_space", None) or range(int(getattr(self, "num_agents", 0)))
        return {"agents": sorted(ids)}

    def reseed(self, seed: int) -> None:
        """Re-seed everything random, as if the env had been built with ``seed`` (data drawn once
        per env, such as roles or reset pools, and what ``reset()`` draws from). Data already on
        a device is not touched (the interop adapters push what changed).

        Default: replaces a public ``rng`` attribute holding a ``numpy.random.Generator`` by
        ``np.random.default_rng(seed)``; an env without one has nothing to re-seed. Override it
        for anything else.

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        seed = check_seed(seed)
        if isinstance(getattr(self, "rng", None), np.random.Generator):
            self.rng = np.random.default_rng(seed)
        else:
            logger.debug("%s has no rng to re-seed", type(self).__name__)

    def reseed_start_states(self, seed: int) -> None:
        """Re-seed only what ``reset()`` draws start states from, keeping data drawn once per env
        (roles, reset pools). Default: :meth:`reseed`; override it where the two differ."""
        self.reseed(seed)

    def render_rollout(self, states: Mapping[str, Any], **kwargs: Any) -> Any:
        """The animation of one env's recorded states (the render hook).

        Args:
            states: ``{name: (frames, ...) array}`` of the arrays named in ``render_state_names``,
                row 0 the reset state (see :func:`warp_drive.utils.rollout_animation.collect_episode`).
            **kwargs: env-specific drawing options (fps, title, colours, ...).

        Returns:
            A ``matplotlib.animation.Animation``.

        Raises:
            UsageError: the env has no renderer.
        """
        raise UsageError(f"{type(self).__name__} has no renderer; override render_rollout() to draw its states")

    #: Arrays :meth:`render_rollout` draws (recorded per step by the rollout helpers).
    render_state_names: ClassVar[Sequence[str]] = ()

    @property
    def step_function_name(self) -> str:
        """Name of the step kernel: ``Cuda<name>Step``, or ``Numba<name>Step`` on the numba backend."""
        return f"{'Numba' if self.env_backend == 'numba' else 'Cuda'}{self.name}Step"

    # ----------------------------------------------------------------- wiring by the wrapper
    def initialize_step_function_context(
        self,
        cuda_data_manager: "DataManager",
        cuda_function_manager: "FunctionManager",
        cuda_step_function_feed: "FunctionFeed",
        step_function_name: str | None = None,
    ) -> bool:
        """Bind the env to a data manager and function manager.

        On the pycuda backend the step kernel is looked up and its signature checked against
        ``step_kernel_args`` (errors propagate; nothing is swallowed). Returns True.
        """
        self.cuda_data_manager = cuda_data_manager
        self.cuda_function_manager = cuda_function_manager
        self.cuda_step_function_feed = cuda_step_function_feed
        name = step_function_name or self.step_function_name
        if cuda_function_manager.has_kernels:
            phases = self.phase_kernel_args() if getattr(cuda_function_manager, "backend", "") != "numba" else {}
            cuda_function_manager.initialize_functions([name, *phases])
            self.cuda_step = _StepKernel(cuda_function_manager.get_function(name), cuda_function_manager)
            if self.step_kernel_args:
                for kernel, args in ((name, self.step_kernel_args), *phases.items()):
                    cuda_function_manager.check_arguments(kernel, args, cuda_data_manager)
        return True

    def phase_kernel_args(self) -> dict[str, Sequence[Any]]:
        """``{phase kernel: its arguments}`` in launch order (see ``phase_kernels``)."""
        phases = self.phase_kernels
        if isinstance(phases, Mapping):
            return {k: tuple(v) for k, v in phases.items()}
        return {k: tuple(self.step_kernel_args) for k in phases}

    # ----------------------------------------------------------------- stepping
    def step(self, actions: Any = None) -> None:
        """Advance every env replica by one step, in place on the data store.

        Args:
            actions: optional array (num_envs, num_agents, num_heads) written to
                ``sampled_actions`` before stepping (handy for tests and custom loops).
        """
        dm = self.cuda_data_manager
        if dm is None:
            raise UsageError(
                f"{type(self).__name__}.step() needs a data store; wrap the env in an EnvWrapper"
            )
        if actions is not None:
            dm.assign(Constants.ACTIONS, actions)
        if self.cuda_function_manager.has_kernels:
            self.cuda_step_kernel()
        else:
            self.numpy_step(dm.host_view())

    def cuda_step_kernel(self) -> None:
        """Launch the step kernel, or the ``phase_kernels`` in order when an env spans several
        blocks (a kernel boundary is the barrier between blocks). Override for other schemes."""
        if self.env_backend == "numba" and self.numba_block_per_env:
            agents = int(self.cuda_function_manager.num_agents)
            threads = min(1024, 32 * ((agents + 31) // 32))
            num_envs = int(self.cuda_function_manager.num_envs)
            self.launch(self.step_function_name, self.step_kernel_args, grid=(num_envs, 1), block=(threads, 1, 1))
        elif self.phase_kernels and self.cuda_function_manager.blocks_per_env > 1:
            for kernel, args in self.phase_kernel_args().items():
                self.launch(kernel, args)
        else:
            self.launch(self.step_function_name, self.step_kernel_args)

    def launch(
        self,
        kernel_name: str,
        args: Sequence[Any],
        grid: tuple[int, ...] | None = None,
        block: tuple[int, ...] | None = None,
    ) -> None:
        """Launch ``kernel_name`` with arguments bound by data name (default env geometry)."""
        self.cuda_function_manager.launch(kernel_name, self.cuda_step_function_feed(args), grid=grid, block=block)

    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """CPU reference step, vectorised over envs and agents; mutates ``data`` in place."""
        raise NotImplementedError(
            f"{type(self).__name__} has no NumPy step; it cannot run on the cpu backend"
        )


class _StepKernel:
    """``env.cuda_step``: the step kernel, called the pycuda way (``self.cuda_step(*args, block=..., grid=...)``, as
    2.7.1 envs do). A call that names no ``stream`` launches on the function manager's current stream, so such a
    step joins the trainer's CUDA-graph capture like every other launch."""

    __slots__ = ("_kernel", "_fm")

    def __init__(self, kernel: Any, function_manager: Any) -> None:
        self._kernel = kernel
        self._fm = function_manager

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("stream") is None:
            kwargs["stream"] = getattr(self._fm, "stream", None)
        return self._kernel(*args, **kwargs)

    def __getitem__(self, config: Any) -> Any:
        """``cuda_step[grid, block](*args)``: a Numba kernel launched 2.7.1's way."""
        return self._kernel[config]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def __repr__(self) -> str:
        return f"<step kernel {self._kernel!r}>"


def check_seed(seed: Any, what: str = "seed") -> int:
    """A non-negative Python int (bools refused).

    Raises:
        ConfigError: naming ``what`` and the value.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"{what}={seed!r} must be a non-negative integer")
    return int(seed)


def binds_episode_index(env: Any) -> bool:
    """Whether ``env``'s step, phase or start-state kernels take ``Constants.EPISODE`` (the wrapper then creates it)."""
    specs = [*(getattr(env, "step_kernel_args", ()) or ()), *(getattr(env, "start_state_args", ()) or ())]
    phases = getattr(env, "phase_kernels", ()) or ()
    if isinstance(phases, Mapping):
        specs += [spec for args in phases.values() for spec in args]
    return any((spec if isinstance(spec, str) else spec[0]) == Constants.EPISODE for spec in specs)


def has_vectorised_cpu_step(env: Any) -> bool:
    """True when ``env`` (an instance or a class) defines its own ``numpy_step``.

    The cpu backend then steps every replica at once on a NumPy data store; otherwise it passes
    ``reset()`` and ``step(actions)`` straight to the env (written the 2.7.1 way: one env, gym style).
    """
    cls = env if isinstance(env, type) else type(env)
    impl = getattr(cls, "numpy_step", None)
    return callable(impl) and impl is not CUDAEnvironmentContext.numpy_step
