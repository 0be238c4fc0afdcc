"""Time the reference's (rl-warp-drive 2.7.1) in-kernel sampler, as a black box.

Run only through bench_sampler.py, which puts the reference package (import name `warp_drive`,
like ours) first on PYTHONPATH in a separate process. Prints ``RESULT {json}``.
"""

import json
import sys

import numpy as np
import torch

E, N, A, REPS = (int(x) for x in sys.argv[1:5])


def main() -> None:
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import PyCUDASampler
    from warp_drive.utils.data_feed import DataFeed

    env = EnvWrapper(TagContinuous(num_taggers=10, num_runners=N - 10, seed=1), num_envs=E, env_backend="pycuda")
    dm, fm = env.cuda_data_manager, env.cuda_function_manager
    feed = DataFeed()
    feed.add_data(name="bench_actions", data=np.zeros((E, N, 1), dtype=np.int32))
    dm.push_data_to_device(feed, torch_accessible=True)
    sampler = PyCUDASampler(fm)
    sampler.init_random(1)
    sampler.register_actions(dm, "bench_actions", A)
    probs = torch.softmax(torch.randn(E, N, A, device="cuda"), -1).contiguous()
    for _ in range(20):
        sampler.sample(dm, probs, "bench_actions")
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPS):
        sampler.sample(dm, probs, "bench_actions")
    end.record()
    torch.cuda.synchronize()
    acts = dm.data_on_device_via_torch("bench_actions")
    assert int(acts.min()) >= 0 and int(acts.max()) < A
    print("RESULT", json.dumps({"us_per_call": start.elapsed_time(end) * 1000 / REPS}), flush=True)


if __name__ == "__main__":
    main()
