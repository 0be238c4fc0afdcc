"""Worker for the 2-process recurrent-policy test (started by torchrun; gloo on CPU).

A GRU policy with a critic network of its own (MAPPO, ``critic_input: all_obs``) trains on the cue-recall env
with its gradients all-reduced by DistributedDataParallel: after updates the weights are identical on every rank
while the carried states differ (each rank steps its own envs); a checkpoint (rank 0's shared state, each rank's
envs and carried states) resumes to the weights and carried states of the uninterrupted run.
Usage: torchrun --nproc_per_node 2 tests/helpers/ddp_gru_worker.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tests.helpers.cue_env import CueRecall  # noqa: E402
from warp_drive.env.env_wrapper import EnvWrapper  # noqa: E402
from warp_drive.training.distributed import barrier, init_from_env  # noqa: E402
from warp_drive.training.trainer import Trainer  # noqa: E402


def make(out: Path, ctx) -> Trainer:
    pol = {"to_train": True, "algorithm": "MAPPO", "lr": 0.01, "num_minibatches": 2, "num_epochs": 2,
           "model": {"type": "gru", "fc_dims": [8], "kwargs": {"hidden_size": 8}}}
    cfg = {"name": "cue", "trainer": {"num_envs": 4, "train_batch_size": 4 * 10, "num_episodes": 1000,
                                      "env_backend": "cpu", "seed": 5, "bootstrap_at_time_limit": False},
           "policy": {"a": pol}, "saving": {"metrics_log_freq": 2, "model_params_save_freq": 100000, "basedir": str(out)}}
    w = EnvWrapper(CueRecall(num_agents=2, episode_length=4, seed=3), num_envs=4, env_backend="cpu")
    return Trainer(w, cfg, {"a": [0, 1]}, verbose=False, rank=ctx.rank, num_devices=ctx.world_size,
                   results_dir=str(out / "run"))


def gathered(x: torch.Tensor) -> list[torch.Tensor]:
    out = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(out, x)
    return out


def flat_params(t: Trainer) -> torch.Tensor:
    return torch.cat([q.detach().reshape(-1) for q in t.policies["a"].model.parameters()])


def main() -> None:
    out = Path(sys.argv[1])
    ctx = init_from_env("cpu")
    assert ctx.world_size == 2, ctx
    t = make(out, ctx)
    assert type(t.policies["a"].train_model).__name__ == "DistributedDataParallel"
    t.train(3)
    params = gathered(flat_params(t))
    assert torch.equal(params[0], params[1]), "weights differ across ranks"
    states = gathered(t.policies["a"].carried.hidden.clone())
    assert not torch.equal(states[0], states[1]), "ranks carry identical states (their rollouts must differ)"
    path = out / "run" / "ckpt.pt"
    t.save_checkpoint(path)
    barrier()
    t.train(2)
    resumed = make(out, ctx)
    resumed.load_checkpoint(path)
    resumed.train(2)
    assert torch.allclose(flat_params(t), flat_params(resumed), atol=1e-6), "resumed run diverged"
    assert torch.allclose(t.policies["a"].carried.hidden, resumed.policies["a"].carried.hidden, atol=1e-6)
    (out / f"ok_{ctx.rank}").write_text("ok")
    barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
