"""One policy update: epochs x minibatches of loss, backward, gradient clipping and step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.actor_critic.a2c import A2C, Metrics, explained_variance
from warp_drive.training.algorithms.compiled import LossFunction
from warp_drive.training.algorithms.normalization import moments
from warp_drive.training.algorithms.sample_mask import chunk_weight
from warp_drive.training.models.masked_input import active_of
from warp_drive.training.interrupt import check_abort
from warp_drive.training.buffers import RolloutBatch

Tensor = torch.Tensor


def grad_norm_and_clip(parameters: Iterable[nn.Parameter], max_grad_norm: float | None) -> Tensor:
    """Total L2 norm of the current gradients over all parameters jointly (on the device), clipping them if asked.

    Returns:
        0-d tensor: the norm before clipping.
    """
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return torch.zeros(())
    if max_grad_norm is None:
        get_total_norm = getattr(nn.utils, "get_total_norm", None)
        if get_total_norm is not None:
            return get_total_norm([p.grad for p in params])
        max_grad_norm = float("inf")
    return nn.utils.clip_grad_norm_(params, max_grad_norm)


def update_policy(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    algorithm: A2C,
    batch: RolloutBatch | Mapping[str, Any],
    *,
    timestep: int,
    num_epochs: int = 1,
    num_minibatches: int = 1,
    max_grad_norm: float | None = None,
    generator: torch.Generator | None = None,
    backward: Callable[[Tensor], None] | None = None,
    clip_gradients: Callable[[], None] | None = None,
    track_grad_norm: bool = True,
    chunk_rows: int | None = None,
    autocast_dtype: torch.dtype | None = None,
    loss_fn: LossFunction | None = None,
) -> Metrics:
    """Runs ``num_epochs`` passes of ``num_minibatches`` gradient steps over a rollout batch.

    Args:
        model: The policy (contract in ``warp_drive.training.models``).
        optimizer: Its optimizer (learning rate already set for this iteration).
        algorithm: :class:`A2C` or :class:`PPO`.
        batch: a :class:`~warp_drive.training.buffers.RolloutBatch` (or a mapping of its fields):
            ``obs`` (tensor or dict of tensors), ``actions``, ``advantages``, ``returns`` and, for
            PPO, ``old_log_probs`` (plus ``old_values`` with value clipping).
        timestep: Env timestep for the coefficient schedules.
        num_epochs: Passes over the batch.
        num_minibatches: Gradient steps per pass (must divide B * E).
        max_grad_norm: Clip threshold, or None for no clipping.
        generator: Torch generator on the batch device for the shuffles.
        backward: replaces ``loss.backward()`` (e.g. Lightning's ``manual_backward``).
        clip_gradients: replaces the clipping to ``max_grad_norm`` (e.g. Lightning's
            ``clip_gradients``); the gradient norm is then measured before it is called.
        track_grad_norm: report ``grad_norm`` (always measured when this function clips).
        chunk_rows: run each minibatch's forward and backward in chunks of at most this many
            (time, env) rows (:func:`accumulate_gradients`: the same step up to float rounding, with
            activations sized by the chunk). None: the whole minibatch at once.
        autocast_dtype: run the model's forward (and so its backward) under autocast to this
            dtype (``torch.bfloat16``: ``trainer.update_precision: bf16``); its outputs are cast
            back to float32 before the loss, and weights, gradients and optimizer state stay
            float32. None: the model's own precision.
        loss_fn: the policy's (possibly compiled) forward + loss
            (:class:`~warp_drive.training.algorithms.compiled.LossFunction`); None: an uncompiled one.

    Returns:
        Metrics averaged over all gradient steps (0-d tensors, no host sync), plus
        ``grad_norm`` (mean pre-clip gradient norm).

    A model with an ``update_obs_normalizer(obs)`` method (``FullyConnected`` with
    ``normalize_obs``) gets the batch's observations once, after the gradient steps.

    Shapes:
        obs: (B, E, A, *obs_dims); actions: (B, E, A, n_columns);
        advantages, returns, old_log_probs, old_values: (B, E, A).
    """
    if chunk_rows is not None and (isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1):
        raise ConfigError(f"chunk_rows={chunk_rows!r} must be a positive number of rows, or None (no chunks)")
    totals: dict[str, Tensor] = {}
    steps = 0
    params = [p for p in model.parameters() if p.requires_grad]
    batch = RolloutBatch.of(batch)
    for _ in range(num_epochs):
        for mb in batch.minibatches(num_minibatches, generator=generator):
            optimizer.zero_grad(set_to_none=True)
            if chunk_rows is not None and _num_rows(mb.obs) > chunk_rows:
                metrics = accumulate_gradients(model, algorithm, mb, timestep=timestep, chunk_rows=chunk_rows,
                                               backward=backward, autocast_dtype=autocast_dtype, loss_fn=loss_fn)
            else:
                loss, metrics, _ = minibatch_loss(model, algorithm, mb, timestep, autocast_dtype=autocast_dtype,
                                                  loss_fn=loss_fn)
                (backward or Tensor.backward)(loss)
            if clip_gradients is None:
                metrics["grad_norm"] = grad_norm_and_clip(params, max_grad_norm).detach()
            else:
                if track_grad_norm:
                    metrics["grad_norm"] = grad_norm_and_clip(params, None).detach()
                clip_gradients()
            optimizer.step()
            for key, value in metrics.items():
                totals[key] = totals[key] + value if key in totals else value
            steps += 1
    update_obs_statistics(model, batch.obs)
    return {key: value / steps for key, value in totals.items()}


def update_obs_statistics(model: nn.Module, obs: Any) -> None:
    """Merges a batch's observations into the model's running observation statistics, if it keeps any
    (``update_obs_normalizer``), after the gradient steps (why: :class:`.normalization.ObsNormalizer`)."""
    update_obs_normalizer = getattr(getattr(model, "module", model), "update_obs_normalizer", None)
    if update_obs_normalizer is not None:
        update_obs_normalizer(obs)


#: Metrics that are not means over samples: a chunked minibatch reports the last chunk's.
CONSTANT_METRICS = frozenset({"vf_loss_coeff", "entropy_coeff"})


def accumulate_gradients(
    model: nn.Module,
    algorithm: A2C,
    minibatch: RolloutBatch,
    *,
    timestep: int,
    chunk_rows: int,
    backward: Callable[[Tensor], None] | None = None,
    autocast_dtype: torch.dtype | None = None,
    loss_fn: LossFunction | None = None,
) -> Metrics:
    """Accumulates one minibatch's loss gradient into ``.grad``, ``chunk_rows`` rows at a time.

    Every loss term is a mean over samples, so the minibatch loss is the sum over chunks of
    ``(rows_c / rows) * loss_c`` (with inactive agents, :mod:`~warp_drive.training.agent_masks`: each
    chunk's share of the active samples); each chunk's forward and backward run on their own and only one
    chunk's activations are alive at a time. Advantage standardization
    (``normalize_advantage``) uses the whole minibatch's mean and std; the explained variance is
    computed over the whole minibatch; other metrics are the rows-weighted means of the chunks'.
    Under DistributedDataParallel the gradients are all-reduced once, with the last chunk.

    Call ``optimizer.zero_grad()`` first; step the optimizer after.

    Returns:
        The minibatch's metrics (0-d tensors), as :meth:`A2C.compute_loss` reports them.
    """
    rows = _num_rows(minibatch.obs)
    active = active_of(minibatch.obs)  # agents in the game: chunks weigh by their share of them (agent_masks.py)
    stats = moments(minibatch.advantages, active) if getattr(algorithm, "normalize_advantage", False) else None
    no_sync = getattr(model, "no_sync", None)
    totals: dict[str, Tensor] = {}
    last: Metrics = {}
    values_seen: Tensor | None = None  # the chunks' values, copied (a view would keep each chunk's outputs alive)
    for start in range(0, rows, chunk_rows):
        check_abort()  # a stop requested inside a slow iteration (warp_drive.training.interrupt)
        stop = min(start + chunk_rows, rows)
        chunk = minibatch.rows(start, stop)
        weight = chunk_weight(active, start, stop, rows)
        sync = stop == rows or no_sync is None
        with contextlib.nullcontext() if sync else no_sync():
            loss, last, values = minibatch_loss(model, algorithm, chunk, timestep, stats, autocast_dtype,
                                                loss_fn=loss_fn)
            (backward or Tensor.backward)(loss * weight)
        if values_seen is None:
            values_seen = values.new_empty((rows, *values.shape[1:]))
        values_seen[start:stop].copy_(values.detach())
        for key, value in last.items():
            if key not in CONSTANT_METRICS:
                value = value * weight
                totals[key] = totals[key] + value if key in totals else value
    out = dict(totals)
    out.update((key, last[key]) for key in CONSTANT_METRICS & last.keys())
    if "explained_variance" in out and values_seen is not None:
        targets = algorithm.value_targets(minibatch.returns)
        out["explained_variance"] = explained_variance(values_seen.view_as(targets), targets, active)
    return out


def minibatch_loss(model: nn.Module, algorithm: A2C, batch: RolloutBatch, timestep: int,
                   advantage_stats: tuple[Tensor, Tensor] | None = None,
                   autocast_dtype: torch.dtype | None = None,
                   coefficients: tuple[Tensor, Tensor] | None = None,
                   loss_fn: LossFunction | None = None) -> tuple[Tensor, Metrics, Tensor]:
    """The model's forward on ``batch`` (under autocast to ``autocast_dtype`` if given, outputs
    back in float32) and the algorithm's loss: ``(loss, metrics, values)``. ``coefficients``:
    ``(vf_loss_coeff, entropy_coeff)`` as 0-d tensors instead of the schedules' values at
    ``timestep`` (a captured step reads them from fixed addresses). ``loss_fn``: the policy's
    (possibly compiled) :class:`~warp_drive.training.algorithms.compiled.LossFunction`, instead of an
    uncompiled one for ``model``, ``algorithm`` and ``autocast_dtype``."""
    fn = loss_fn or LossFunction(model, algorithm, autocast_dtype, compile=False)
    return fn(batch, algorithm.coefficients(timestep) if coefficients is None else coefficients,
              advantage_stats=advantage_stats)


def _num_rows(obs: Any) -> int:
    """Samples of a minibatch's observations (a tensor, or a dict of them)."""
    first = next(iter(obs.values())) if isinstance(obs, Mapping) else obs
    return first.shape[0]
