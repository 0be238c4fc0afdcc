"""EnvWrapper: reset an env once on the host, push its data, then step and reset on the device.

Which path an env takes:

- ``env_backend="pycuda"``: every env (a :class:`CUDAEnvironmentContext`) runs on the device. Its
  CUDA source is the path registered with ``env_registrar.add_cuda_env_src_path`` (2.7.1's way;
  it takes precedence) or the class attribute ``cuda_source``.
- ``env_backend="numba"``: the env's step is a Numba kernel (``Numba<name>Step`` in the dotted module
  registered with ``env_registrar.add_cuda_env_src_path(name, module, env_backend="numba")``, else the
  class attribute ``numba_source``), compiled by numba-cuda, on the same torch store; the services
  (sampler, resets, reset pools, logs) run warp_drive's CUDA C service kernels on that store
  (:mod:`warp_drive.managers.numba_function_manager`). Under Numba's CUDA simulator
  (``NUMBA_ENABLE_CUDASIM=1``) it runs on the CPU: the store in CPU memory, the services' NumPy twins.
- ``env_backend="cpu"`` and an env with a vectorised ``numpy_step`` (all envs of this package):
  all replicas step in NumPy on a data store with the GPU's API. With one replica, gym-style calls
  also work: ``reset()`` returns ``{agent_id: obs}`` and ``step({agent_id: action})`` returns
  ``(obs, rew, done, info)``.
- ``env_backend="cpu"`` and an env without ``numpy_step`` (written for 2.7.1, whose ``step``
  runs one env gym style): as in 2.7.1, ``reset_all_envs()`` returns ``env.reset()`` and
  ``step_all_envs(actions)`` returns ``env.step(actions)``; there is no data store.

``testing_mode`` (2.7.1 loaded a prebuilt test binary built for 2 envs x 5 agents): the env's
source is compiled as usual (builds are cached by content, so this costs what loading a binary
costs after the first run); only an env without any CUDA source loads the named test binary
(``testing_bin_filename``, default ``test_build.fatbin``, the core layer plus the dummy env).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from warp_drive.cuda import project_root
from warp_drive.cuda.start_state_kernel import reset_kernel
from warp_drive.vocab.backends import canonical_backend, is_numba
from warp_drive.vocab.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext, binds_episode_index, has_vectorised_cpu_step
from warp_drive.vocab.data_feed import DataFeed
from warp_drive.env.placeholders import placeholder_feed
from warp_drive.vocab.registrar import EnvironmentRegistrar
from warp_drive.vocab.registrar import env_registrar as default_registrar
from warp_drive.vocab.schema import check_array_schema
from warp_drive.errors import ConfigError, UsageError
from warp_drive.managers.data_manager import CPUDataManager, positive_int
from warp_drive.services.environment_reset import EnvironmentReset
from warp_drive.managers.function_manager import CPUFunctionManager, FunctionFeed
from warp_drive.managers.numba_data_manager import NumbaDataManager
from warp_drive.managers.numba_function_manager import NumbaFunctionManager, numba_source
from warp_drive.services.numba_services import service_manager
from warp_drive.utils.argument_fix import Argfix
from warp_drive.utils.cpu_threads import apply_cpu_threads
from warp_drive.cuda.device import device_attributes, init_cuda
from warp_drive.utils.obs_checks import check_reset_observations
from warp_drive.utils.recursive_obs_dict_to_spaces_dict import recursive_obs_dict_to_spaces_dict
from warp_drive.utils.spaces import agent_spaces_to_gymnasium

logger = logging.getLogger(__name__)

DEFAULT_TESTING_BIN = "test_build.fatbin"


def resolve_backend(env_backend: Any) -> str:
    """'pycuda', 'numba' or 'cpu' from a backend name (:mod:`warp_drive.vocab.backends`) or a bool (``use_cuda``)."""
    if isinstance(env_backend, (bool, np.bool_)):
        return "pycuda" if env_backend else "cpu"
    if is_numba(env_backend):
        return "numba"
    return canonical_backend(env_backend)


class EnvWrapper:
    """Runs ``num_envs`` replicas of a warp_drive env on one backend (2.7.1's arguments, in its order).

    Args:
        env_obj: an env instance (a :class:`CUDAEnvironmentContext` for the device backends).
        env_name: name of an env in ``env_registrar`` (with ``env_config``), used when ``env_obj``
            is None.
        env_config: keyword arguments for the registered env class.
        num_envs: number of replicas (E).
        blocks_per_env: CUDA blocks per env (default: enough for num_agents on this device).
        env_backend: ``"pycuda"`` (GPU, CUDA C step), ``"numba"`` (GPU, Numba step), ``"cpu"`` or a bool.
        testing_mode, testing_bin_filename: see the module docstring.
        env_registrar: an :class:`EnvironmentRegistrar` for ``env_name`` and registered sources
            (default for ``env_name``: :data:`warp_drive.env.env_registrar`).
        event_messenger: 2.7.1's build signal (a multiprocessing Event), set once the build is
            loaded; every process builds (builds are cached by content and safe across processes).
        process_id: rank of this process.
        device_id: CUDA device (pycuda backend), keyword only.
        use_cuda: deprecated alias of ``env_backend`` (True -> pycuda; a DeprecationWarning).
    """

    @Argfix({"use_cuda": "env_backend"})
    def __init__(
        self,
        env_obj: Any = None,
        env_name: str | None = None,
        env_config: Mapping[str, Any] | None = None,
        num_envs: int = 1,
        blocks_per_env: int | None = None,
        env_backend: Any = "cpu",
        testing_mode: bool = False,
        testing_bin_filename: str | None = None,
        env_registrar: EnvironmentRegistrar | None = None,
        event_messenger: Any = None,
        process_id: int = 0,
        *,
        device_id: int | None = None,
    ) -> None:
        requested = env_backend
        self.env_backend = resolve_backend(env_backend)
        if env_obj is None:
            if env_name is None:
                raise ConfigError("pass env_obj, or env_name (with env_config; looked up in env_registrar, by default "
                                  "warp_drive.env.env_registrar)")
            env_registrar = env_registrar or default_registrar
            table = self.env_backend
            if table == "numba" and not env_registrar.has_env(env_name, "numba"):
                table = "pycuda"  # a dual-mode class registered for the GPU
            env_obj = env_registrar.get(env_name, table)(**dict(env_config or {}))
        self.n_envs = positive_int("num_envs", num_envs)
        self.env = env_obj
        for attr in ("num_agents", "episode_length"):
            if not hasattr(env_obj, attr):
                raise ConfigError(f"{type(env_obj).__name__} must set the attribute '{attr}'")
        self.n_agents = int(env_obj.num_agents)
        self.episode_length = int(env_obj.episode_length)
        self.name = getattr(env_obj, "name", "")
        if not self.name:
            raise ConfigError(f"{type(env_obj).__name__} needs a class attribute 'name' (its kernels are Cuda<name>Step)")
        self.process_id = process_id
        self.env.env_backend = self.env_backend

        self._host_obs = self.env.reset()
        if not isinstance(self._host_obs, Mapping) or not self._host_obs:
            raise ConfigError(
                f"{type(env_obj).__name__}.reset() must return a dict {{agent_id: observation}}, got "
                f"{type(self._host_obs).__name__}"
            )
        self._convert_spaces()

        self._passthrough = self.env_backend == "cpu" and not has_vectorised_cpu_step(env_obj)
        if self.env_backend == "cpu":  # every cpu-backend path builds a wrapper: torch's threads are chosen here
            apply_cpu_threads(self.n_envs * self.n_agents, announce=process_id == 0)
        self.reset_on_host = True
        self.has_custom_reset = False
        self._fresh_start_states = False
        if self._passthrough:
            self.blocks_per_env = 1 if blocks_per_env is None else positive_int("blocks_per_env", blocks_per_env)
            self.cuda_data_manager = self.cuda_function_manager = self.cuda_function_feed = self.env_resetter = None
            return
        if not isinstance(env_obj, CUDAEnvironmentContext):
            raise ConfigError(
                f"{type(env_obj).__name__} must subclass warp_drive.utils.gpu_environment_context.CUDAEnvironmentContext "
                f"to run on env_backend={requested!r}"
            )
        # the reset that every replica starts from is checked before anything is compiled or pushed
        check_reset_observations(self._host_obs, env_obj.observation_space, self.name)
        source = self._cuda_source(env_registrar, testing_mode) if self.env_backend == "pycuda" else None
        if self.env_backend == "numba":
            source = numba_source(env_obj, self.name, env_registrar)
        if testing_bin_filename is not None and not str(testing_bin_filename).endswith((".cubin", ".fatbin")):
            raise ConfigError(f"testing_bin_filename={testing_bin_filename!r} must name a .cubin or .fatbin file")

        self.blocks_per_env = self._blocks_per_env(blocks_per_env, device_id)
        args = dict(num_agents=self.n_agents, num_envs=self.n_envs, blocks_per_env=self.blocks_per_env)
        if self.env_backend == "pycuda":
            from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
            from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

            self.cuda_data_manager = PyCUDADataManager(episode_length=self.episode_length, device_id=device_id, **args)
            self.cuda_function_manager = PyCUDAFunctionManager(process_id=process_id, device_id=device_id, **args)
            if source is not None:
                if testing_mode:
                    logger.info("testing_mode: compiling %s (cached by content); no prebuilt binary is loaded", source)
                self.cuda_function_manager.compile_and_load_cuda(
                    event_messenger=event_messenger, env_source=source, constants=self.env.cuda_constants()
                )
            else:
                binary = Path(project_root()) / "warp_drive" / "cuda_bin" / (testing_bin_filename or DEFAULT_TESTING_BIN)
                logger.info("testing_mode: %s has no CUDA source; loading the test build %s", self.name, binary)
                self.cuda_function_manager.load_cuda_from_binary_file(str(binary))
        elif self.env_backend == "numba":
            self.cuda_data_manager = NumbaDataManager(episode_length=self.episode_length, device_id=device_id, **args)
            self.cuda_function_manager = NumbaFunctionManager(process_id=process_id, device_id=device_id, **args)
            self.cuda_function_manager.load_env_module(source, constants=self.env.cuda_constants())
            cuda_c = self._cuda_source(env_registrar, testing_mode=True)  # None: the services' core alone
            if cuda_c is not None:
                self.cuda_function_manager.set_service_source(cuda_c, constants=self.env.cuda_constants())
            if event_messenger is not None and hasattr(event_messenger, "set"):
                event_messenger.set()
        else:
            self.cuda_data_manager = CPUDataManager(episode_length=self.episode_length, **args)
            self.cuda_function_manager = CPUFunctionManager(process_id=process_id, **args)
            self.cuda_function_manager.initialize_default_functions()
        self.cuda_function_feed = FunctionFeed(self.cuda_data_manager)
        self.env_resetter = EnvironmentReset(service_manager(self.cuda_function_manager))
        self.has_custom_reset = self.env_resetter.register_custom_reset_function(
            self.cuda_data_manager, f"Cuda{self.name}Reset"
        )
        self.fresh_start_states = bool(getattr(env_obj, "fresh_start_states", False))

    # ------------------------------------------------------------------ construction helpers
    def _convert_spaces(self) -> None:
        """gym spaces -> gymnasium spaces (once); observation spaces built from the reset obs when missing."""
        env = self.env
        if getattr(env, "action_space", None) is None:
            raise ConfigError(f"{type(env).__name__} must set action_space: a dict {{agent_id: space}}")
        env.action_space = agent_spaces_to_gymnasium(env.action_space, "action_space")
        if getattr(env, "observation_space", None) is None:
            env.observation_space = {
                a: recursive_obs_dict_to_spaces_dict({"o": o})["o"] for a, o in self._host_obs.items()
            }
        else:
            env.observation_space = agent_spaces_to_gymnasium(env.observation_space, "observation_space")
        if set(env.observation_space) != set(env.action_space):
            raise ConfigError(
                f"{type(env).__name__}: observation_space has agents {sorted(env.observation_space)} but action_space "
                f"has {sorted(env.action_space)}; both need the same agent ids"
            )

    def _cuda_source(self, registrar: EnvironmentRegistrar | None, testing_mode: bool) -> Any:
        """The env's .cu file: the registered path first (2.7.1's precedence), else ``cuda_source``."""
        registered = registrar.get_cuda_env_src_path(self.name) if registrar is not None else None
        source = registered if registered is not None else getattr(self.env, "cuda_source", None)
        if source is not None or testing_mode:
            return source
        raise ConfigError(
            f"{type(self.env).__name__} (env '{self.name}') has no CUDA source. Register its .cu file: "
            f"registrar.add_cuda_env_src_path({self.name!r}, '/path/to/step.cu') and pass env_registrar=registrar, "
            f"or set the class attribute cuda_source"
        )

    def _blocks_per_env(self, requested: int | None, device_id: int | None) -> int:
        """``requested``, else 1 on the cpu backend and enough for the agents on the GPU; never more than
        the env's ``max_blocks_per_env`` (ConfigError naming both and the fix)."""
        if requested is not None:
            blocks = positive_int("blocks_per_env", requested)
        elif self.env_backend != "pycuda":
            blocks = 1
        else:
            init_cuda(device_id)
            dev = torch.cuda.current_device() if device_id is None else device_id
            blocks = math.ceil(self.n_agents / device_attributes(dev)["max_threads_per_block"])
        limit = getattr(self.env, "max_blocks_per_env", None)
        if limit is not None and blocks > int(limit):
            raise ConfigError(
                f"{type(self.env).__name__} declares max_blocks_per_env = {limit}, but this wrapper needs blocks_per_env="
                f"{blocks} ({self.n_agents} agents); pass blocks_per_env <= {limit}, or fewer agents per env "
                f"(at most {limit} x the GPU's threads per block)")
        return blocks

    def _require_store(self, what: str) -> None:
        if self._passthrough:
            raise ConfigError(
                f"{what} needs a data store, but {type(self.env).__name__} has no numpy_step and runs gym style "
                f"on the cpu backend (call reset() / step(actions)); use env_backend='pycuda'"
            )

    @property
    def reset_observations(self) -> dict:
        """The observations of the host reset whose state was pushed to every replica."""
        return self._host_obs

    # ------------------------------------------------------------------ resets
    def reset_all_envs(self) -> dict:
        """First call: push the host reset to every replica and return its observations.
        Later calls: force-reset every replica on the device and return ``{}`` (with one replica
        on the cpu backend: its observations). Gym-style cpu passthrough: ``env.reset()``."""
        self.env.timestep = 0
        if self._passthrough:
            return self.env.reset()
        if not self.reset_on_host:
            self.env_resetter.reset_when_done(self.cuda_data_manager, mode="force_reset")
            return self._env0_obs() if self._gym_style_cpu else {}
        dm = self.cuda_data_manager
        data, tensors, pools = (self.env.get_data_dictionary(), self.env.get_tensor_dictionary(),
                                self.env.get_reset_pool_dictionary())
        check_array_schema(self.env, (data, tensors, pools))
        dm.push_data_to_device(self._with_env_axis(data, pools), torch_accessible=False)
        dm.push_data_to_device(self._with_env_axis(tensors, pools), torch_accessible=True)
        dm.push_data_to_device(pools)
        if getattr(self.env, "writes_truncation", False):
            dm.add_truncation_flag()
        if binds_episode_index(self.env):
            dm.add_episode_index()
        dm.push_data_to_device(
            placeholder_feed(self._host_obs, self.env.action_space, self.n_envs, set(dm.names())),
            torch_accessible=True,
        )
        seed = getattr(self.env, "seed", None)
        self.env_resetter.init_reset_pool(dm, seed if isinstance(seed, (int, np.integer)) else None)
        self.env.initialize_step_function_context(dm, self.cuda_function_manager, self.cuda_function_feed)
        if self.env_resetter.register_start_state(dm, self.env):
            self.env_resetter.fresh_start_states = self._fresh_start_states
        if dm.reset_target_to_pool or self.env_resetter.fresh_start_states:
            self.env_resetter.reset_when_done(dm, mode="force_reset")
        self.reset_on_host = False
        return self._host_obs

    def _with_env_axis(self, feed: DataFeed, pools: DataFeed) -> DataFeed:
        """Give reset-copied arrays and pool targets a leading env axis (E copies)."""
        targets = {e["attributes"].get("reset_target") for e in pools.values()}
        out = DataFeed()
        for name, entry in feed.items():
            attrs = dict(entry["attributes"])
            value = entry["data"]
            if attrs.get("save_copy_and_apply_at_reset") or name in targets:
                if attrs.get("save_copy_and_apply_at_reset") and name in targets:
                    raise ConfigError(f"'{name}' has a reset pool; do not also flag save_copy_and_apply_at_reset")
                arr = np.asarray(value)
                value = np.broadcast_to(arr, (self.n_envs, *arr.shape)).copy()
            out[name] = {"data": value, "attributes": attrs}
        return out

    @property
    def supports_fresh_start_states(self) -> bool:
        """Whether the env has a start-state hook (:mod:`warp_drive.vocab.start_state`), so that
        :attr:`fresh_start_states` can be turned on."""
        env = self.env
        if self._passthrough or not getattr(env, "start_state_args", ()) or not hasattr(env, "numpy_start_state"):
            return False
        fm = service_manager(self.cuda_function_manager)  # the numba backend's resets run on its services
        return not fm.has_kernels or fm.has_function(reset_kernel(self.name))

    @property
    def fresh_start_states(self) -> bool:
        """True: every reset draws a new start state for each env replica and episode, on the
        device (the env's start-state hook). False: resets restore the start state of the host
        reset (2.7.1's semantics). Starts as the env's own ``fresh_start_states`` attribute (its
        constructor argument in the example envs); may be changed at any time."""
        return self._fresh_start_states

    @fresh_start_states.setter
    def fresh_start_states(self, value: bool) -> None:
        if value and not self.supports_fresh_start_states:
            raise ConfigError(
                f"{type(self.env).__name__} has no start-state hook, so every reset restores its one saved start "
                f"state; define {self.name}StartState in its CUDA source, numpy_start_state and start_state_args "
                f"on its class (docs/adding_an_env.md), or leave fresh_start_states off"
            )
        self._fresh_start_states = bool(value)
        if not self.reset_on_host:
            self.env_resetter.fresh_start_states = self._fresh_start_states

    def reset_only_done_envs(self, undo_done_after_reset: bool = True) -> dict:
        """Reset, on the device, every replica whose ``_done_`` flag is set."""
        self._require_store("reset_only_done_envs()")
        if self.reset_on_host:
            raise UsageError("call reset_all_envs() once before reset_only_done_envs()")
        self.env_resetter.reset_when_done(self.cuda_data_manager, mode="if_done", undo_done_after_reset=undo_done_after_reset)
        return {}

    def custom_reset_all_envs(self, args: Any = None, block: Any = None, grid: Any = None) -> dict:
        """Launch the env's ``Cuda<Name>Reset`` kernel."""
        self._require_store("custom_reset_all_envs()")
        self.env_resetter.custom_reset(args=args, block=block, grid=grid)
        return {}

    def init_reset_pool(self, seed: int | None = None) -> None:
        """Reseed the reset-pool draws."""
        self._require_store("init_reset_pool()")
        self.env_resetter.init_reset_pool(self.cuda_data_manager, seed)

    # ------------------------------------------------------------------ stepping
    @property
    def _gym_style_cpu(self) -> bool:
        return self.env_backend == "cpu" and self.n_envs == 1

    def step_all_envs(self, actions: Any = None) -> Any:
        """Step every replica once.

        ``actions`` (optional): an (E, N, heads) array written to ``sampled_actions`` first. On the
        cpu backend with one replica it may also be a dict ``{agent_id: action}``; the step then
        returns ``(obs, rew, done, info)`` gym style. Gym-style cpu passthrough: returns
        ``env.step(actions)``. Otherwise returns None (results live on the data store).
        """
        if self._passthrough:
            if actions is None:
                raise ConfigError(
                    f"{type(self.env).__name__} steps gym style on the cpu backend: pass actions {{agent_id: action}}"
                )
            return self.env.step(actions)
        if self.reset_on_host:
            raise UsageError("call reset_all_envs() before step_all_envs()")
        gym_style = isinstance(actions, Mapping)
        if gym_style:
            if not self._gym_style_cpu:
                raise ConfigError(
                    f"actions as a dict {{agent_id: action}} are for one replica on the cpu backend; this wrapper runs "
                    f"{self.n_envs} on {self.env_backend}: pass an array (num_envs, num_agents, heads)"
                )
            actions = self._actions_from_dict(actions)
        if actions is not None:
            self.cuda_data_manager.assign(Constants.ACTIONS, actions)
        self.env.step()
        if gym_style:
            dm = self.cuda_data_manager
            rewards = dm.pull_data_from_device(Constants.REWARDS)[0]
            ids = sorted(self.env.action_space)
            done = bool(dm.pull_data_from_device(Constants.DONE)[0] > 0)
            return self._env0_obs(), {a: rewards[i] for i, a in enumerate(ids)}, {"__all__": done}, {}
        return None

    def _actions_from_dict(self, actions: Mapping[Any, Any]) -> np.ndarray:
        ids = sorted(self.env.action_space)
        missing = [a for a in ids if a not in actions]
        if missing:
            raise ConfigError(f"no action for agents {missing}; pass one per agent id")
        shape = self.cuda_data_manager.get_shape(Constants.ACTIONS)
        dtype = np.dtype(self.cuda_data_manager.get_dtype(Constants.ACTIONS))
        out = np.zeros(shape, dtype)
        for i, a in enumerate(ids):
            value = np.asarray(actions[a], dtype).reshape(-1)
            if value.size != shape[2]:
                raise ConfigError(f"agent {a!r}: action {actions[a]!r} has {value.size} values; expected {shape[2]}")
            out[0, i] = value
        return out

    def _env0_obs(self) -> dict:
        """``{agent_id: obs}`` of replica 0, read from the data store."""
        dm = self.cuda_data_manager
        ids = sorted(self.env.action_space)
        if dm.is_data_on_device(Constants.OBSERVATIONS):
            obs = dm.pull_data_from_device(Constants.OBSERVATIONS)[0]
            return {a: obs[i] for i, a in enumerate(ids)}
        keys = list(self._host_obs[ids[0]])  # dict observations: one array per key
        arrays = {k: dm.pull_data_from_device(f"{Constants.OBSERVATIONS}_{k}")[0] for k in keys}
        return {a: {k: v[i] for k, v in arrays.items()} for i, a in enumerate(ids)}

    def reset(self) -> dict:
        """Alias of :meth:`reset_all_envs` (gym style)."""
        return self.reset_all_envs()

    def step(self, actions: Any = None) -> Any:
        """Alias of :meth:`step_all_envs` (gym style)."""
        return self.step_all_envs(actions)

    # ------------------------------------------------------------------ convenience
    def done_flags(self) -> Any:
        """The live ``_done_`` tensor (E,)."""
        self._require_store("done_flags()")
        return self.cuda_data_manager.data_on_device_via_torch(Constants.DONE)
