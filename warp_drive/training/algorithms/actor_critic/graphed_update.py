"""An actor-critic policy's minibatch gradient step, captured once in a CUDA graph and replayed.

The eager update (:func:`~warp_drive.training.algorithms.actor_critic.update.update_policy`) launches on the
order of a thousand small kernels per minibatch step (gather, forward, loss, backward, clipping,
Adam); for the small models of multi-agent RL the step's time on the GPU is mostly those launches.
:class:`GraphedUpdate` records one step as a CUDA graph and replays it for every minibatch, one
launch instead of a thousand. The arithmetic is the eager step's: the same loss
(:func:`~warp_drive.training.algorithms.actor_critic.update.minibatch_loss`), the same clipping, Adam in its
``capturable`` form, and the same shuffles (the permutation is drawn by the same generator outside
the graph and copied into a fixed index tensor).

A replay reads everything from the addresses it was captured with, so everything it reads lives
there for the run and changes in place: the rollout buffers (views of
:class:`~warp_drive.training.buffers.RolloutBuffers`), the minibatch index, the loss coefficients
and the learning rate (0-d device tensors written before each update, so schedules still apply),
the normalizers' statistics (updated in place), Adam's state (its step count on the device). The
metrics of every step are summed inside the graph; the update returns their means, like the eager
path. Loading an optimizer state replaces Adam's state tensors, so the owner drops the graph then
(:meth:`ActorCriticPolicy.load_state_dict`) and the next update captures a new one.

A recurrent policy's step is captured the same way: its rows are whole env x agent sequences (views of the
buffers, :func:`~warp_drive.training.utils.minibatch.sequence_layout`, start states included), the index picks
sequences, and the loss runs the model over the rollout's B steps, a fixed loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from warp_drive.training.algorithms.actor_critic.a2c import A2C, Metrics
from warp_drive.training.algorithms.compiled import LossFunction
from warp_drive.training.algorithms.actor_critic.update import grad_norm_and_clip, update_obs_statistics
from warp_drive.training.buffers import RolloutBatch
from warp_drive.training.utils.minibatch import (check_minibatches, flatten_leading, map_tensors, minibatch_indices,
                                                 sequence_layout)

Tensor = torch.Tensor

#: eager steps run (and undone) before the capture, so that lazy initializations (cuBLAS
#: workspaces, Adam's state) happen outside the graph
WARMUP_STEPS = 2


def match_device_form(optimizer: torch.optim.Optimizer) -> None:
    """Puts an Adam-family optimizer, in place, in its CUDA-graph-safe form where its parameters are
    on CUDA (``capturable``, the learning rate a 0-d device tensor that
    :func:`~warp_drive.training.utils.param_scheduler.set_optimizer_lr` writes in place, step
    counts on the device) and in its eager form elsewhere (float rates, CPU step counts), whatever
    form a loaded state came in. On CUDA every update then runs the arithmetic a captured step runs:
    a run's weights do not depend on ``trainer.use_cuda_graph`` or on the driver (Trainer, Lightning)."""
    for group in optimizer.param_groups:
        device = group["params"][0].device
        on_cuda = device.type == "cuda"
        group["capturable"] = on_cuda
        if on_cuda and not isinstance(group["lr"], Tensor):
            group["lr"] = torch.tensor(float(group["lr"]), dtype=torch.float32, device=device)
        elif not on_cuda and isinstance(group["lr"], Tensor):
            group["lr"] = float(group["lr"])
        for p in group["params"]:
            state = optimizer.state.get(p)
            step = state.get("step") if state else None
            target = p.device if on_cuda else torch.device("cpu")
            if isinstance(step, Tensor) and step.device != target:
                state["step"] = step.to(device=target, dtype=torch.float32)


def portable_optimizer_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """An optimizer ``state_dict`` as the eager optimizer writes it: float learning rates,
    ``capturable`` off, step counts as CPU tensors; the input is not modified. A checkpoint
    written from a graphed run then loads anywhere, CPU included."""
    groups = [{**g, "capturable": False, "lr": float(g["lr"])} if g.get("capturable") else dict(g)
              for g in state["param_groups"]]
    per_param = {}
    for key, entry in state["state"].items():
        step = entry.get("step")
        if isinstance(step, Tensor) and step.device.type != "cpu":
            entry = {**entry, "step": step.detach().to("cpu", torch.float32)}
        per_param[key] = entry
    return {**state, "param_groups": groups, "state": per_param}


