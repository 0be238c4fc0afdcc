"""CPU baseline: the NumPy env on the CPU with the policy on the GPU (the paper's comparison set-up).

Every step copies observations to the GPU, runs the policy there, samples with
``torch.distributions.Categorical``, copies actions back and steps the NumPy reference of all
replicas; the batch is trained on the GPU with the same A2C update as ours. Compared, in the same
run and config, with our GPU trainer. Usage: ``python benchmarks/bench_cpu_baseline.py``.
"""

from __future__ import annotations

import argparse
import time

import torch

from common import make_trainer, write_results

CONFIGS = {"tag_continuous_100envs": ["trainer.num_envs=100"], "tag_continuous_1000envs": ["trainer.num_envs=1000"]}


def cpu_baseline(overrides: list[str], steps: int) -> dict:
    """Env-steps/s of the CPU-env / GPU-policy loop over ``steps`` steps plus one update."""
    from warp_drive.training.algorithms.actor_critic.update import update_policy

    E = int(overrides[0].split("=")[1])
    t = make_trainer("tag_continuous", overrides + [f"trainer.train_batch_size={E * steps}", "trainer.seed=0"], backend="cpu")
    dm, w = t.env_wrapper.cuda_data_manager, t.env_wrapper
    gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    models = {tag: p.model.to(gpu) for tag, p in t.policies.items()}
    opt = {tag: torch.optim.Adam(m.parameters(), lr=1e-3) for tag, m in models.items()}
    w.reset_all_envs()
    obs_h, act_h, rew_h = (dm.data_on_device_via_torch(n) for n in ("observations", "sampled_actions", "rewards"))
    store = {tag: {"obs": [], "act": [], "rew": []} for tag in models}
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        obs = obs_h.to(gpu)
        actions = torch.empty(act_h.shape, dtype=torch.int32, device=gpu)
        for tag, p in t.policies.items():
            o = obs.index_select(1, p.agent_index.to(gpu))
            with torch.no_grad():
                heads, _ = models[tag](o)
            a = torch.stack([torch.distributions.Categorical(probs=h).sample() for h in heads], -1).int()
            actions.index_copy_(1, p.agent_index.to(gpu), a)
            store[tag]["obs"].append(o)
            store[tag]["act"].append(a)
        act_h.copy_(actions.cpu())
        w.step_all_envs()
        rew = rew_h.to(gpu)
        for tag, p in t.policies.items():
            store[tag]["rew"].append(rew.index_select(1, p.agent_index.to(gpu)))
        w.reset_only_done_envs()
    for tag, p in t.policies.items():
        s = store[tag]
        rew = torch.stack(s["rew"])
        batch = {"obs": torch.stack(s["obs"]), "actions": torch.stack(s["act"]), "advantages": rew - rew.mean(),
                 "returns": rew}
        update_policy(models[tag], opt[tag], p.algorithm, batch, timestep=0)
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    assert int(dm.pull_data_from_device("_timestep_").max()) > 0
    return {"env_steps": E * steps, "wall_s": wall, "env_steps_per_s": E * steps / wall}


def ours(overrides: list[str], iters: int) -> dict:
    t = make_trainer("tag_continuous", overrides + ["trainer.train_batch_size=" + str(int(overrides[0].split("=")[1]) * 100),
                                                    "trainer.num_episodes=100000000", "trainer.seed=0"])
    t.train(1)
    torch.cuda.synchronize()
    start = time.perf_counter()
    t.train(iters)
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    steps = iters * t.config.trainer.train_batch_size
    return {"env_steps": steps, "wall_s": wall, "env_steps_per_s": steps / wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    out = {}
    for name, overrides in CONFIGS.items():
        row = {"cpu_env_gpu_policy": cpu_baseline(overrides, args.steps), "ours_gpu": ours(overrides, 3)}
        row["ratio"] = row["ours_gpu"]["env_steps_per_s"] / row["cpu_env_gpu_policy"]["env_steps_per_s"]
        out[name] = row
        print(f"{name}: cpu baseline {row['cpu_env_gpu_policy']['env_steps_per_s']:,.0f}, ours {row['ours_gpu']['env_steps_per_s']:,.0f} "
              f"env-steps/s, ratio {row['ratio']:.0f}x", flush=True)
    print("written", write_results("cpu_baseline", out))


if __name__ == "__main__":
    main()
