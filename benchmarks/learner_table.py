"""The learner benchmark's results as a Markdown table: baseline and this tree, side by side.

Usage: ``python benchmarks/learner_table.py GPU_TAG`` (e.g. ``NVIDIA_H100_80GB_HBM3``): reads
``benchmarks/results/learner_baseline_<GPU>.json``, ``learner_<GPU>.json`` and, if present,
``learner_bf16_compile_<GPU>.json`` (written by ``benchmarks/learner_call.sh``) and prints one row per
config and variant with the ratio to the baseline's default.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).with_name("results")


def rows(gpu: str) -> list[str]:
    def load(name: str) -> dict:
        path = RESULTS / f"{name}_{gpu}.json"
        return json.loads(path.read_text())["results"] if path.is_file() else {}

    base = load("learner_baseline")
    mine = {**load("learner"), **load("learner_bf16_compile")}
    out = ["| config / variant | ms per iteration | env steps/s | x baseline | env step / fwd+sample / update ms "
           "| update TFLOP/s (% bf16 peak) | iteration % of memory floor |", "|---|---|---|---|---|---|---|"]
    for key, r in [*((f"{k} (baseline)", v) for k, v in base.items()), *mine.items()]:
        if "error" in r:
            out.append(f"| {key} | error: {r['error'][:60]} | | | | | |")
            continue
        ref = base.get(key.split(" ")[0].split("/")[0] + "/default", {})
        ratio = f"{r['env_steps_per_s'] / ref['env_steps_per_s']:.2f}x" if ref.get("env_steps_per_s") else ""
        out.append(f"| {key} | {r['iteration_ms']:.1f} | {r['env_steps_per_s'] / 1e3:,.0f} K | {ratio} | "
                   f"{r['env_step_ms']:.1f} / {r['forward_sampling_ms']:.1f} / {r['update_ms']:.1f} | "
                   f"{r['update_tflops']:.0f} ({100 * r.get('update_peak_fraction', 0):.1f}%) | "
                   f"{100 * r.get('memory_floor_fraction', 0):.1f}% |")
    return out


if __name__ == "__main__":
    print("\n".join(rows(sys.argv[1] if len(sys.argv) > 1 else "NVIDIA_H100_80GB_HBM3")))
