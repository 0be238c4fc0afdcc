"""Stop training at the first NaN or infinite value, before it reaches a checkpoint.

Once per iteration (after the update, before metrics and the checkpoint) :func:`check_iteration`
reduces every array of the iteration to one flag on the device: the recorded observations and
rewards, the sampler's error bits, each policy's values, log-probabilities, advantages and returns,
the update's losses and gradient norm, and the trained weights. That is one host read per
iteration, none per step, and nothing is written: a finite run trains bit-identically. Only when
the flag is set are the arrays searched, in causal order (an env's NaN reward also makes the
returns, the loss and the weights NaN: the first one is the cause), and a
:class:`~warp_drive.errors.NonFiniteError` names the array, the env and agent (env arrays), the
rollout step and the value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import Tensor

from warp_drive.errors import NonFiniteError, SamplerError

#: Fix hints by the kind of array that held the first non-finite value.
_ENV_FIX = ("the env produced it: check its step and reset for division by zero, log of 0 or overflow "
            "(warp_drive.env_cpu_gpu_consistency_checker runs both backends side by side)")
_MODEL_FIX = ("the policy diverged: lower policy.<tag>.lr, set policy.<tag>.clip_grad_norm: true with a smaller "
              "max_grad_norm, or normalize the env's rewards and observations")


def _not_finite(t: Tensor) -> Tensor:
    """A 0-d bool tensor on ``t``'s device: ``t`` holds a NaN or an infinity (one reduction)."""
    if t.numel() == 0 or not t.is_floating_point():
        return torch.zeros((), dtype=torch.bool, device=t.device)
    low, high = torch.aminmax(t.detach())
    return ~(torch.isfinite(low) & torch.isfinite(high))


#: What a check reads: ``(policies {tag: Policy}, recorded rewards (B, E, N), sampler, update metrics)``.
Arrays = tuple[Mapping[str, Any], Tensor, Any, Mapping[str, Mapping[str, Tensor]]]


def _arrays(arrays: Arrays) -> Iterator[tuple[str, str, Any, Tensor]]:
    """``(kind, name, policy, tensor)`` in causal order; kind is env, sampler, model or weights."""
    policies, rewards, sampler, update_metrics = arrays
    for p in policies.values():
        obs = p.buffers.obs
        for key, t in (obs.items() if isinstance(obs, dict) else [(None, obs)]):
            yield "env", f"observations{f' {key!r}' if key else ''} (policy '{p.tag}')", p, t
    yield "env", "rewards", None, rewards
    flag = sampler.error_flag
    if flag is not None:
        yield "sampler", "the sampler's error flag", None, flag
    for p in policies.values():
        b = p.buffers
        for name in ("values", "log_probs", "advantages", "returns"):
            if getattr(b, name, None) is not None:  # what the policy's algorithm records
                yield "model", f"{name} (policy '{p.tag}')", p, getattr(b, name)
    for tag, metrics in update_metrics.items():
        for key, t in metrics.items():
            what = "gradient norm" if key == "grad_norm" else f"update metric {key!r}"
            yield "model", f"{what} (policy '{tag}')", None, t
    for p in policies.values():
        if p.to_train:
            for pname, param in p.model.named_parameters():
                yield "weights", f"weight {pname!r} (policy '{p.tag}')", None, param


def iteration_flag(arrays: Arrays) -> Tensor:
    """One 0-d bool tensor on the device: any array of the iteration is non-finite, or the
    sampler's error flag is set. No host synchronisation."""
    flags = [(t != 0).any() if kind == "sampler" else _not_finite(t)
             for kind, _, _, t in _arrays(arrays)]
    return torch.stack(flags).any()


def check_iteration(iteration: int, arrays: Arrays) -> None:
    """Raise if iteration ``iteration``, just finished, met a non-finite value in ``arrays`` (one host read).

    Raises:
        NonFiniteError: naming the first bad array in causal order, its env and agent (env
            arrays), rollout step and value, and the fix.
    """
    from warp_drive.training.interrupt import agree_across_ranks

    local = bool(iteration_flag(arrays))
    (any_rank,) = agree_across_ranks([int(local)])  # every rank stops together (identity in one process)
    if local:
        raise diagnose(iteration, arrays)
    if any_rank:
        raise NonFiniteError(f"training stopped at iteration {iteration}, before its checkpoint: another rank "
                             "met a non-finite value (its message names the array)", iteration=iteration)


def diagnose(it: int, arrays: Arrays) -> NonFiniteError:
    """The error for the first non-finite array (searched on the host; called once, on failure)."""
    head = f"training stopped at iteration {it}, before its checkpoint"
    for kind, name, policy, t in _arrays(arrays):
        if kind == "sampler":
            if int(t.reshape(-1)[0]) == 0:
                continue
            try:
                arrays[2].check()
            except SamplerError as err:
                return NonFiniteError(f"{head}: {err}", array=name, iteration=it)
            continue
        if not bool(_not_finite(t)):
            continue
        bad = ~torch.isfinite(t.detach())
        first = bad.nonzero()[0].tolist()
        value = float(t.detach()[tuple(first)]) if first else float(t.detach())
        count = f"{int(bad.sum())} of {t.numel()} values"
        if kind == "env":
            env = first[1]
            agent = int(policy.agent_ids[first[2]]) if policy is not None else first[2]
            feature = f", feature {first[3:]}" if len(first) > 3 else ""
            return NonFiniteError(
                f"{head}: the {name} hold {value} at rollout step {first[0]}, env {env}, agent {agent}{feature} "
                f"({count} non-finite); {_ENV_FIX}", array=name, iteration=it, value=value, env=env, agent=agent)
        where = f" at index {first}" if first else ""
        return NonFiniteError(f"{head}: the {name} holds {value}{where} ({count} non-finite); {_MODEL_FIX}",
                              array=name, iteration=it, value=value)
    return NonFiniteError(f"{head}: a non-finite value was flagged on the device but not found again; {_MODEL_FIX}",
                          iteration=it)
