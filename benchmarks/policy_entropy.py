"""How random a Tag tagger acts: the mean entropy and the mean largest probability of each action
head of a tagger snapshot while it plays the published runners from fresh start states (sampled
actions, as the cross-play scores them), on the cpu backend (no GPU needed)::

    python benchmarks/policy_entropy.py published-1e9 benchmarks/results/side_by_side/ours/300s_tagger.state_dict

Session 12 (40 envs, one episode each; heads: acceleration, turn; 11 actions each on the published
config, uniform: 2.40 nats): the published taggers 2.04 / 1.27 nats, this project's defaults after 5
minutes (``side_by_side/ours``) 1.73 / 1.01, and a tagger trained with entropy coefficient 0.001
instead of 0.01 (sweep round 5's E, ``sweep_round5/E/300s_tagger.state_dict``) 0.00 / 0.14: it had
collapsed to almost deterministic actions and tags 67.9% of the published runners, the defaults
72.1%.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import learning_side_by_side as side  # noqa: E402


def head_stats(ev: side.Evaluator, tagger: str | Path) -> list[dict[str, float]]:
    """Per action head: mean entropy (nats) and mean largest probability over every tagger forward
    of one episode per env against the published runners."""
    model = ev.trainer.policies["tagger"].model
    seen: list[list[tuple[float, float]]] = []
    forward = model.forward

    def recording(*args, **kwargs):
        out = forward(*args, **kwargs)
        probs = [p.float() for p in out[0]]
        seen.append([(float(-(p * p.clamp_min(1e-12).log()).sum(-1).mean()), float(p.max(-1).values.mean()))
                     for p in probs])
        return out

    ev.load("tagger", tagger)
    ev.load("runner", "published-1e9")
    model.forward = recording
    try:
        ev.trainer.evaluate(deterministic=False, num_episodes=1, random_baseline=False, fresh_starts=ev.fresh)
    finally:
        del model.forward  # the instance attribute goes; the class's forward is back
    stats = np.asarray(seen)  # (forwards, heads, 2)
    return [{"entropy": float(h[:, 0].mean()), "max_prob": float(h[:, 1].mean())} for h in stats.transpose(1, 0, 2)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("taggers", nargs="+", help="tagger snapshots, or published-1e9 / random")
    parser.add_argument("--envs", type=int, default=40)
    args = parser.parse_args(argv)
    side.BACKEND = "cpu"
    torch.set_num_threads(min(4, torch.get_num_threads()))
    ev = side.Evaluator(num_envs=args.envs, fresh=True)
    for tagger in args.taggers:
        heads = head_stats(ev, tagger)
        print(tagger, " | ".join(f"head {i}: entropy {h['entropy']:.3f} nats, max prob {h['max_prob']:.3f}"
                                  for i, h in enumerate(heads)), flush=True)


if __name__ == "__main__":
    main()
