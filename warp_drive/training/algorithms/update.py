"""One policy update: epochs x minibatches of loss, backward, gradient clipping and step."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

from warp_drive.training.algorithms.a2c import A2C, Metrics
from warp_drive.training.utils.minibatch import iterate_minibatches

Tensor = torch.Tensor


def grad_norm_and_clip(parameters: Iterable[nn.Parameter], max_grad_norm: float | None) -> Tensor:
    """Total L2 norm of the current gradients (after backward), clipping them if asked.

    Unlike the reference (section 9, defect 20) this is the norm of the gradients just computed,
    over all parameters jointly, and it stays on the device.

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
    batch: Mapping[str, Any],
    *,
    timestep: int,
    num_epochs: int = 1,
    num_minibatches: int = 1,
    max_grad_norm: float | None = None,
    generator: torch.Generator | None = None,
    backward: Callable[[Tensor], None] | None = None,
    clip_gradients: Callable[[], None] | None = None,
    track_grad_norm: bool = True,
) -> Metrics:
    """Runs ``num_epochs`` passes of ``num_minibatches`` gradient steps over a rollout batch.

    Args:
        model: The policy (contract in ``warp_drive.training.models``).
        optimizer: Its optimizer (learning rate already set for this iteration).
        algorithm: :class:`A2C` or :class:`PPO`.
        batch: ``obs`` (tensor or dict of tensors), ``actions``, ``advantages``, ``returns`` and,
            for PPO, ``old_log_probs`` (plus ``old_values`` with value clipping).
        timestep: Env timestep for the coefficient schedules.
        num_epochs: Passes over the batch.
        num_minibatches: Gradient steps per pass (must divide B * E).
        max_grad_norm: Clip threshold, or None for no clipping.
        generator: Torch generator on the batch device for the shuffles.
        backward: replaces ``loss.backward()`` (e.g. Lightning's ``manual_backward``).
        clip_gradients: replaces the clipping to ``max_grad_norm`` (e.g. Lightning's
            ``clip_gradients``); the gradient norm is then measured before it is called.
        track_grad_norm: report ``grad_norm`` (always measured when this function clips).

    Returns:
        Metrics averaged over all gradient steps (0-d tensors, no host sync), plus
        ``grad_norm`` (mean pre-clip gradient norm).

    Shapes:
        obs: (B, E, A, *obs_dims); actions: (B, E, A, n_columns);
        advantages, returns, old_log_probs, old_values: (B, E, A).
    """
    totals: dict[str, Tensor] = {}
    steps = 0
    params = [p for p in model.parameters() if p.requires_grad]
    for _ in range(num_epochs):
        for mb in iterate_minibatches(batch, num_minibatches, generator=generator):
            head_outputs, values = model(mb["obs"])
            loss, metrics = algorithm.compute_loss(
                head_outputs,
                values,
                mb["actions"],
                mb["advantages"],
                mb["returns"],
                timestep=timestep,
                old_log_probs=mb.get("old_log_probs"),
                old_values=mb.get("old_values"),
            )
            optimizer.zero_grad(set_to_none=True)
            if backward is None:
                loss.backward()
            else:
                backward(loss)
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
    return {key: value / steps for key, value in totals.items()}
