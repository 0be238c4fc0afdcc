"""The end-of-run summary of the training command line (``example_training_script``).

:func:`print_summary` prints the run's totals; each policy's learning signal read back from the
metric files: with ``trainer.eval_every``, its return against a fixed opponent (the other policies
uniformly random, :mod:`warp_drive.training.run.periodic_eval`) at the first and the last evaluation, and
its training episode return early and late in the run; with ``trainer.keep_best``, which weights
the final policy holds; then the learning summary: the final policies against the uniform-random
policy over the same fresh start states, each with its 95% Student t interval and episode count,
and the paired per-episode difference trained − random with its interval, which decides the verdict
(:func:`warp_drive.training.run.evaluation.compare_with_random` gives the numbers); last, the "learned"
line (:func:`learned_lines`): each policy's return with the run's initial weights and with its final
ones over the same episodes, against the same fixed opponents, a number that rises as a policy learns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from warp_drive.errors import ConfigError, UsageError
from warp_drive.training.run.comparison import Comparison, comparison_table
from warp_drive.training.run.evaluation import DEFAULT_EVAL_EPISODES, compare_with_random
from warp_drive.training.run.metrics import read_metrics
from warp_drive.training.run.periodic_eval import EVAL_METRIC, PeriodicEvaluation


def print_summary(trainer: Any, first_iteration: int, wall: float, eval_episodes: int = DEFAULT_EVAL_EPISODES) -> None:
    """The run's totals, per policy its first and last logged episode return (the learning signal)
    and, unless ``eval_episodes`` is 0, the final policies' greedy return against uniform random."""
    world = trainer.num_devices
    steps = (trainer.engine.iteration - first_iteration) * trainer.engine.config.trainer.train_batch_size * world
    print(f"done: iterations {first_iteration + 1}-{trainer.engine.iteration} of {trainer.num_iters}, {steps:,} env steps on "
          f"{world} process(es) in {wall:.1f} s ({steps / wall if wall else float('nan'):,.0f} env steps/s)")
    _print_results(trainer, eval_episodes)


def print_finished(trainer: Any, eval_episodes: int = DEFAULT_EVAL_EPISODES) -> None:
    """What a resumed run that has no iteration left prints instead of :func:`print_summary`'s totals:
    that there is nothing left to train, then the learning line and the evaluation."""
    print(f"nothing left to train: the run finished all {trainer.num_iters:,} iterations (raise trainer.num_episodes "
          "to train further, or start a new run)", flush=True)
    _print_results(trainer, eval_episodes)


def _print_results(trainer: Any, eval_episodes: int) -> None:
    periodic = getattr(trainer, "periodic_eval", None) or PeriodicEvaluation(0, 1, False)
    for line in learning_lines(trainer.save_dir, list(trainer.engine.policies), periodic.episodes):
        print(line)
    if line := kept_weights_line(periodic):
        print(line)
    if eval_episodes:
        print_random_comparison(trainer, eval_episodes)
    print(f"results: {trainer.save_dir}", flush=True)


def print_random_comparison(trainer: Any, episodes: int) -> None:
    """Plays the final policies (greedy with one policy, sampled in a game) and the uniform-random policy over the
    same (at least ``episodes``) fresh-start episodes, paired, and prints the table of
    :func:`~warp_drive.training.run.comparison.comparison_table`."""
    start = time.perf_counter()
    try:
        comparisons = compare_with_random(trainer.engine, episodes, start_weights=getattr(trainer, "start_weights", None))
    except UsageError as err:
        print(f"evaluation against random: skipped ({err})", flush=True)
        return
    starts = "fresh start states" if all(c.fresh_starts for c in comparisons.values()) else "no fresh start states"
    mode = "greedy" if all(c.greedy for c in comparisons.values()) else "sampled actions, as trained"
    print(f"evaluation: final policy ({mode}) vs uniform random on the same episodes ({starts}; paired), mean episode "
          f"return ± 95% Student t interval over episodes, and of the per-episode difference trained − random "
          f"({time.perf_counter() - start:.1f} s)")
    print(comparison_table(comparisons), flush=True)
    for line in learned_lines(comparisons):
        print(line, flush=True)


def learned_lines(comparisons: Mapping[str, Comparison]) -> list[str]:
    """The summary's number that moves the right way for every policy, and one line saying what it means:
    each policy's mean return with the run's initial weights and with its final ones, over the same
    episodes against the same opponents as its verdict (uniformly random other policies: a fixed
    opponent), with the paired difference final − initial and its 95% interval. Empty where no policy
    has a start play (:attr:`Comparison.learned`)."""
    played = [c for c in comparisons.values() if c.start is not None and c.learned is not None]
    if not played:
        return []
    parts = [f"{c.tag} {c.start.mean:.4g} -> {c.trained.mean:.4g} ({c.learned.mean:+.4g} ± {c.learned.half_width:.3g})"
             for c in played]  # type: ignore[union-attr]
    n = min(c.learned.n for c in played)  # type: ignore[union-attr]
    if len(comparisons) > 1:
        return ["learned (each team against uniform-random opponents, initial -> final weights): " + " | ".join(parts),
                f"  (a team's mean return over the same {n} sampled episodes (start states and opponent draws) with the "
                "run's initial weights and with its final ones, the other teams uniformly random: a fixed opponent; "
                "then the paired difference ± its 95% interval. It rises as a team learns, even where its training "
                "return falls because the other team learns too)"]
    mode = "greedy" if played[0].greedy else "sampled"
    return [f"learned ({mode} return, initial -> final weights): " + " | ".join(parts),
            f"  (the policy's mean {mode} return over the same {n} episodes (start states) with the run's initial "
            "weights and with its final ones, then the paired difference ± its 95% interval: it rises as the "
            "policy learns)"]


