"""EnvWrapper: reset an env once on the host, push its data, then step and reset on the device."""

from __future__ import annotations

import logging
import math
from typing import Any, Mapping

import numpy as np

from warp_drive.errors import ConfigError
from warp_drive.managers.environment_reset import EnvironmentReset
from warp_drive.managers.function_manager import FunctionFeed
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.env_registrar import EnvironmentRegistrar
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext
from warp_drive.utils.placeholders import placeholder_feed
from warp_drive.utils.recursive_obs_dict_to_spaces_dict import recursive_obs_dict_to_spaces_dict

logger = logging.getLogger(__name__)

_BACKEND_ALIASES = {"pycuda": "pycuda", "cuda": "pycuda", "gpu": "pycuda", "cpu": "cpu"}


def resolve_backend(env_backend: Any) -> str:
    """'pycuda' or 'cpu' from a backend name (or the legacy bool ``use_cuda``)."""
    if isinstance(env_backend, bool):
        return "pycuda" if env_backend else "cpu"
    if isinstance(env_backend, str) and env_backend.lower() == "numba":
        raise ConfigError("the numba backend is not provided; use env_backend='pycuda' (GPU) or 'cpu'")
    try:
        return _BACKEND_ALIASES[str(env_backend).lower()]
    except KeyError:
        raise ConfigError(f"env_backend={env_backend!r} is unknown; use 'pycuda' or 'cpu'") from None


