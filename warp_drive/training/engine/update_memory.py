"""How many agent-samples one forward + backward of the update may take on a GPU, so that the update's
memory stays bounded whatever the batch.

The estimate is the model's activation floats per sample: for every ``nn.Linear`` its input and its
output (what autograd keeps for the backward, and the gradient of the output), times 4 bytes. The
budget is a fraction of the memory the update can use: the device's free memory plus what PyTorch's caching
allocator holds without using it (``memory_reserved - memory_allocated``; the driver counts that as taken, so
after one large update the free memory alone reads as nearly none). The chunk is rounded down to a power of
two, and the engine sizes it once per policy (:meth:`Engine.update_chunk_rows
<warp_drive.training.engine.Engine.update_chunk_rows>`), so the update's shapes stay the same from one
iteration to the next. Minibatches that fit are not split; larger ones run in chunks, gradients accumulated
(:func:`~warp_drive.training.algorithms.actor_critic.update.accumulate_gradients`).

Why (H100, 2,000 envs x 1,000 agents, float32, session 19): sized from ``mem_get_info`` alone at every update,
the chunks shrank to ~1/45 of the first iteration's once the cache had grown, and an iteration took 6.5 s
instead of ~0.33 s (``benchmarks/results/learner_session19_NVIDIA_H100_80GB_HBM3.json``).
"""

from __future__ import annotations

import torch
from torch import nn

#: Fraction of the free device memory one update chunk's activations may use.
FREE_MEMORY_FRACTION = 0.6
#: Bytes per activation float (float32).
BYTES_PER_FLOAT = 4


def activation_bytes_per_sample(model: nn.Module) -> int | None:
    """Estimated activation bytes one agent-sample costs in the update's forward + backward, or None
    when the model has no ``nn.Linear`` layers to count (its memory is then not bounded here)."""
    floats = sum(m.in_features + m.out_features for m in model.modules() if isinstance(m, nn.Linear))
    return floats * BYTES_PER_FLOAT if floats else None


def available_bytes(device: torch.device) -> int:
    """Memory an update on ``device`` (CUDA) can use: the driver's free memory plus the blocks PyTorch's caching
    allocator reserves without using them."""
    free, _total = torch.cuda.mem_get_info(device)
    return int(free) + max(0, int(torch.cuda.memory_reserved(device)) - int(torch.cuda.memory_allocated(device)))


def auto_chunk_samples(model: nn.Module, device: torch.device, fraction: float = FREE_MEMORY_FRACTION) -> int | None:
    """Agent-samples per update chunk on ``device`` (a CUDA device): the largest power of two whose activations
    fit ``fraction`` of :func:`available_bytes`; None: no bound known (no ``nn.Linear``, or not CUDA)."""
    per_sample = activation_bytes_per_sample(model)
    if per_sample is None or device.type != "cuda":
        return None
    samples = max(1, int(available_bytes(device) * fraction) // per_sample)
    return 1 << (samples.bit_length() - 1)
