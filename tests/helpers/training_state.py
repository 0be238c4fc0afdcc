"""Everything a cpu-backend trainer's results are made of, as tensors, for bit-for-bit comparisons."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch


def trainer_state(t: Any, skip_buffers: Iterable[str] = ()) -> dict[str, torch.Tensor]:
    """Every policy's rollout buffers (but the fields in ``skip_buffers``), weights and episode
    return sum; the rollout's shared per-step records; the env arrays on the data store; the
    sampler's and the reset pool's counters. Copies, keyed by name."""
    skip = set(skip_buffers)
    out = {}
    for tag, p in t.policies.items():
        for field in p.buffers.__dataclass_fields__:
            if field in skip:
                continue
            value = getattr(p.buffers, field)
            if value is None:  # a record field the policy does not keep (a stateless model's start_state)
                continue
            for k, v in (value.items() if isinstance(value, dict) else [("", value)]):
                out[f"{tag}.{field}{k}"] = v.clone()
        for k, v in p.model.state_dict().items():
            out[f"{tag}.weights.{k}"] = v.clone()
        out[f"{tag}.episode_returns"] = p.stats.return_sum.clone()
    for name, value in vars(t.rollout.shared).items():
        if value is not None:
            out[f"shared.{name}"] = value.clone()
    for k, v in t.env_wrapper.cuda_data_manager.host_view().items():
        out[f"store.{k}"] = torch.as_tensor(np.array(v))
    for k, v in t.sampler.counters_state().items():
        out[f"sampler.{k}"] = v
    out["pool_counters"] = t.env_wrapper.env_resetter.state_dict()["pool_counters"]
    return out


def same_to_float_rounding(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Floating tensors within float32 rounding, everything else exactly equal. For the env parts'
    one-thread GEMMs against the plain loop's two-thread GEMM: bit for bit with MKL on AVX2, up to
    1 ulp apart on AVX-512 (see tests/cpu/training/test_cpu_pipeline.py)."""
    if a.is_floating_point() and a.shape == b.shape:
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    return torch.equal(a, b)

