"""2.7.1's Numba service classes: the warp_drive services on a Numba function manager.

:class:`NumbaSampler`, :class:`NumbaEnvironmentReset` and :class:`NumbaLogController` take a
:class:`~warp_drive.managers.numba_function_manager.NumbaFunctionManager` and run warp_drive's
service kernels (its :attr:`~warp_drive.managers.numba_function_manager.NumbaFunctionManager.services`)
on the shared store, so everything the services do on the pycuda backend they do here too (multi-head
and Gaussian sampling, one pool draw per env shared by all its pools). ``NumbaSampler`` adds 2.7.1's
Ornstein-Uhlenbeck exploration noise for actions registered with ``is_deterministic=True``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from warp_drive.vocab.data_feed import DataFeed
from warp_drive.errors import ConfigError, SamplerError
from warp_drive.services.environment_reset import EnvironmentReset
from warp_drive.managers.function_manager import FunctionManager
from warp_drive.services.log_controller import LogController
from warp_drive.services.sampler import Sampler

__all__ = ["NumbaEnvironmentReset", "NumbaLogController", "NumbaSampler", "service_manager"]

#: 2.7.1's OU defaults (``NumbaSampler.sample``): damping, stddev, scale.
OU_DEFAULTS = {"damping": 0.15, "stddev": 0.2, "scale": 1.0}
OU_STATE_SUFFIX = "_ou_state"


def service_manager(function_manager: FunctionManager) -> FunctionManager:
    """The function manager that runs the service kernels: a Numba manager's ``services``, else itself."""
    return getattr(function_manager, "services", function_manager)


class NumbaSampler(Sampler):
    """The Sampler on a Numba function manager, plus OU noise for deterministic (continuous) actions.

    ``sample(dm, distribution, action_name, **params)``: for an action registered with
    ``is_deterministic=True`` the distribution is the policy's action (E, A, 1) and the sample is
    ``action + scale * ou`` with ``ou <- (1 - damping) * ou + stddev * N(0, 1)`` per (env, agent)
    (params ``damping``, ``stddev``, ``scale``; 2.7.1's defaults 0.15, 0.2, 1.0); otherwise a
    categorical draw (params ``use_argmax`` and the Sampler's own). 2.7.1 chose OU whenever the last
    dimension was 1 (a one-action categorical head went to OU: its defect 16); here registration decides.
    """

    def __init__(self, function_manager: FunctionManager) -> None:
        super().__init__(service_manager(function_manager))
        self._noise: torch.Generator | None = None

    def init_random(self, seed: int | None = None) -> None:
        super().init_random(seed)
        self._noise = None  # reseeded from the new seed on the next OU draw

    def register_actions(self, data_manager: Any, action_name: str, num_actions: int, is_deterministic: bool = False) -> None:
        super().register_actions(data_manager, action_name, num_actions, is_deterministic)
        state = action_name + OU_STATE_SUFFIX
        if is_deterministic and not data_manager.is_data_on_device(state):
            shape = data_manager.get_shape(action_name)
            feed = DataFeed()
            feed.add_data(state, np.zeros((*shape[:2], 1), np.float32))
            data_manager.push_data_to_device(feed, torch_accessible=True)

    def sample(self, data_manager: Any, distribution: torch.Tensor, action_name: str, use_argmax: bool = False,
               **params: Any) -> None:
        registered = self._registered.get(action_name)
        if registered is not None and registered[1]:
            if use_argmax:
                params["scale"] = 0.0  # the deterministic action itself
            self.sample_ou(data_manager, distribution, action_name, **params)
            return
        unknown = set(params) & set(OU_DEFAULTS)
        if unknown:
            raise ConfigError(f"OU parameters {sorted(unknown)} apply to actions registered with is_deterministic=True; "
                              f"'{action_name}' is categorical")
        super().sample(data_manager, distribution, action_name, use_argmax=use_argmax, **params)

    def sample_ou(self, data_manager: Any, distribution: torch.Tensor, action_name: str, damping: float = 0.15,
                  stddev: float = 0.2, scale: float = 1.0) -> None:
        """One OU step for every (env, agent) of ``action_name`` (see the class docstring)."""
        if self._seed is None:
            raise SamplerError("call init_random(seed) before sampling")
        ou = data_manager.data_on_device_via_torch(action_name + OU_STATE_SUFFIX)
        actions = data_manager.data_on_device_via_torch(action_name).view(ou.shape)
        if not isinstance(distribution, torch.Tensor) or distribution.numel() != ou.numel():
            raise SamplerError(f"the OU sampler of '{action_name}' takes a tensor of {tuple(ou.shape)} actions, "
                               f"got {getattr(distribution, 'shape', type(distribution).__name__)}")
        mean = distribution.reshape(ou.shape).to(actions.dtype)
        if scale < 1e-8:
            actions.copy_(mean)
            return
        if self._noise is None:
            self._noise = torch.Generator(device=ou.device)
            self._noise.manual_seed(self._seed)
        noise = torch.randn(ou.shape, generator=self._noise, device=ou.device, dtype=ou.dtype)
        ou.mul_(1.0 - damping).add_(noise, alpha=stddev)
        torch.add(mean, ou, alpha=scale, out=actions)

    def reset_ou_state(self, data_manager: Any, action_name: str) -> None:
        """Zero the OU state of ``action_name`` (e.g. at an episode start)."""
        data_manager.data_on_device_via_torch(action_name + OU_STATE_SUFFIX).zero_()


class NumbaEnvironmentReset(EnvironmentReset):
    """EnvironmentReset on a Numba function manager (saved copies and reset pools alike)."""

    def __init__(self, function_manager: FunctionManager) -> None:
        super().__init__(service_manager(function_manager))


class NumbaLogController(LogController):
    """LogController on a Numba function manager."""

    def __init__(self, function_manager: FunctionManager) -> None:
        super().__init__(service_manager(function_manager))
