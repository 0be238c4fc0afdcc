"""Worker for the 2-process distributed test (started by torchrun; gloo on CPU, NCCL on GPUs).

Checks: identical weights on every rank after updates, different rollouts per rank, that a
checkpoint written by rank 0 resumes to the same weights as an uninterrupted run, and a kill and
resume: SIGTERM to one rank mid-update stops both ranks at the same iteration boundary with a
checkpoint; fresh trainers on both ranks resume from the run folder and end with the weights of an
uninterrupted run, identical across ranks.
Usage: torchrun --nproc_per_node 2 tests/helpers/ddp_worker.py OUT_DIR [cpu|pycuda]
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tests.helpers.toy_env import ToyLine  # noqa: E402
from warp_drive.env.env_wrapper import EnvWrapper  # noqa: E402
from warp_drive.training.distributed import barrier, init_from_env  # noqa: E402
from warp_drive.training.interrupt import TrainingInterrupted  # noqa: E402
from warp_drive.training.trainer import Trainer  # noqa: E402


def flat_params(t: Trainer) -> torch.Tensor:
    return torch.cat([q.detach().reshape(-1) for p in t.policies.values() for q in p.model.parameters()])


def make(out: Path, backend: str, ctx) -> Trainer:
    pol = {"to_train": True, "algorithm": "PPO", "lr": 0.01, "gamma": 0.9, "num_minibatches": 2, "model": {"fc_dims": [16]}}
    cfg = {"name": "toy", "trainer": {"num_envs": 8, "train_batch_size": 160, "num_episodes": 1000, "env_backend": backend, "seed": 5},
           "policy": {"a": dict(pol), "b": dict(pol, algorithm="A2C")},
           "saving": {"metrics_log_freq": 2, "model_params_save_freq": 100000, "basedir": str(out)}}
    src = out / f"src{ctx.rank}"
    src.mkdir(parents=True, exist_ok=True)
    env = ToyLine(num_agents=4, episode_length=20, goal=6.0, source_dir=str(src) if backend == "pycuda" else None)
    w = EnvWrapper(env, num_envs=8, env_backend=backend, device_id=ctx.local_rank if backend == "pycuda" else None)
    return Trainer(w, cfg, {"a": [3, 1], "b": [0, 2]}, verbose=False, rank=ctx.rank, num_devices=ctx.world_size,
                   results_dir=str(out / "run"))


def same_on_every_rank(x: torch.Tensor, what: str) -> None:
    gathered = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, x)
    assert all(torch.equal(gathered[0], g) for g in gathered), f"{what} differ across ranks"


def kill_and_resume(out: Path, backend: str, ctx) -> None:
    """SIGTERM to rank 1 in an optimizer step of iteration 2 (policy "a": PPO, 4 epochs x 2 minibatches
    = 8 steps an iteration): both ranks finish iteration 2, agree, checkpoint and raise (exit code
    143); fresh trainers resume from the run folder to iteration 5 = an uninterrupted run."""
    ref = make(out / "uninterrupted", backend, ctx)
    ref.train(5)
    expected = flat_params(ref)
    t = make(out / "killed", backend, ctx)
    if ctx.rank == 1:
        opt, calls = t.policies["a"].optimizer, {"n": 0}
        original = opt.step

        def step(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 8 + 3:
                os.kill(os.getpid(), signal.SIGTERM)
            return original(*args, **kwargs)

        opt.step = step
    try:
        t.train(5)
    except TrainingInterrupted as stop:
        assert stop.iteration == 2 and stop.exit_code == 143, (ctx.rank, stop.iteration, stop.exit_code)
        assert (stop.checkpoint is not None) == (ctx.rank == 0), (ctx.rank, stop.checkpoint)
    else:
        raise AssertionError(f"rank {ctx.rank} was not stopped")
    barrier()
    resumed = make(out / "killed", backend, ctx)
    resumed.load_checkpoint(out / "killed" / "run")
    assert resumed.iteration == 2, (ctx.rank, resumed.iteration)
    resumed.train(3)
    params = flat_params(resumed)
    same_on_every_rank(params, "weights after the resume")
    assert torch.allclose(params, expected, atol=1e-6), "killed and resumed run diverged from the uninterrupted one"


def main() -> None:
    out, backend = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "cpu")
    ctx = init_from_env(backend)
    assert ctx.world_size == 2, ctx
    t = make(out, backend, ctx)
    t.train(3)
    params = flat_params(t)
    gathered = [torch.zeros_like(params) for _ in range(ctx.world_size)]
    dist.all_gather(gathered, params)
    assert all(torch.equal(gathered[0], g) for g in gathered), "weights differ across ranks"
    rewards = t.policies["a"].buffers.actions.float().sum().reshape(1)
    rs = [torch.zeros_like(rewards) for _ in range(ctx.world_size)]
    dist.all_gather(rs, rewards)
    assert not torch.equal(rs[0], rs[1]), "ranks sampled identical rollouts (seeds must differ per rank)"
    path = out / "run" / "ckpt.pt"
    t.save_checkpoint(path)  # rank 0: shared state + its envs; rank 1: its envs in ckpt.rank1.pt
    barrier()
    t.train(2)
    resumed = make(out, backend, ctx)
    resumed.load_checkpoint(path)
    resumed.train(2)
    assert torch.allclose(flat_params(t), flat_params(resumed), atol=1e-6), "resumed run diverged"
    kill_and_resume(out, backend, ctx)
    (out / f"ok_{ctx.rank}").write_text("ok")
    barrier()  # nobody tears the group down while the other rank still talks
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