def learning_lines(run_dir: Path, policies: Sequence[str], eval_episodes: int = 0) -> list[str]:
    """The summary's learning lines, each followed by one line saying what its number means:

    * with periodic evaluations (``<tag>/eval_return`` in the metric rows), each policy's return against
      uniformly random other policies at the first and the last evaluation (and, with one policy, the best);
    * each policy's training episode return over the first and the last quarter of the logged rows
      (against the other policies as they learn, with several).
    """
    try:
        rows = read_metrics(run_dir)
    except ConfigError:
        return []
    several = len(policies) > 1
    lines = []
    evals = {tag: _series(rows, f"{tag}/{EVAL_METRIC}") for tag in policies}
    if any(len(found) >= 1 for found in evals.values()):
        parts = []
        for tag, found in evals.items():
            if not found:
                continue
            part = f"{tag} {found[0][1]:.4g} (iteration {found[0][0]}) -> {found[-1][1]:.4g} (iteration {found[-1][0]})"
            if not several:
                best = max(found, key=lambda row: (row[1], row[0]))  # ties: the later one (as keep_best)
                part += f", best {best[1]:.4g} (iteration {best[0]})"
            parts.append(part)
        episodes = f"{eval_episodes} " if eval_episodes else ""
        if several:
            lines.append("learning (return against uniform-random opponents): " + " | ".join(parts))
            lines.append(f"  (each policy's mean return over {episodes}sampled episodes from fresh start states with the "
                         "other policies uniformly random: a fixed opponent, so it rises as the policy learns, within "
                         "the noise of that many episodes from different start states; the learned line after the "
                         "evaluation compares the initial and final weights over the same episodes)")
        else:
            lines.append("learning (greedy evaluation return): " + " | ".join(parts))
            lines.append(f"  (the policy's mean return over {episodes}greedy episodes from fresh start states, "
                         "played after the first iteration, periodically and after the last)")
    parts = []
    for tag in policies:
        found = _series(rows, f"{tag}/episode_return_mean")
        if len(found) < 2:
            continue
        k = max(1, len(found) // 4)
        head, tail = found[:k], found[-k:]
        parts.append(f"{tag} episode return {_mean(head):.3g} ({_span(head)}) -> {_mean(tail):.3g} ({_span(tail)})")
    if parts:
        lines.append(("training: " if lines else "learning: ") + " | ".join(parts))
        if several:
            lines.append("  (training episodes, against the other policies as they learn: in a game one side's gain is "
                         "the other's loss, so a policy's training return can fall while every policy improves)")
    return lines


def learning_signal(run_dir: Path, policies: Sequence[str]) -> str:
    """The training-return part of :func:`learning_lines` (without its explanation): ``"<tag> episode return
    A (iterations i-j) -> B (iterations k-l) | ..."`` over the first and the last quarter of the logged rows."""
    for line in learning_lines(run_dir, policies):
        for prefix in ("training: ", "learning: "):
            if line.startswith(prefix) and " episode return " in line:
                return line[len(prefix):]
    return ""


def kept_weights_line(periodic: PeriodicEvaluation) -> str:
    """With ``trainer.keep_best``: one line on which weights the final policy holds (and the checkpoint saved)."""
    if not periodic.keep_best or not periodic.best:
        return ""
    parts = []
    for tag, best in periodic.best.items():
        last_it, last_score = periodic.last.get(tag, (best.iteration, best.score))
        if tag in periodic.restored:
            parts.append(f"{tag}: the weights of iteration {best.iteration}, its best evaluation ({best.score:.4g}; "
                         f"iteration {last_it}'s: {last_score:.4g})")
        else:
            parts.append(f"{tag}: the last evaluated weights, iteration {last_it} ({last_score:.4g}, its best)")
    return ("final policy (keep_best: the best periodic evaluation's weights, saved in the final checkpoint): "
            + "; ".join(parts))


def _series(rows: Sequence[dict], key: str) -> list[tuple[int, float]]:
    return [(int(r["iteration"]), float(r[key])) for r in rows
            if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]


def _mean(part: Sequence[tuple[int, float]]) -> float:
    return sum(v for _, v in part) / len(part)


def _span(part: Sequence[tuple[int, float]]) -> str:
    return f"iteration {part[0][0]}" if len(part) == 1 else f"iterations {part[0][0]}-{part[-1][0]}"
