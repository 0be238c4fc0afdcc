"""Fixtures of the GPU tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def no_tf32():
    """A CUDA device with float32 matrix products in full float32 (TF32 off for the test)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = before
