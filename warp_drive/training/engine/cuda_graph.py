"""Capture a whole rollout (B env steps, all policies) in one CUDA graph and replay it.

The rollout touches only tensors at fixed addresses (placeholders, model parameters updated in
place by the optimizer, sampler counters, rollout buffers), performs no host synchronisation and
launches the pycuda kernels on the capturing stream, so one graph replay per iteration re-runs
every policy forward, sampler launch, env step and reset with no Python or launch overhead.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import torch

logger = logging.getLogger(__name__)


class GraphedRollout:
    """Runs ``body()`` eagerly once (its results are used: nothing is wasted), then as a CUDA graph.

    Args:
        body: the rollout; returns the final values ``{tag: V(s_B)}``.
        function_manager: the pycuda function manager (its kernels must join the capture).
    """

    def __init__(self, body: Callable[[], dict[str, torch.Tensor]], function_manager: Any) -> None:
        self._body = body
        self._fm = function_manager
        self._graph: torch.cuda.CUDAGraph | None = None
        self._outputs: dict[str, torch.Tensor] | None = None

    @property
    def captured(self) -> bool:
        return self._graph is not None

    def __call__(self) -> dict[str, torch.Tensor]:
        if self._graph is not None:
            self._graph.replay()
            return self._outputs  # type: ignore[return-value]
        outputs = {k: v.clone() for k, v in self._body().items()}  # eager run: real data
        self._capture()
        return outputs

    def _capture(self) -> None:
        import pycuda.driver as cuda

        start = time.perf_counter()
        torch.cuda.synchronize()
        stream = cuda.Stream()
        ext = torch.cuda.ExternalStream(stream.handle)
        graph = torch.cuda.CUDAGraph()
        self._fm.stream = stream
        try:
            with torch.cuda.graph(graph, stream=ext):
                self._outputs = self._body()
        finally:
            self._fm.stream = None
        torch.cuda.synchronize()
        self._graph = graph
        logger.info("rollout captured in a CUDA graph in %.2f s", time.perf_counter() - start)
