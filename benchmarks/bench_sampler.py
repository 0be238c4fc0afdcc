"""In-kernel action sampler vs torch.multinomial vs torch.distributions.Categorical (and the reference).

Same probabilities (500 envs x 110 agents x 20 actions by default), CUDA-event timing of many
calls after warm-up; each method's output is checked (in range, frequencies plausible).
Usage: ``python benchmarks/bench_sampler.py [--reps 1000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from common import make_sampler, write_results

ANCHOR_SITE = "/tmp/anchor_site"


def timed(fn, reps: int) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1000 / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=500)
    ap.add_argument("--agents", type=int, default=110)
    ap.add_argument("--actions", type=int, default=20)
    ap.add_argument("--reps", type=int, default=1000)
    args = ap.parse_args()
    E, N, A = args.envs, args.agents, args.actions
    dm, fm, s, probs = make_sampler(E, N, A)
    flat = probs.view(-1, A)
    res = {"shape": [E, N, A]}
    res["ours_us"] = timed(lambda: s.sample(dm, probs, "acts", check=False), args.reps)
    acts = dm.data_on_device_via_torch("acts")
    freq = torch.bincount(acts.flatten().long(), minlength=A).float() / acts.numel()
    assert abs(float(freq.sum()) - 1) < 1e-6 and float((freq - probs.mean((0, 1))).abs().max()) < 0.01
    res["torch_multinomial_us"] = timed(lambda: torch.multinomial(flat, 1), args.reps)
    res["torch_categorical_us"] = timed(lambda: torch.distributions.Categorical(probs=probs).sample(), args.reps)
    # our sampler inside a CUDA graph (as the trainer runs it)
    import pycuda.driver as cuda

    stream = cuda.Stream()
    g = torch.cuda.CUDAGraph()
    fm.stream = stream
    with torch.cuda.graph(g, stream=torch.cuda.ExternalStream(stream.handle)):
        for _ in range(10):
            s.sample(dm, probs, "acts", check=False)
    fm.stream = None
    res["ours_graphed_us"] = timed(g.replay, max(1, args.reps // 10)) / 10
    env = dict(os.environ, PYTHONPATH=f"{ANCHOR_SITE}:/tmp/site")
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("reference_sampler.py")), str(E), str(N), str(A), str(args.reps)],
                          capture_output=True, text=True, env=env, cwd="/tmp", timeout=300, check=False)
    ref = [json.loads(l[7:]) for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if ref:
        res["reference_us"] = ref[0]["us_per_call"]
        res["ratio_vs_reference"] = res["reference_us"] / res["ours_us"]
        res["ratio_graphed_vs_reference"] = res["reference_us"] / res["ours_graphed_us"]
    else:
        res["reference_error"] = (proc.stderr or proc.stdout)[-600:]
    res["ratio_vs_multinomial"] = res["torch_multinomial_us"] / res["ours_us"]
    res["ratio_vs_categorical"] = res["torch_categorical_us"] / res["ours_us"]
    print(json.dumps(res, indent=1))
    print("written", write_results("sampler", res))


if __name__ == "__main__":
    main()
