"""Multi-GPU (or multi-process CPU) training with torch.distributed, started by torchrun.

One process per GPU, each with its own env replicas and data store on its GPU. Models are wrapped
in DistributedDataParallel, so gradients are all-reduced (NCCL on GPUs, gloo on CPUs) and every
rank applies the same update. Rank 0 writes metrics and checkpoints; logged metrics are averaged
over ranks. Kernels are compiled into the shared content-addressed cache, which is safe for
concurrent processes (atomic renames).

Single machine::

    torchrun --nproc_per_node 2 -m warp_drive.training.example_training_script --env tag_continuous
    python -m warp_drive.training.example_training_script --env tag_continuous --num_gpus 2

Several machines (same command on each node, node_rank 0..nnodes-1)::

    torchrun --nnodes 2 --nproc_per_node 8 --node_rank $NODE_RANK \\
        --rdzv_backend c10d --rdzv_endpoint $HEAD_NODE:29500 \\
        -m warp_drive.training.example_training_script --env tag_continuous
"""

from __future__ import annotations

import atexit
import gc
import logging
import multiprocessing
import os
import pickle
import subprocess
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
import torch.distributed as dist

from warp_drive.vocab.backends import uses_gpu

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DistContext:
    """Where this process sits: rank, world size and its device index."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "LOCAL_RANK" in os.environ


def init_from_env(backend_kind: str) -> DistContext:
    """Initialise the process group from torchrun's environment (NCCL for a GPU backend, gloo otherwise)."""
    if not launched_by_torchrun():
        return DistContext()
    local_rank = int(os.environ["LOCAL_RANK"])
    if uses_gpu(backend_kind):
        torch.cuda.set_device(local_rank)
        pg_backend = "nccl"
    else:
        pg_backend = "gloo"
    if not dist.is_initialized():
        kwargs = {"device_id": torch.device("cuda", local_rank)} if pg_backend == "nccl" else {}
        dist.init_process_group(backend=pg_backend, **kwargs)
    hold_backends()  # its gloo threads are stopped before the interpreter exits
    ctx = DistContext(dist.get_rank(), dist.get_world_size(), local_rank)
    logger.info("rank %d of %d on %s (%s)", ctx.rank, ctx.world_size, f"cuda:{local_rank}" if pg_backend == "nccl" else "cpu", pg_backend)
    return ctx


def _several_ranks() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def wrap_model(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """DDP-wrap ``model`` when a process group with several ranks is active."""
    if not _several_ranks():
        return model
    from torch.nn.parallel import DistributedDataParallel as DDP

    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None)


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel wrapper (no 'module.' prefixes)."""
    return getattr(model, "module", model)


def all_reduce_mean(values: torch.Tensor) -> torch.Tensor:
    """Average a tensor over ranks (identity without a process group)."""
    if _several_ranks():
        values = values.clone()
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        values /= dist.get_world_size()
    return values


def sync_buffers(module: torch.nn.Module | None) -> None:
    """Average a module's floating-point buffers over ranks (e.g. running return statistics)."""
    if module is None or not _several_ranks():
        return
    for buf in module.buffers():
        if buf.is_floating_point():
            buf.copy_(all_reduce_mean(buf))


def sync_each(modules: Sequence[torch.nn.Module | None]) -> None:
    """:func:`sync_buffers` on each module (the engine's default for every trained policy's return normalizers)."""
    for module in modules:
        sync_buffers(module)


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


# ----------------------------------------------------------------------------- stopping gloo's threads
# A gloo process group runs its collectives in C++ worker threads, which may drop the last reference to a
# tensor (and so take the GIL) after the caller has been woken. Once the interpreter is finalizing, CPython 3.11
# ends such a thread with pthread_exit, whose unwinding through the worker's noexcept destructor calls
# std::terminate (SIGABRT after a run that had finished). destroy_process_group() does not stop these threads
# (gloo's shutdown does nothing; DDP wrappers still hold the group); destroying the backend does. So this module
# keeps a reference to every gloo backend it joins and lets it go at exit, before finalization, once everything
# else has let go: the backend's destructor, run with the GIL released, lets its workers finish and joins them.
_HELD_BACKENDS: list[Any] = []  # gloo backends of the groups joined here, let go by release_backends()
_EXIT_HOOK: list[bool] = []  # release_backends is registered with atexit (once)


