"""Evaluation during training against a fixed opponent, and keeping the best-evaluated weights.

With ``trainer.eval_every`` = N > 0, :meth:`Trainer.train <warp_drive.training.run.trainer.Trainer.train>`
plays, after the first iteration, every N-th and the last, ``trainer.eval_episodes`` episodes (in
total over the env replicas, from fresh start states where the env has them) per policy, with
every *other* policy acting uniformly at random: a fixed opponent, so the number moves the right
way as the policy learns even in a game where the training return falls because the opponents
learn too. One policy plays greedily, several sample their actions as trained (the learning
summary's modes, :func:`~warp_drive.training.run.evaluation.compare_with_random`). The mean return is
logged as ``<tag>/eval_return`` (:data:`EVAL_METRIC`) in that iteration's metric row.

With ``trainer.keep_best``, each policy's weights at its best evaluation (ties: the later one)
are kept, and after the last iteration's evaluation they replace the final weights where they
scored higher: the final checkpoint and policy files then hold them (the optimizer state stays
the last iteration's). The best so far is part of the checkpoint (``"periodic_eval"``), so a
resumed run keeps it. Evaluations force-reset the envs (training continues from fresh episodes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from warp_drive.training.run.start_weights import policy_weights

logger = logging.getLogger(__name__)

#: The metric of a periodic evaluation, logged per policy as ``<tag>/eval_return``.
EVAL_METRIC = "eval_return"
#: The key of the periodic evaluation's state in a checkpoint.
STATE_KEY = "periodic_eval"


@dataclass
class BestWeights:
    """One policy's best evaluation so far: its iteration, mean return and weights (``{role: state_dict}``)."""

    iteration: int
    score: float
    weights: dict[str, dict[str, torch.Tensor]] = field(repr=False)


@torch.no_grad()
def returns_against_random(engine: Any, total_episodes: int, greedy: bool | None = None) -> dict[str, torch.Tensor]:
    """``{tag: (episodes,) returns}``: each policy over at least ``total_episodes`` fresh-start episodes,
    every other policy uniformly random (one play for all with one policy, one per policy with several).
    ``greedy`` None: greedy with one policy, sampled with several."""
    from warp_drive.training.run.evaluation import episodes_per_env, play_episodes

    tags = list(engine.policies)
    greedy = len(tags) == 1 if greedy is None else greedy
    per_env = episodes_per_env(total_episodes, engine.env_wrapper.n_envs)
    out = {}
    for tag in tags:
        played = play_episodes(engine, per_env, greedy, [t for t in tags if t != tag])
        out[tag] = torch.as_tensor(played[tag]["episode_return"], dtype=torch.float64)
    return out


class PeriodicEvaluation:
    """The ``trainer.eval_every`` / ``eval_episodes`` / ``keep_best`` schedule of one trainer (module doc)."""

    def __init__(self, every: int, episodes: int, keep_best: bool) -> None:
        self.every = int(every)
        self.episodes = int(episodes)
        self.keep_best = bool(keep_best) and self.every > 0
        #: ``{tag: BestWeights}``: each policy's best evaluation so far (``keep_best`` only)
        self.best: dict[str, BestWeights] = {}
        #: ``{tag: (iteration, score)}`` of the last evaluation
        self.last: dict[str, tuple[int, float]] = {}
        #: ``{tag: BestWeights}`` that replaced the final weights (set by :meth:`restore_best`)
        self.restored: dict[str, BestWeights] = {}

    @classmethod
    def from_config(cls, trainer_config: Any) -> PeriodicEvaluation:
        return cls(trainer_config.eval_every, trainer_config.eval_episodes, trainer_config.keep_best)

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def due(self, iteration: int, num_iters: int) -> bool:
        """After the first iteration, every ``every``-th and the run's last (a function of the iteration only,
        so a resumed run evaluates where an uninterrupted one does)."""
        return self.enabled and iteration >= 1 and (iteration == 1 or iteration % self.every == 0 or iteration == num_iters)

    def evaluate(self, engine: Any, iteration: int) -> dict[str, float]:
        """Plays the evaluation (see the module doc); returns ``{tag: mean return}`` (averaged over ranks) and
        keeps each policy's weights where they beat (or tie) its best so far."""
        from warp_drive.training.distributed import all_reduce_mean

        returns = returns_against_random(engine, self.episodes)
        tags = list(returns)
        means = all_reduce_mean(torch.stack([returns[t].mean() for t in tags]).float()).tolist()
        scores = dict(zip(tags, means))
        for tag, score in scores.items():
            self.last[tag] = (iteration, score)
            best = self.best.get(tag)
            if self.keep_best and (best is None or score >= best.score):
                self.best[tag] = BestWeights(iteration, score, policy_weights(engine.policies[tag]))
        return scores

    def restore_best(self, engine: Any) -> dict[str, BestWeights]:
        """Loads, for each policy whose best evaluation scored higher than its last one, the best weights;
        returns ``{tag: BestWeights}`` of those replaced (and keeps it in :attr:`restored`)."""
        self.restored = {}
        for tag, best in self.best.items():
            last = self.last.get(tag)
            if last is not None and best.iteration != last[0] and best.score > last[1]:
                policy = engine.policies[tag]
                for role, state in best.weights.items():
                    policy.load_weights(role, state)
                self.restored[tag] = best
                logger.info("keep best: %s's weights of iteration %d (eval return %.4g) replace those of iteration %d "
                            "(%.4g)", tag, best.iteration, best.score, last[0], last[1])
        return self.restored

    # ------------------------------------------------------------------ checkpoint state
    def state_dict(self) -> dict[str, Any]:
        """Plain data for a checkpoint: the last evaluation and each policy's best (with its weights)."""
        return {"last": {tag: [it, score] for tag, (it, score) in self.last.items()},
                "best": {tag: {"iteration": b.iteration, "score": b.score, "weights": b.weights}
                         for tag, b in self.best.items()}}

    def load_state_dict(self, state: Mapping[str, Any] | None, policies: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`'s data; entries of policies the trainer does not have are dropped.

        Raises:
            CheckpointError: the entry is not of :meth:`state_dict`'s shape.
        """
        from warp_drive.errors import CheckpointError

        self.last, self.best, self.restored = {}, {}, {}
        if not state:
            return
        try:
            for tag, (it, score) in dict(state.get("last", {})).items():
                if tag in policies:
                    self.last[tag] = (int(it), float(score))
            for tag, b in dict(state.get("best", {})).items():
                if tag in policies:
                    self.best[tag] = BestWeights(int(b["iteration"]), float(b["score"]),
                                                 {str(r): dict(s) for r, s in dict(b["weights"]).items()})
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            raise CheckpointError(f"the checkpoint's '{STATE_KEY}' entry is malformed ({err!r}); resume from "
                                  "another checkpoint or start a new run") from None
