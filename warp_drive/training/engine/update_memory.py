"""How many agent-samples one forward + backward of the update may take on a GPU, so that the update's
memory stays bounded whatever the batch.

The estimate is the model's activation floats per sample: for every ``nn.Linear`` its input and its
output (what autograd keeps for the backward, and the gradient of the output), times 4 bytes. The
budget is a fraction of the device's free memory at the time of the update. Minibatches that fit are not split;
larger ones run in chunks, gradients accumulated (:func:`~warp_drive.training.algorithms.actor_critic.update.accumulate_gradients`).
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


def auto_chunk_samples(model: nn.Module, device: torch.device, fraction: float = FREE_MEMORY_FRACTION) -> int | None:
    """Agent-samples per update chunk on ``device`` (a CUDA device), or None: no bound known."""
    per_sample = activation_bytes_per_sample(model)
    if per_sample is None or device.type != "cuda":
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return max(1, int(free * fraction) // per_sample)
