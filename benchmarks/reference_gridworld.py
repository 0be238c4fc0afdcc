"""Time the reference's (rl-warp-drive 2.7.1) own A2C trainer on Tag gridworld, as a black box.

Its configuration as in the issue's table: 2,000 envs x 5 agents (4 taggers + 1 runner), batch
200,000, one shared FC 32x32 policy. Run only through bench_end_to_end.py (the reference package
is imported under the same name as ours, from its own site dir). Prints ``RESULT {json}``.
"""

import json
import sys
import time

import numpy as np
import torch

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 4

CONFIG = {
    "name": "tag_gridworld",
    "env": {"num_taggers": 4, "grid_length": 100, "episode_length": 100, "seed": 20, "wall_hit_penalty": 0.1,
            "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": 5.0, "step_cost_for_tagger": 0.01},
    "trainer": {"num_envs": 2000, "num_episodes": 0, "train_batch_size": 200000, "seed": 1234},
    "policy": {"shared": {"to_train": True, "algorithm": "A2C", "vf_loss_coeff": 1, "entropy_coeff": 0.05,
                          "clip_grad_norm": True, "max_grad_norm": 3, "normalize_advantage": False,
                          "normalize_return": False, "gamma": 0.98, "lr": 0.001,
                          "model": {"type": "fully_connected", "fc_dims": [32, 32], "model_ckpt_filepath": ""}}},
    "saving": {"metrics_log_freq": 100000, "model_params_save_freq": 100000000, "basedir": "/tmp/wdanchor_grid",
               "name": "tag_gridworld", "tag": "bench"},
}


def main() -> None:
    from example_envs.tag_gridworld.tag_gridworld import CUDATagGridWorld
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainers.trainer_a2c import TrainerA2C

    cfg = dict(CONFIG)
    T, batch = cfg["env"]["episode_length"], cfg["trainer"]["train_batch_size"]
    cfg["trainer"]["num_episodes"] = int(np.ceil(ITERS * batch / T)) + 1
    env = CUDATagGridWorld(**cfg["env"])
    wrapper = EnvWrapper(env, num_envs=cfg["trainer"]["num_envs"], env_backend="pycuda")
    dm, fm = wrapper.cuda_data_manager, wrapper.cuda_function_manager
    dm.add_shared_constants({"kIndexToActionArr": env.step_actions})
    fm.initialize_shared_constants(dm, constant_names=["kIndexToActionArr"])
    ids = sorted(list(env.taggers) + list(env.runners)) if hasattr(env, "taggers") else list(range(env.num_agents))
    trainer = TrainerA2C(env_wrapper=wrapper, config=cfg, policy_tag_to_agent_id_map={"shared": ids},
                         results_dir=f"r{time.time():.0f}", verbose=False)
    torch.cuda.synchronize()
    start = time.time()
    trainer.train()
    torch.cuda.synchronize()
    ps = trainer.perf_stats
    print("RESULT", json.dumps({"iters": ps.iters, "env_steps": ps.steps, "wall_s": time.time() - start,
                                "env_steps_per_s_total": ps.steps / ps.total_time,
                                "env_steps_per_s_envstep": ps.steps / ps.env_step_time}), flush=True)


if __name__ == "__main__":
    main()