class GraphedUpdate:
    """One policy's ``num_minibatches``-way minibatch step over a fixed batch, as a CUDA graph.

    Args:
        model: the policy's model (not wrapped for distributed training).
        optimizer: its Adam (in its :func:`match_device_form`, capturable, form).
        algorithm: :class:`~warp_drive.training.algorithms.actor_critic.a2c.A2C` or PPO.
        batch: the policy's rollout batch (views of buffers that live for the run).
        num_minibatches: gradient steps per pass over the batch.
        max_grad_norm: clip threshold, or None.
        autocast_dtype: the forward's autocast dtype, or None.
        loss_fn: the policy's (possibly compiled) forward + loss; None: an uncompiled one in ``autocast_dtype``.

    Construction runs :data:`WARMUP_STEPS` eager steps, restores the parameters and optimizer
    state they changed, and captures the step.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, algorithm: A2C, batch: RolloutBatch, *,
                 num_minibatches: int, max_grad_norm: float | None, autocast_dtype: torch.dtype | None,
                 loss_fn: LossFunction | None = None) -> None:
        self.model, self.optimizer, self.algorithm = model, optimizer, algorithm
        self.max_grad_norm = max_grad_norm
        self.loss_fn = loss_fn or LossFunction(model, algorithm, autocast_dtype, compile=False)
        self.num_minibatches = num_minibatches
        batch = RolloutBatch.of(batch)
        # the rows a minibatch draws: (time, env) samples, or a recurrent policy's env x agent sequences (views)
        self.obs = batch.obs
        self.flat = flatten_leading(dict(batch)) if batch.start_state is None else sequence_layout(dict(batch))
        leaves: list[Tensor] = []
        map_tensors(leaves.append, self.flat)
        self.num_samples, self.device = leaves[0].shape[0], leaves[0].device
        check_minibatches(self.num_samples, num_minibatches)
        self.index = torch.arange(self.num_samples // num_minibatches, device=self.device)
        self.coefficients = torch.zeros(2, dtype=torch.float32, device=self.device)  # vf_loss_coeff, entropy_coeff
        self.params = [p for p in model.parameters() if p.requires_grad]
        match_device_form(optimizer)
        self.graph, self.keys, self.totals = self._capture()

    def _step(self) -> Metrics:
        """One eager minibatch step on the rows ``self.index`` (all rows with one minibatch)."""
        index = None if self.num_minibatches == 1 else self.index  # the gather runs inside the loss function
        loss, metrics, _ = self.loss_fn(self.flat, (self.coefficients[0], self.coefficients[1]), index=index)
        loss.backward()
        metrics["grad_norm"] = grad_norm_and_clip(self.params, self.max_grad_norm).detach()
        self.optimizer.step()
        return metrics

    def _capture(self) -> tuple[torch.cuda.CUDAGraph, list[str], Tensor]:
        """Warm-up (undone), then the captured step: ``(graph, metric keys, the metrics' sums)``."""
        saved_params = [p.detach().clone() for p in self.params]
        saved_state = {p: {k: v.clone() if isinstance(v, Tensor) else v for k, v in self.optimizer.state[p].items()}
                       for p in self.params if self.optimizer.state.get(p)}
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self.optimizer.zero_grad(set_to_none=True)
                metrics = self._step()
        torch.cuda.current_stream(self.device).wait_stream(side)
        with torch.no_grad():  # undo the warm-up: parameters and optimizer state as they were
            for p, saved in zip(self.params, saved_params):
                p.copy_(saved)
            for p in self.params:
                state, before = self.optimizer.state[p], saved_state.get(p, {})
                for key, value in state.items():
                    if isinstance(value, Tensor) and key in before:
                        value.copy_(before[key])
                    elif isinstance(value, Tensor):
                        value.zero_()  # a fresh Adam state is zeros
        keys = list(metrics)
        totals = torch.zeros(len(keys), dtype=torch.float32, device=self.device)
        self.optimizer.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            metrics = self._step()
            totals.add_(torch.stack([metrics[k].float() for k in keys]))
        torch.cuda.empty_cache()  # the warm-up's blocks, cached for the side stream, go back to the device
        return graph, keys, totals

    def run(self, *, timestep: int, num_epochs: int, generator: torch.Generator | None) -> Metrics:
        """``num_epochs`` passes of replayed minibatch steps; the metrics' means (0-d tensors)."""
        c_vf, c_ent = self.algorithm.coefficients(timestep)
        self.coefficients[0].fill_(c_vf)
        self.coefficients[1].fill_(c_ent)
        self.totals.zero_()
        for _ in range(num_epochs):
            if self.num_minibatches == 1:
                self.graph.replay()
                continue
            for chunk in minibatch_indices(self.num_samples, self.num_minibatches, device=self.device,
                                           generator=generator):
                self.index.copy_(chunk)
                self.graph.replay()
        update_obs_statistics(self.model, self.obs)
        means = self.totals / (num_epochs * self.num_minibatches)
        return {key: means[i] for i, key in enumerate(self.keys)}
