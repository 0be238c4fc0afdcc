"""Lightning overhead: env steps/s of ``Trainer.train()`` vs the Lightning path, same config, same GPU.

Usage: ``python benchmarks/bench_lightning.py [--iters 20] [--repeats 3] [--backend pycuda]``.

Config: the Tag continuous tutorial config (10 taggers, 100 runners, 100 envs, batch 25,000, A2C,
FC 256x256), built twice with ``common.make_trainer`` and the same seed: one engine for the plain
``Trainer.train()``, one owned by a ``WarpDriveModule``. Each repeat measures, after a warm-up
(graph capture, allocator, cuBLAS), ``--iters`` iterations of

* ``plain``: ``Trainer.train(iters)`` (it also logs metrics and saves a checkpoint at its last
  iteration, as it always does);
* ``plain_loop``: the loop body of ``Trainer.train`` alone (``generate_rollout`` + ``update``), the
  strictest baseline;
* ``lightning_bare``: ``lightning.Trainer.fit`` with no logger, checkpoint or progress bar (the
  cost of the Lightning loop, data fetching, manual optimization and ``self.log``);
* ``lightning_logging``: the same plus a CSV logger (step metrics every epoch), the
  ``PerfStatsCallback`` (one device sync per epoch) and the ``EpisodeReturnLogger`` callback.

The Lightning runs time from the start of the first epoch after the warm-up epoch to the end of
training, between device synchronizations. Overhead % = 100 * (1 - lightning / plain) on the
median env steps/s over repeats (variants interleaved, so clock drift hits all of them); the
headline ``overhead_percent`` is against ``plain`` (``Trainer.train``), ``overhead_vs_loop_percent``
against ``plain_loop``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from common import make_trainer, write_results

OVERRIDES = ["trainer.num_envs=100", "trainer.train_batch_size=25000", "trainer.num_episodes=100000000",
             "trainer.seed=0"]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_plain(engine, iters: int) -> dict:
    _sync(engine.device)
    start = time.perf_counter()
    it0 = engine.iteration
    engine.train(iters)
    _sync(engine.device)
    wall = time.perf_counter() - start
    steps = (engine.iteration - it0) * engine.config.trainer.train_batch_size
    return {"iterations": engine.iteration - it0, "wall_s": wall, "env_steps_per_s": steps / wall}


def measure_plain_loop(engine, iters: int) -> dict:
    engine.env_wrapper.reset_all_envs()
    for p in engine.policies.values():
        p.stats.reset_running()
    _sync(engine.device)
    start = time.perf_counter()
    for _ in range(iters):
        engine.update_policies(engine.collect())
        engine.end_iteration()
    _sync(engine.device)
    wall = time.perf_counter() - start
    return {"iterations": iters, "wall_s": wall, "env_steps_per_s": iters * engine.config.trainer.train_batch_size / wall}


def measure_lightning(module, iters: int, logging: bool, root: str) -> dict:
    import lightning as L

    from warp_drive.training.lightning import (
        EpisodeReturnLogger,
        PerfStatsCallback,
        WarpDriveDataModule,
        build_lightning_trainer,
    )

    engine = module.engine
    ipe = module.iterations_per_epoch
    if iters % ipe:
        raise SystemExit(f"--iters must be a multiple of the iterations per epoch ({ipe})")

    class Timer(L.Callback):
        """Starts after the warm-up epoch, stops at the end of training (device-synchronized)."""

        def __init__(self) -> None:
            self.start = self.stop = 0.0
            self.it0 = self.it1 = 0

        def on_train_epoch_start(self, trainer, pl_module) -> None:
            if trainer.current_epoch == 1:
                _sync(engine.device)
                self.start, self.it0 = time.perf_counter(), engine.iteration

        def on_train_end(self, trainer, pl_module) -> None:
            _sync(engine.device)
            self.stop, self.it1 = time.perf_counter(), engine.iteration

    timer = Timer()
    callbacks = [timer] + ([EpisodeReturnLogger()] if logging else [])
    trainer = build_lightning_trainer(
        module, max_epochs=1 + iters // ipe, default_root_dir=root, loggers=["csv"] if logging else False,
        checkpoint=False, perf_stats=logging, callbacks=callbacks, enable_progress_bar=False,
        enable_model_summary=False)
    trainer.fit(module, datamodule=WarpDriveDataModule(module))
    if logging:
        perf = next(c for c in trainer.callbacks if isinstance(c, PerfStatsCallback))
        assert len(perf.history) == 1 + iters // ipe
    wall = timer.stop - timer.start
    done = timer.it1 - timer.it0
    assert done == iters, f"measured {done} iterations, expected {iters}"
    return {"iterations": done, "wall_s": wall, "env_steps_per_s": done * engine.config.trainer.train_batch_size / wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20, help="measured iterations per run (multiple of 2)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="pycuda", choices=("pycuda", "cpu"))
    ap.add_argument("--override", action="append", default=[],
                    help="extra dotted override (dry runs only: the reported config is the tutorial one)")
    args = ap.parse_args()
    overrides = OVERRIDES + args.override

    from warp_drive.training.lightning import (
        WarpDriveModule,
        silence_irrelevant_lightning_warnings,
    )

    silence_irrelevant_lightning_warnings()
    root = tempfile.mkdtemp(prefix="wd_bench_lightning_")
    plain = make_trainer("tag_continuous", overrides, backend=args.backend, results_dir=f"{root}/plain")
    module = WarpDriveModule(make_trainer("tag_continuous", overrides, backend=args.backend,
                                          results_dir=f"{root}/lightning"))
    ipe = module.iterations_per_epoch
    plain.train(ipe)  # warm-up, like the Lightning runs' first epoch
    runs: dict[str, list[dict]] = {"plain": [], "plain_loop": [], "lightning_bare": [], "lightning_logging": []}
    for r in range(args.repeats):
        runs["plain"].append(measure_plain(plain, args.iters))
        runs["plain_loop"].append(measure_plain_loop(plain, args.iters))
        runs["lightning_bare"].append(measure_lightning(module, args.iters, False, f"{root}/bare{r}"))
        runs["lightning_logging"].append(measure_lightning(module, args.iters, True, f"{root}/logging{r}"))
        print(f"repeat {r}: " + ", ".join(f"{k} {v[-1]['env_steps_per_s']:,.0f}" for k, v in runs.items()), flush=True)
    for engine in (plain, module.engine):
        for p in engine.policies.values():
            assert all(torch.isfinite(q).all() for q in p.model.parameters()), "non-finite weights"
    median = {k: statistics.median(r["env_steps_per_s"] for r in v) for k, v in runs.items()}
    lightning = ("lightning_bare", "lightning_logging")
    overhead = {k: 100.0 * (1.0 - median[k] / median["plain"]) for k in lightning}
    overhead_loop = {k: 100.0 * (1.0 - median[k] / median["plain_loop"]) for k in lightning}
    payload = {
        "config": {"env": "tag_continuous", "overrides": overrides, "backend": args.backend, "iters": args.iters,
                   "repeats": args.repeats, "iterations_per_epoch": ipe,
                   "use_cuda_graph": bool(getattr(plain, "graphed_rollout", None) is not None)},
        "runs": runs,
        "median_env_steps_per_s": median,
        "overhead_percent": overhead,
        "overhead_vs_loop_percent": overhead_loop,
        "under_5_percent": all(v < 5.0 for v in overhead.values()),
    }
    for k, v in median.items():
        extra = f"   overhead {overhead[k]:+.2f}% (vs loop {overhead_loop[k]:+.2f}%)" if k in overhead else ""
        print(f"{k:18s} {v:12,.0f} env steps/s{extra}")
    print("written", write_results("lightning_overhead", payload))


if __name__ == "__main__":
    main()
