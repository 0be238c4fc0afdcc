"""WarpDrive 2.7.1's ``autoinit_pycuda``: importing this module makes the CUDA primary context
current for pycuda.

This is the one module of the package with an import-time effect, and it is its purpose; nothing in
``warp_drive`` but its 2.7.1 re-export ``warp_drive.utils.autoinit_pycuda`` imports it (the pycuda managers
attach to the context when they are constructed). With pycuda and a visible CUDA device, the device's
primary context (the one PyTorch uses) is made current and exposed as ``context`` and ``device``; the
context is released at exit. Without them, importing does nothing and both are None.
"""

from __future__ import annotations

from typing import Any

from warp_drive.compat271.cuda_helpers import make_current_context
from warp_drive.cuda.device import has_cuda_device

context: Any = make_current_context() if has_cuda_device() else None
device: Any = None if context is None else context.get_device()
