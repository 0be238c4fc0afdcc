"""Shuffled minibatches over the (time, env) samples of a rollout, on the device."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from warp_drive.errors import DataShapeError

Tensor = torch.Tensor


def map_tensors(fn: Callable[[Tensor], Any], tree: Any) -> Any:
    """``fn`` applied to every tensor of a (nested) mapping/list/tuple; other leaves kept as they are
    (mappings come back as dicts, lists and tuples as their own type)."""
    if isinstance(tree, Tensor):
        return fn(tree)
    if isinstance(tree, Mapping):
        return {k: map_tensors(fn, v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(map_tensors(fn, v) for v in tree)
    return tree


def flatten_leading(tree: Any, num_dims: int = 2) -> Any:
    """Merges the first ``num_dims`` axes of every tensor in a (nested) mapping/list.

    Shapes:
        each tensor: (B, E, *rest) -> (B * E, *rest) for num_dims = 2.
    """
    return map_tensors(lambda t: t.reshape(-1, *t.shape[num_dims:]), tree)


def index_tree(tree: Any, index: Tensor, dim: int = 0) -> Any:
    """Selects entries ``index`` along axis ``dim`` of every tensor in a (nested) mapping/list."""
    return map_tensors(lambda t: t.index_select(dim, index), tree)


def slice_rows(tree: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` (first axis) of every tensor in a (nested) mapping/list: views, no copies."""
    return map_tensors(lambda t: t[start:stop], tree)


def check_minibatches(num_samples: int, num_minibatches: int) -> None:
    """Raises :class:`~warp_drive.errors.DataShapeError` unless ``num_minibatches`` divides ``num_samples``."""
    if num_minibatches < 1 or num_samples % num_minibatches != 0:
        raise DataShapeError(
            f"num_minibatches={num_minibatches} must divide the {num_samples} samples."
        )


def minibatch_indices(
    num_samples: int,
    num_minibatches: int,
    *,
    device: torch.device | str | None = None,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, ...]:
    """A random permutation of ``range(num_samples)`` split into equal index chunks.

    Raises:
        DataShapeError: If ``num_minibatches`` does not divide ``num_samples``.

    Shapes:
        each output: (num_samples // num_minibatches,) int64 on ``device``.
    """
    check_minibatches(num_samples, num_minibatches)
    return torch.randperm(num_samples, device=device, generator=generator).chunk(num_minibatches)


def iterate_minibatches(
    batch: Mapping[str, Any],
    num_minibatches: int,
    *,
    generator: torch.Generator | None = None,
) -> Iterator[dict[str, Any]]:
    """Yields shuffled minibatches of a rollout batch.

    The first two axes (time and env) are merged into one sample axis, which is
    permuted and split; agent and feature axes stay whole, so every minibatch row keeps all
    agents of one (time step, env).

    Args:
        batch: Mapping of name -> tensor (or nested mapping/list of tensors), all with the same
            leading shape, e.g. ``obs`` (B, E, A, F), ``actions`` (B, E, A, C),
            ``advantages`` (B, E, A).
        num_minibatches: Number of chunks; must divide the number of samples.
        generator: Torch generator on the batch's device (for reproducible shuffles).

    Shapes:
        yields: each tensor (M, *rest) with M = B * E // num_minibatches.
    """
    flat = flatten_leading(dict(batch))
    tensors: list[Tensor] = []
    map_tensors(tensors.append, flat)
    if not tensors:
        raise DataShapeError("batch holds no tensors.")
    n, device = tensors[0].shape[0], tensors[0].device
    for tensor in tensors:
        if tensor.shape[0] != n:
            raise DataShapeError(
                f"batch tensors disagree on the leading shape: {tensor.shape[0]} vs {n} samples."
            )
    if num_minibatches == 1:  # the whole batch: order does not matter, so skip the gather copy
        yield flat
        return
    for index in minibatch_indices(n, num_minibatches, device=device, generator=generator):
        yield index_tree(flat, index)


#: the fields of a recurrent policy's batch that have no time axis: ``(E, A, *S)`` start states
SEQUENCE_START_FIELDS = ("start_state",)


def sequence_layout(batch: Mapping[str, Any]) -> dict[str, Any]:
    """A recurrent policy's time-first batch as env x agent sequences, sequence first: views, no copies.

    Shapes:
        each tensor ``(B, E, A, *rest)`` -> ``(E * A, B, *rest)``; ``start_state`` ``(E, A, *S)`` -> ``(E * A, *S)``.
    """
    def seq(t: Tensor) -> Tensor:
        return t.movedim(0, 2).reshape(t.shape[1] * t.shape[2], t.shape[0], *t.shape[3:])

    out = {k: map_tensors(seq, v) for k, v in batch.items() if k not in SEQUENCE_START_FIELDS}
    for k in SEQUENCE_START_FIELDS:
        if k in batch:
            out[k] = batch[k].reshape(-1, *batch[k].shape[2:])
    return out


def iterate_sequence_minibatches(
    batch: Mapping[str, Any],
    num_minibatches: int,
    *,
    generator: torch.Generator | None = None,
) -> Iterator[dict[str, Any]]:
    """Yields shuffled minibatches of whole env x agent sequences of a recurrent policy's batch
    (:func:`sequence_layout`): every time step of a sequence, and its start state, in the same minibatch.

    Raises:
        DataShapeError: If ``num_minibatches`` does not divide the ``E * A`` sequences.

    Shapes:
        yields: each tensor ``(M, B, *rest)``, ``start_state`` ``(M, *S)``, with M = E * A // num_minibatches.
    """
    seqs = sequence_layout(batch)
    n, device = seqs["start_state"].shape[0], seqs["start_state"].device
    if num_minibatches == 1:
        check_minibatches(n, 1)
        yield seqs
        return
    for index in minibatch_indices(n, num_minibatches, device=device, generator=generator):
        yield index_tree(seqs, index)