def _gloo_backends() -> list[Any]:
    """The gloo backends of the live process groups (the default group and any subgroups)."""
    world = getattr(getattr(dist, "distributed_c10d", None), "_world", None)
    groups = list(getattr(world, "pg_map", {}) or [dist.group.WORLD])
    found = []
    for pg in groups:
        try:
            backend = pg._get_backend(torch.device("cpu"))
        except Exception:  # noqa: BLE001 - no CPU backend (an NCCL-only group), or an older torch
            continue
        if type(backend).__name__ == "ProcessGroupGloo":
            found.append(backend)
    return found


def hold_backends() -> None:
    """Keep a reference to the gloo backend of every live process group until the interpreter exits
    (:func:`release_backends`, registered with ``atexit`` on the first call)."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    for backend in _gloo_backends():
        if all(backend is not held for held in _HELD_BACKENDS):
            _HELD_BACKENDS.append(backend)
    if not _EXIT_HOOK:
        atexit.register(release_backends)
        _EXIT_HOOK.append(True)


#: callbacks run when this process leaves its process group: caches of objects tied to the group
#: (e.g. the gloo group of :func:`warp_drive.training.interrupt.agree_across_ranks`) forget them
_ON_LEAVE: list[Callable[[], None]] = []


def on_leave(callback: Callable[[], None]) -> None:
    """Run ``callback`` whenever this process leaves its process group (registered once)."""
    if callback not in _ON_LEAVE:
        _ON_LEAVE.append(callback)


def _left_group() -> None:
    for callback in _ON_LEAVE:
        callback()


def release_backends() -> None:
    """Leave the process group (if still joined) and stop the gloo worker threads of the groups held by
    :func:`hold_backends` while the interpreter is whole (at exit; see the comment above).

    Unreferenced models, DDP wrappers and trainers are collected first, so the held reference is the last;
    a group still referenced elsewhere (a module-level DDP model) keeps its threads until finalization.
    """
    clear_torch_process_group()
    _left_group()  # (again: the callbacks only forget)
    gc.collect()
    while _HELD_BACKENDS:
        _HELD_BACKENDS.pop()  # the last reference: ~ProcessGroupGloo joins its threads (GIL released)


def launch_with_torchrun(num_procs: int, argv: Sequence[str], module: str) -> int:
    """Re-run ``python -m module *argv`` under torchrun with ``num_procs`` processes on this machine
    (the caller leaves its own process-count flag out of ``argv``)."""
    args = list(argv)
    if torch.cuda.is_available() and torch.cuda.device_count() < num_procs and "--backend" not in args:
        logger.warning("%d processes requested but %d GPUs are visible", num_procs, torch.cuda.device_count())
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={num_procs}",
           "-m", module, *args]
    return subprocess.call(cmd)


# ----------------------------------------------------------------------------- 2.7.1's process API
def setup_torch_process_group(
    device_id: int,
    num_devices: int,
    master_addr: str = "127.0.0.1",
    master_port: str | int = "8888",
    backend: str | None = None,
) -> None:
    """Joins this process to a ``num_devices``-process group as rank ``device_id`` (2.7.1's helper).

    ``backend`` None picks NCCL when CUDA is available (and selects GPU ``device_id``), else gloo;
    2.7.1 always used gloo, which all-reduces CUDA tensors through the host.
    """
    os.environ["MASTER_ADDR"] = str(master_addr)
    os.environ["MASTER_PORT"] = str(master_port)
    use_cuda = torch.cuda.is_available()
    backend = backend or ("nccl" if use_cuda else "gloo")
    if use_cuda:
        torch.cuda.set_device(device_id)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=device_id, world_size=num_devices)
    hold_backends()


def clear_torch_process_group() -> None:
    """Leaves the process group (if any). Its gloo threads stop at exit, once nothing else holds the
    group (:func:`release_backends`)."""
    if dist.is_available() and dist.is_initialized():
        hold_backends()
        dist.destroy_process_group()
        _left_group()


_SPAWN = multiprocessing.get_context("spawn")
#: Largest pickled exception a child hands back as it is; larger ones are summarised, so the pipe never fills up.
_MAX_EXCEPTION_BYTES = 32 * 1024


class ProcessWrapper(_SPAWN.Process):  # type: ignore[name-defined]
    """A spawned process that hands an exception raised by its target back to the parent (2.7.1's
    ``ProcessWrapper``)::

        p = ProcessWrapper(target=fn, kwargs={...}); p.start(); p.join()
        if p.exception:
            raise p.exception

    Always the ``spawn`` start method (a forked child cannot use the parent's CUDA context); unlike
    2.7.1, importing it does not change the process-wide start method. The child logs the
    traceback and exits with code 1; an exception that cannot be pickled, or whose pickle exceeds
    32 KB, arrives as a ``ChildProcessError`` holding the head of its traceback.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parent_conn, self._child_conn = _SPAWN.Pipe(duplex=False)
        self._exception: BaseException | None = None

    def run(self) -> None:
        try:
            super().run()
        except Exception as err:  # handed to the parent, which decides
            logger.error("process %s failed", self.name, exc_info=True)
            self._child_conn.send(_transportable(err))
            raise SystemExit(1) from None
        self._child_conn.send(None)

    @property
    def exception(self) -> BaseException | None:
        """The exception the target raised in the child (None while running or after success)."""
        if self._exception is None and self._parent_conn.poll():
            self._exception = self._parent_conn.recv()
        return self._exception


def _transportable(err: BaseException) -> BaseException:
    """``err`` when it pickles to at most 32 KB, else a ChildProcessError with its traceback's head."""
    try:
        if len(pickle.dumps(err)) <= _MAX_EXCEPTION_BYTES:
            return err
    except Exception:  # noqa: BLE001 - any pickling failure means: send a summary instead
        pass
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return ChildProcessError(f"{type(err).__name__} in the child process (traceback head):\n{text[:4000]}")


def _device_process(device_id: int, setup_trainer_and_train: Callable[..., Any], config: Any, num_devices: int,
                    results_dir: str | None, master_port: int) -> None:
    setup_torch_process_group(device_id, num_devices, master_port=master_port)
    try:
        setup_trainer_and_train(run_configuration=config, device_id=device_id, num_devices=num_devices,
                                results_directory=results_dir, verbose=device_id == 0)
    finally:
        clear_torch_process_group()


def perform_distributed_training(setup_trainer_and_train: Callable[..., Any], config: Any,
                                 results_dir: str | None = None) -> None:
    """Trains on ``config["trainer"]["num_gpus"]`` GPUs, one spawned process each (2.7.1's entry point).

    Each process ``i`` joins the process group as rank ``i`` on GPU ``i`` and calls
    ``setup_trainer_and_train(run_configuration=config, device_id=i, num_devices=n,
    results_directory=results_dir, verbose=i == 0)``, which builds its env wrapper and a Trainer
    with those arguments (models are then DDP-wrapped). ``setup_trainer_and_train`` must be
    importable by name (spawned processes pickle it). An exception in any process is raised here.
    For scripts of this project, ``torchrun`` (``--num_gpus`` of the example script) does the same.

    Raises:
        ConfigError: ``num_gpus`` < 2.
    """
    import socket

    import torch.multiprocessing as mp

    from warp_drive.errors import ConfigError

    trainer_cfg = config.trainer if hasattr(config, "trainer") else config.get("trainer", {})
    num_gpus = int(getattr(trainer_cfg, "num_gpus", None) or (trainer_cfg.get("num_gpus", 1) if isinstance(trainer_cfg, dict) else 1))
    if num_gpus < 2:
        raise ConfigError(f"perform_distributed_training needs trainer.num_gpus >= 2; got {num_gpus} (call "
                          "setup_trainer_and_train directly for one GPU)")
    with socket.socket() as s:  # a free port instead of 2.7.1's fixed 8888
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(_device_process, args=(setup_trainer_and_train, config, num_gpus, results_dir, port),
                       nprocs=num_gpus, join=True, start_method="spawn")
