"""Proof that agents learn (GPU): CartPole to >= 475 with PPO and A2C, Tag taggers vs random.

Usage: ``python benchmarks/learning_proof.py [cartpole] [tag]``; results JSON under
benchmarks/results/ and $OUT. Each run checks its own work (steps counted, returns finite).
"""

from __future__ import annotations

import logging
import sys
import time

import numpy as np
import torch

from common import make_trainer, write_results

CARTPOLE = ["trainer.num_envs=256", "trainer.train_batch_size=32768", "trainer.num_episodes=100000", "trainer.seed=1",
            "policy.shared.lr=0.0005", "policy.shared.gamma=0.99", "policy.shared.gae_lambda=0.95",
            "policy.shared.entropy_coeff=0.01", "policy.shared.vf_loss_coeff=0.5", "policy.shared.max_grad_norm=0.5",
            "policy.shared.num_minibatches=8", "policy.shared.normalize_advantage=true", "policy.shared.model.fc_dims=[64,64]"]


def cartpole(algorithm: str, max_steps: int = 6_000_000, target: float = 475.0) -> dict:
    t = make_trainer("cartpole", CARTPOLE + [f"policy.shared.algorithm={algorithm}"], results_dir=f"/tmp/lp_cp_{algorithm}")
    curve, reached, start = [], None, time.perf_counter()
    while t.policies["shared"].timestep < max_steps:
        t.train(5)
        ret = float(t.evaluate(deterministic=True)["shared"]["episode_return"].mean())
        curve.append((t.policies["shared"].timestep, ret))
        logging.info("cartpole %s step %d greedy return %.1f", algorithm, curve[-1][0], ret)
        if ret >= target and reached is None:
            reached = curve[-1][0]
        if reached is not None and len(curve) >= 2 and curve[-2][1] >= target:
            break
    final = t.evaluate(deterministic=True, num_episodes=2)["shared"]["episode_return"]
    assert np.isfinite(final).all() and len(final) == 2 * 256
    return {"algorithm": algorithm, "env_steps_to_475": reached, "final_greedy_return_mean": float(final.mean()),
            "curve": curve, "wall_s": time.perf_counter() - start}


class UniformPolicy(torch.nn.Module):
    """Uniform probabilities over every categorical head (the random baseline)."""

    def __init__(self, heads: tuple[int, ...]) -> None:
        super().__init__()
        self.heads = heads

    def forward(self, obs):
        lead = obs.shape[:-1]
        probs = [torch.full((*lead, n), 1.0 / n, device=obs.device) for n in self.heads]
        return probs, torch.zeros(lead, device=obs.device)


TAG = ["trainer.seed=3", "trainer.num_envs=400", "trainer.train_batch_size=40000", "trainer.num_episodes=100000000",
       "env.num_taggers=2", "env.num_runners=20", "env.episode_length=200",
       "policy.tagger.algorithm=PPO", "policy.tagger.lr=0.0003", "policy.tagger.gae_lambda=0.95",
       "policy.tagger.entropy_coeff=0.01", "policy.tagger.num_minibatches=4", "policy.tagger.normalize_advantage=true",
       "policy.tagger.vf_loss_coeff=0.5", "policy.tagger.max_grad_norm=0.5", "policy.runner.to_train=false"]


def tag(minutes: float = 3.0) -> dict:
    """Taggers (PPO) learn to chase runners that move at random; compare with random taggers.

    2 taggers and 20 runners on the tutorial's 20 x 20 field, 200-step episodes, so that random
    taggers do not already tag every runner (the tutorial's 10 taggers tag 95 of 100 at random).
    """
    t = make_trainer("tag_continuous", TAG, results_dir="/tmp/lp_tag")
    runner = t.policies["runner"]
    runner.model = UniformPolicy(tuple(runner.action_spec.categorical))  # random runners throughout
    tagger = t.policies["tagger"]
    trained_model = tagger.model
    tagger.model = UniformPolicy(tuple(tagger.action_spec.categorical))
    random_ret = t.evaluate(deterministic=False)
    tagger.model = trained_model
    before = t.evaluate(deterministic=False)
    start = time.perf_counter()
    while time.perf_counter() - start < minutes * 60:
        t.train(5)
    after = t.evaluate(deterministic=False, num_episodes=2)
    tag_reward = 10.0  # tags per tagger per episode = tagger return / tag reward (no step penalty)
    out = {"config": TAG, "env_steps": tagger.timestep, "train_wall_s": time.perf_counter() - start,
           "env_steps_per_s": t.env_steps_per_second}
    for name, res in (("random", random_ret), ("untrained", before), ("trained", after)):
        out[f"tags_per_tagger_per_episode_{name}"] = float(res["tagger"]["episode_return"].mean() / tag_reward)
        out[f"episodes_{name}"] = int(len(res["tagger"]["episode_return"]))
    return out


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    which = argv or ["cartpole", "tag"]
    results = {}
    if "cartpole" in which:
        results["cartpole"] = {a: cartpole(a) for a in ("PPO", "A2C")}
        print({a: (r["env_steps_to_475"], r["final_greedy_return_mean"]) for a, r in results["cartpole"].items()})
    if "tag" in which:
        results["tag_continuous"] = tag()
        print(results["tag_continuous"])
    print("written", write_results("learning_proof", results))


if __name__ == "__main__":
    main(sys.argv[1:])