class EnvWrapper:
    """Runs ``num_envs`` replicas of a warp_drive env on one backend.

    Args:
        env_obj: an env instance (a :class:`CUDAEnvironmentContext`), or None with ``env_name``.
        env_name: name of an env in ``env_registrar``.
        env_config: keyword arguments for the registered env class.
        num_envs: number of replicas (E).
        blocks_per_env: CUDA blocks per env (default: enough for num_agents on this device).
        env_backend: ``"pycuda"`` (GPU) or ``"cpu"`` (NumPy reference steps, same API).
        env_registrar: where ``env_name`` is looked up.
        process_id: rank of this process.
        device_id: CUDA device (pycuda backend).
        use_cuda: legacy alias of ``env_backend`` (True -> pycuda).

    After construction: ``reset_all_envs()`` once (host reset and push), then
    ``step_all_envs()`` and ``reset_only_done_envs()`` run on the device.
    """

    def __init__(
        self,
        env_obj: Any = None,
        env_name: str | None = None,
        env_config: Mapping[str, Any] | None = None,
        num_envs: int = 1,
        blocks_per_env: int | None = None,
        env_backend: Any = "cpu",
        env_registrar: EnvironmentRegistrar | None = None,
        event_messenger: Any = None,
        process_id: int = 0,
        device_id: int | None = None,
        use_cuda: bool | None = None,
        testing_mode: bool = False,
    ) -> None:
        if use_cuda is not None:
            env_backend = use_cuda
        self.env_backend = resolve_backend(env_backend)
        if env_obj is None:
            if env_name is None or env_registrar is None:
                raise ConfigError("pass env_obj, or env_name together with env_registrar")
            env_obj = env_registrar.get(env_name, self.env_backend)(**dict(env_config or {}))
        if not isinstance(env_obj, CUDAEnvironmentContext):
            raise ConfigError(
                f"{type(env_obj).__name__} must subclass warp_drive.utils.gpu_environment_context.CUDAEnvironmentContext"
            )
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.env = env_obj
        self.n_agents = int(env_obj.num_agents)
        self.episode_length = int(env_obj.episode_length)
        self.name = env_obj.name
        self.n_envs = int(num_envs)
        self.process_id = process_id
        self.env.env_backend = self.env_backend

        self._host_obs = self.env.reset()
        if not hasattr(self.env, "observation_space") or self.env.observation_space is None:
            self.env.observation_space = {a: recursive_obs_dict_to_spaces_dict({"o": o})["o"] for a, o in self._host_obs.items()}
        if set(self.env.observation_space) != set(self.env.action_space):
            raise ConfigError("the env's observation_space and action_space must have the same agent keys")

        self.blocks_per_env = self._blocks_per_env(blocks_per_env, device_id)
        args = dict(num_agents=self.n_agents, num_envs=self.n_envs, blocks_per_env=self.blocks_per_env)
        if self.env_backend == "pycuda":
            from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
            from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

            self.cuda_data_manager = PyCUDADataManager(episode_length=self.episode_length, device_id=device_id, **args)
            self.cuda_function_manager = PyCUDAFunctionManager(process_id=process_id, device_id=device_id, **args)
            source = self.env.cuda_source
            if source is None and env_registrar is not None:
                source = env_registrar.get_cuda_env_src_path(self.name)
            if source is None:
                raise ConfigError(f"{type(self.env).__name__} has no cuda_source; set it to its .cu file")
            self.cuda_function_manager.compile_and_load_cuda(env_source=source, constants=self.env.cuda_constants())
        else:
            from warp_drive.managers.data_manager import CPUDataManager
            from warp_drive.managers.function_manager import CPUFunctionManager

            self.cuda_data_manager = CPUDataManager(episode_length=self.episode_length, **args)
            self.cuda_function_manager = CPUFunctionManager(process_id=process_id, **args)
            self.cuda_function_manager.initialize_default_functions()
        self.cuda_function_feed = FunctionFeed(self.cuda_data_manager)
        self.env_resetter = EnvironmentReset(self.cuda_function_manager)
        self.has_custom_reset = self.env_resetter.register_custom_reset_function(
            self.cuda_data_manager, self.env.reset_function_name
        )
        self.reset_on_host = True

    def _blocks_per_env(self, requested: int | None, device_id: int | None) -> int:
        if requested is not None:
            if isinstance(requested, bool) or not isinstance(requested, (int, np.integer)) or requested < 1:
                raise ConfigError(f"blocks_per_env must be a positive integer, got {requested!r}")
            return int(requested)
        if self.env_backend != "pycuda":
            return 1
        from warp_drive.utils.device import device_attributes, init_cuda

        init_cuda(device_id)
        import torch

        dev = torch.cuda.current_device() if device_id is None else device_id
        return math.ceil(self.n_agents / device_attributes(dev)["max_threads_per_block"])

    # ------------------------------------------------------------------ manager aliases
    @property
    def data_manager(self) -> Any:
        return self.cuda_data_manager

    @property
    def function_manager(self) -> Any:
        return self.cuda_function_manager

    # ------------------------------------------------------------------ resets
    def reset_all_envs(self) -> dict:
        """First call: push the host reset to every replica and return its observations.
        Later calls: force-reset every replica on the device and return ``{}``."""
        self.env.timestep = 0
        if not self.reset_on_host:
            self.env_resetter.reset_when_done(self.cuda_data_manager, mode="force_reset")
            return {}
        dm = self.cuda_data_manager
        pools = self.env.get_reset_pool_dictionary()
        dm.push_data_to_device(self._with_env_axis(self.env.get_data_dictionary(), pools), torch_accessible=False)
        dm.push_data_to_device(self._with_env_axis(self.env.get_tensor_dictionary(), pools), torch_accessible=True)
        dm.push_data_to_device(pools)
        dm.push_data_to_device(
            placeholder_feed(self._host_obs, self.env.action_space, self.n_envs, set(dm.names())),
            torch_accessible=True,
        )
        seed = getattr(self.env, "seed", None)
        self.env_resetter.init_reset_pool(dm, seed if isinstance(seed, (int, np.integer)) else None)
        self.env.initialize_step_function_context(dm, self.cuda_function_manager, self.cuda_function_feed)
        if dm.reset_target_to_pool:
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

    def reset_only_done_envs(self, undo_done_after_reset: bool = True) -> dict:
        """Reset, on the device, every replica whose ``_done_`` flag is set."""
        if self.reset_on_host:
            raise ConfigError("call reset_all_envs() once before reset_only_done_envs()")
        self.env_resetter.reset_when_done(self.cuda_data_manager, mode="if_done", undo_done_after_reset=undo_done_after_reset)
        return {}

    def custom_reset_all_envs(self, args: Any = None, block: Any = None, grid: Any = None) -> None:
        """Launch the env's ``Cuda<Name>Reset`` kernel."""
        self.env_resetter.custom_reset(args=args, block=block, grid=grid)

    def init_reset_pool(self, seed: int | None = None) -> None:
        """Reseed the reset-pool draws."""
        self.env_resetter.init_reset_pool(self.cuda_data_manager, seed)

    # ------------------------------------------------------------------ stepping
    def step_all_envs(self, actions: Any = None) -> None:
        """Step every replica once (actions: optional (E, N, heads) array written first)."""
        if self.reset_on_host:
            raise ConfigError("call reset_all_envs() before step_all_envs()")
        self.env.step(actions)

    def obs_at_reset(self) -> dict:
        return self.env.reset()

    def reset(self) -> dict:
        return self.reset_all_envs()

    def step(self, actions: Any = None) -> None:
        return self.step_all_envs(actions)

    # ------------------------------------------------------------------ convenience
    def done_flags(self) -> Any:
        """The live ``_done_`` tensor (E,)."""
        return self.cuda_data_manager.data_on_device_via_torch(Constants.DONE)
