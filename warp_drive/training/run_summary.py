"""The end-of-run summary of the training command line (``example_training_script``).

:func:`print_summary` prints the run's totals, each policy's episode return early and late in the
run (read back from the metric files) and the learning summary: the final policies' greedy return
against the uniform-random policy's over fresh start states, each with its 95% Student t interval
and episode count (:func:`warp_drive.training.evaluation.compare_with_random` gives the numbers).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warp_drive.errors import ConfigError, UsageError
from warp_drive.training.evaluation import DEFAULT_EVAL_EPISODES, compare_with_random, comparison_table
from warp_drive.training.metrics import read_metrics


def print_summary(trainer: Any, first_iteration: int, wall: float, eval_episodes: int = DEFAULT_EVAL_EPISODES) -> None:
    """The run's totals, per policy its first and last logged episode return (the learning signal)
    and, unless ``eval_episodes`` is 0, the final policies' greedy return against uniform random."""
    world = trainer.num_devices
    steps = (trainer.iteration - first_iteration) * trainer.config.trainer.train_batch_size * world
    print(f"done: iterations {first_iteration + 1}-{trainer.iteration} of {trainer.num_iters}, {steps:,} env steps on "
          f"{world} process(es) in {wall:.1f} s ({steps / wall if wall else float('nan'):,.0f} env steps/s)")
    _print_results(trainer, eval_episodes)


def print_finished(trainer: Any, eval_episodes: int = DEFAULT_EVAL_EPISODES) -> None:
    """What a resumed run that has no iteration left prints instead of :func:`print_summary`'s totals:
    that there is nothing left to train, then the learning line and the evaluation."""
    print(f"nothing left to train: the run finished all {trainer.num_iters:,} iterations (raise trainer.num_episodes "
          "to train further, or start a new run)", flush=True)
    _print_results(trainer, eval_episodes)


def _print_results(trainer: Any, eval_episodes: int) -> None:
    if signal_line := learning_signal(trainer.save_dir, list(trainer.policies)):
        print(f"learning: {signal_line}")
    if eval_episodes:
        print_random_comparison(trainer, eval_episodes)
    print(f"results: {trainer.save_dir}", flush=True)


def print_random_comparison(trainer: Any, episodes: int) -> None:
    """Plays the final policies (greedy with one policy, sampled in a game) and the uniform-random policy over at least ``episodes``
    fresh-start episodes each and prints the table of :func:`~warp_drive.training.evaluation.comparison_table`."""
    start = time.perf_counter()
    try:
        comparisons = compare_with_random(trainer, episodes)
    except UsageError as err:
        print(f"evaluation against random: skipped ({err})", flush=True)
        return
    starts = "fresh start states" if all(c.fresh_starts for c in comparisons.values()) else "no fresh start states"
    mode = "greedy" if all(c.greedy for c in comparisons.values()) else "sampled actions, as trained"
    print(f"evaluation: final policy ({mode}) vs uniform random, {starts}, mean episode return "
          f"± 95% Student t interval over episodes ({time.perf_counter() - start:.1f} s)")
    print(comparison_table(comparisons), flush=True)


def learning_signal(run_dir: Path, policies: Sequence[str]) -> str:
    """``"<tag> episode return A (iterations i-j) -> B (iterations k-l) | ..."``: each policy's mean
    episode return over the first and over the last quarter of the run's logged metric rows."""
    try:
        rows = read_metrics(run_dir)
    except ConfigError:
        return ""
    parts = []
    for tag in policies:
        key = f"{tag}/episode_return_mean"
        found = [(int(r["iteration"]), float(r[key])) for r in rows if isinstance(r.get(key), (int, float))
                 and math.isfinite(r[key])]
        if len(found) < 2:
            continue
        k = max(1, len(found) // 4)
        head, tail = found[:k], found[-k:]
        mean = lambda part: sum(v for _, v in part) / len(part)  # noqa: E731
        span = lambda part: f"iteration {part[0][0]}" if len(part) == 1 else f"iterations {part[0][0]}-{part[-1][0]}"  # noqa: E731
        parts.append(f"{tag} episode return {mean(head):.3g} ({span(head)}) -> {mean(tail):.3g} ({span(tail)})")
    return " | ".join(parts)
