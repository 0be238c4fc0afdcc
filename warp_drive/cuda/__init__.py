"""CUDA sources of the service layer and the tools that render, compile and check them."""

from __future__ import annotations

from pathlib import Path

CORE_DIR = Path(__file__).resolve().parent / "core"


def core_dir() -> Path:
    """Directory holding the core service headers (``core_service.cuh`` and friends)."""
    return CORE_DIR


def project_root() -> Path:
    """The directory holding the ``warp_drive`` package (and ``example_envs``): a source
    checkout's root, or site-packages for an installed wheel. Nothing is ever written there."""
    return CORE_DIR.parents[2]
