"""A CPU run's resident memory: torch's Dynamo imported without Triton.

``torch.optim``'s optimizers import ``torch._dynamo`` on their first call (``Optimizer.add_param_group``,
``zero_grad`` and ``step`` are wrapped by ``torch._disable_dynamo`` / ``_use_grad_for_differentiable``),
and Dynamo's import probes Triton (``torch.utils._triton.has_triton_package``). Where Triton is installed
(the ``[dev]`` extra; PyTorch's CUDA wheels ship it) that probe loads its compiler library: 73 MB of
resident memory (torch 2.13, Triton 3.9) that a run on the CPU never uses, since Triton kernels need a
CUDA device. :func:`import_dynamo_without_triton` imports Dynamo first with Triton hidden.

Triton stays importable afterwards, but torch's cached probe then says it is absent: call it only in a
process that compiles no GPU kernels (the command lines on the cpu backend do).
"""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger(__name__)


def import_dynamo_without_triton() -> bool:
    """Imports ``torch._dynamo`` with ``import triton`` failing (Python's import blocking: ``None`` in
    ``sys.modules``), then lifts the block. Does nothing (returns False) where Dynamo or Triton is already
    imported, or under ``TRITON_INTERPRET`` (Triton's CPU interpreter, used by tests of the Triton kernels)."""
    if "torch._dynamo" in sys.modules or "triton" in sys.modules or os.environ.get("TRITON_INTERPRET"):
        return False
    sys.modules["triton"] = None  # type: ignore[assignment]  # `import triton` raises ImportError inside
    try:
        import torch._dynamo  # noqa: F401
    finally:
        if "triton" in sys.modules and sys.modules["triton"] is None:
            del sys.modules["triton"]
    logger.debug("torch._dynamo imported without Triton (a CPU run)")
    return True
