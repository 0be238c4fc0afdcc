"""Acting on the env's placeholders: what a policy's networks see (:meth:`Policy.observe`), its forward
(in env chunks on the cpu backend), and the small helpers both the rollout
(:mod:`warp_drive.training.rollout`) and its cpu twin (:mod:`warp_drive.training.cpu_pipeline`) step with.

Observations are read from the placeholders as ``(E, A, ...)`` (envs, the policy's agents,
features) and recorded through :mod:`warp_drive.training.buffers`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from warp_drive.vocab.constants import Constants
from warp_drive.training.algorithms.base import Policy
from warp_drive.training.buffers import obs_row, record_obs
from warp_drive.training.utils.minibatch import slice_rows

Tensor = torch.Tensor


def policy_obs(dm: Any, policy: Policy, obs_names: list[str], at_reset: bool = False) -> Any:
    """What the policy's networks see now (:meth:`Policy.observe`): by default its agents' own
    observations ``(E, A, ...)`` from the placeholders (a dict for Dict obs)."""
    return policy.observe(dm, obs_names, at_reset)


def record_policy_obs(dm: Any, policy: Policy, obs_names: list[str], step: int,
                      rows: slice = slice(None)) -> Any:
    """Policy ``policy``'s observations into its buffer at ``step`` (env rows ``rows``): one gather
    straight into the buffer for a plain agent-first placeholder of a subset of agents, else a view
    (or gather) and a copy.

    Returns the observations to run the policy on, what :func:`policy_obs` gives (same values,
    layout and shape): the buffer rows themselves after the one gather, else that view.
    """
    if (obs_names == [Constants.OBSERVATIONS] and not policy.contiguous_all and not policy.obs_agents_last
            and policy.inputs is None):
        src, dst = dm.data_on_device_via_torch(Constants.OBSERVATIONS), obs_row(policy.buffers, step, rows)
        if src.dtype == dst.dtype and dst.is_contiguous():
            torch.index_select(src, 1, policy.agent_index, out=dst)
            return dst
    obs = policy_obs(dm, policy, obs_names)
    record_obs(policy.buffers, step, obs, rows)
    return obs


def observe(dm: Any, policy: Policy, obs_names: list[str], step: int | None,
            rows: slice = slice(None)) -> Any:
    """The policy's observations to run it on (:func:`policy_obs`), also recorded in its obs buffer
    at ``step`` (env rows ``rows``; :func:`record_policy_obs`) unless ``step`` is None."""
    if step is None:
        return policy_obs(dm, policy, obs_names)
    return record_policy_obs(dm, policy, obs_names, step, rows)


def forward_in_chunks(model: Any, obs: Any, chunk_envs: int | None) -> Any:
    """``model(obs)``, run on at most ``chunk_envs`` envs (first axis) at a time when given, the outputs
    concatenated back (the cpu backend's chunks: :data:`~warp_drive.training.engine.CPU_CHUNK_SAMPLES`).
    ``obs`` may be a tuple too (a recurrent model's ``(observations, state)``)."""
    first = obs
    while not isinstance(first, Tensor):
        first = next(iter(first.values())) if isinstance(first, dict) else first[0]
    num_envs = first.shape[0]
    if chunk_envs is None or chunk_envs >= num_envs:
        return model(obs)
    return cat_outputs([model(slice_rows(obs, start, start + chunk_envs)) for start in range(0, num_envs, chunk_envs)])


def cat_outputs(parts: list[Any]) -> Any:
    """Concatenates a list of same-structured model outputs (tensors, tuples, lists) along axis 0."""
    first = parts[0]
    if isinstance(first, Tensor):
        return torch.cat(parts, 0)
    return type(first)(cat_outputs([p[i] for p in parts]) for i in range(len(first)))


@contextlib.contextmanager
def cached_head_weights(models: Iterable[Any]) -> Iterator[None]:
    """Within the block, models that offer it (``cache_head_weights``, e.g.
    :class:`~warp_drive.training.models.fully_connected.FullyConnected`) concatenate their head
    weights once, at the start, instead of in every no-grad forward. The weights do not change
    during a rollout; inside a CUDA graph the concatenation is captured too, so each replay reads
    the current weights."""
    cached = []
    try:
        for model in models:
            module = getattr(model, "module", model)  # DistributedDataParallel wraps the model
            if hasattr(module, "cache_head_weights"):
                module.cache_head_weights(True)
                cached.append(module)
        yield
    finally:
        for module in cached:
            module.cache_head_weights(False)


def no_mark(phase: str) -> None:
    """Phase marker used when timing is off."""


def where_done(done: Tensor, a: Any, b: Any) -> Any:
    """Per env: ``a`` where done else ``b`` (works on tensors, (mean, std) pairs and lists)."""
    if a is None:
        return None
    if isinstance(a, (list, tuple)):
        return type(a)(where_done(done, x, y) for x, y in zip(a, b))
    return torch.where(done.view(-1, *([1] * (a.dim() - 1))), a, b)
