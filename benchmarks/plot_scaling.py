"""Scaling figure from benchmarks/results/env_step_*.json: env-steps/s vs envs and vs agents."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str = "results/env_step_H100.json", out: str = "scaling.png") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    doc = json.loads(Path(path).read_text())
    rows = [r for r in doc["rows"] if "error" not in r]
    gpu = doc["environment"].get("cuda_device", "GPU")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    by_agents = sorted((r for r in rows if r["agents"] == 110), key=lambda r: r["envs"])
    axes[0].plot([r["envs"] for r in by_agents], [r["graph_env_steps_per_s"] for r in by_agents], "o-")
    axes[0].set(xscale="log", yscale="log", xlabel="env replicas (110 agents each)", ylabel="env steps / s",
                title="Tag continuous: throughput vs envs")
    agent_counts = sorted({r["agents"] for r in rows})
    for envs in sorted({r["envs"] for r in rows}):
        pts = sorted((r for r in rows if r["envs"] == envs), key=lambda r: r["agents"])
        if len(pts) > 1:
            axes[1].plot([r["agents"] for r in pts], [r["graph_agent_steps_per_s"] for r in pts], "o-", label=f"{envs} envs")
    axes[1].set(xscale="log", yscale="log", xlabel="agents per env", ylabel="agent steps / s",
                title="Tag continuous: throughput vs agents")
    if axes[1].lines:
        axes[1].legend()
    fig.suptitle(f"sampling + step + reset, CUDA graph, {gpu}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out, agent_counts)


if __name__ == "__main__":
    main(*sys.argv[1:])
