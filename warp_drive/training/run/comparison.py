"""The learning summary's comparison of a trained policy with the uniform-random policy, and its verdict.

:class:`Comparison` holds one policy's intervals (:func:`warp_drive.training.run.evaluation.compare_with_random`
fills it); "better than random" is decided on the paired per-episode return difference trained − random
over the same start states (and the same opponents' random draws): its 95% Student t interval must lie
above 0. :func:`comparison_table` is the table and verdict line the command line prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from warp_drive.training.run.statistics import Interval

__all__ = ["Comparison", "comparison_table"]


@dataclass(frozen=True)
class Comparison:
    """One policy's return against the uniform-random policy's, over the same fresh-start episodes.

    ``trained``: the policy playing its model; with several policies against uniformly random other
    policies, as in ``random`` (every policy uniformly random), so both face the same opponents.
    ``difference``: the paired mean per-episode difference trained − random (the same start states
    and, with several policies, the same opponents' random draws; :func:`evaluate`). With several
    policies also, against the other policies playing their models: ``game`` (this policy playing
    its model too), ``random_in_game`` (this policy uniformly random) and ``difference_in_game``.
    ``fresh_starts``: the episodes started from fresh start states. ``start``: the weights the run
    started from, playing as ``trained`` does over the same episodes, and ``learned`` the paired
    difference trained − start (None where not played: no start weights, or nothing learned).

    ``better`` (the verdict): against the uniformly random other policies, the same fixed opponents
    in every run, the 95% interval of the paired difference lies above 0
    (``better_vs_random_others``); without a paired difference, the trained policy's 95% interval
    lies entirely above the random policy's (two independent intervals: valid, less powerful).
    ``better_vs_trained_others``, against the final trained other policies (opponents that differ
    from run to run), is shown for information.
    """

    tag: str
    trained: Interval
    random: Interval
    game: Interval | None = None
    fresh_starts: bool = True
    random_in_game: Interval | None = None
    greedy: bool = True
    difference: Interval | None = None
    difference_in_game: Interval | None = None
    start: Interval | None = None
    learned: Interval | None = None

    @property
    def better_vs_random_others(self) -> bool:
        return _better(self.trained, self.random, self.difference)

    @property
    def better_vs_trained_others(self) -> bool:
        return self.game is not None and self.random_in_game is not None and \
            _better(self.game, self.random_in_game, self.difference_in_game)

    @property
    def better(self) -> bool:
        return self.better_vs_random_others


def _better(trained: Interval, random: Interval, difference: Interval | None) -> bool:
    """The paired difference's 95% interval above 0; unpaired: ``trained``'s interval above ``random``'s."""
    if difference is None:
        return trained.above(random)
    return difference.n >= 2 and difference.low > 0


def comparison_table(comparisons: dict[str, Comparison]) -> str:
    """The learning summary as a small text table and one verdict line (what the CLI prints)."""
    several = len(comparisons) > 1
    mode = "greedy" if all(c.greedy for c in comparisons.values()) else "sampled"
    rows = [("policy", "opponents", f"trained ({mode})", "uniform random", "difference (paired)", "episodes",
             "better than random")]
    for c in comparisons.values():
        rows.append((c.tag, "random", _cell(c.trained), _cell(c.random), _cell(c.difference),
                     f"{c.trained.n} / {c.random.n}", "yes" if c.better else "no"))
        if several and c.game is not None and c.random_in_game is not None:
            rows.append(("", "trained*", _cell(c.game), _cell(c.random_in_game), _cell(c.difference_in_game),
                         f"{c.game.n} / {c.random_in_game.n}", "yes" if c.better_vs_trained_others else "no"))
    if not several:  # one policy: no opponents column
        rows = [row[:1] + row[2:] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if several:
        lines.append("(* against the final trained other policies, for information; the verdict plays each policy "
                     "against uniformly random other policies, the same fixed opponents for trained and random)")
    lines.append(_verdict(list(comparisons.values())))
    for c in comparisons.values():
        if c.trained.n >= 2 and not c.trained.spread:
            why = "from fresh start states" if c.fresh_starts else \
                "without fresh start states: the env may start every episode from the same state"
            lines.append(f"note: every {mode} episode of {c.tag} returned {c.trained.mean:.4g} ({why}), "
                         "so its interval has no width")
    return "\n".join(lines)


def _cell(iv: Interval | None) -> str:
    if iv is None:
        return "-"
    if iv.n < 2:
        return f"{iv.mean:.4g}"
    return f"{iv.mean:.4g} ± {iv.half_width:.3g}  [{iv.low:.4g}, {iv.high:.4g}]"


def _verdict(comparisons: list[Comparison]) -> str:
    paired = all(c.difference is not None for c in comparisons)
    n = min((c.difference.n if c.difference is not None else c.trained.n) for c in comparisons)
    if paired:
        how = (f"paired over the same {n} start states{' and opponent draws' if len(comparisons) > 1 else ''}: "
               f"the 95% interval of the mean per-episode return difference trained − random lies above 0")
    else:
        how = "unpaired: the trained policy's 95% interval lies above the random policy's"
    if all(c.better for c in comparisons):
        if len(comparisons) > 1:
            return f"verdict: every policy is better than uniform random against uniform-random opponents ({how})"
        return f"verdict: the trained policy is better than uniform random ({how})"
    reasons = [f"{c.tag} ({_why_not(c)})" for c in comparisons if not c.better]
    what = ("trained − random, paired over the same start states, 95% interval of the mean" if paired
            else "95% intervals, unpaired")
    return f"verdict: NOT measurably better than uniform random: {', '.join(reasons)} [{what}]"


def _why_not(c: Comparison) -> str:
    if c.difference is None:
        return "interval below random" if c.random.above(c.trained) else "intervals overlap"
    if c.difference.n < 2:
        return "a single episode, no interval"
    return "difference below 0" if c.difference.high < 0 else "difference interval includes 0"
