"""Shared helpers for the benchmarks: device/commit info, JSON results, config builders.

torch is imported where it is used, so that drivers run in an interpreter without it (the JAX peer's,
:mod:`peer_jaxmarl`) share the machine and commit helpers."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def commit() -> str:
    """The git commit measured ($WARP_DRIVE_COMMIT when the tree travels without .git)."""
    if os.environ.get("WARP_DRIVE_COMMIT"):
        return os.environ["WARP_DRIVE_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=False).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def environment() -> dict[str, Any]:
    """GPU name, driver, CUDA, torch, commit and date for every results file."""
    import torch

    try:
        from warp_drive.cuda.device import device_info
    except ImportError:  # an earlier tree (aeeede7, issue 37's baseline) kept it in utils/
        from warp_drive.utils.device import device_info

    info = device_info() if torch.cuda.is_available() else {"cuda_device": None}
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        drv = ""
    info.update(nvidia_driver=drv.splitlines()[0] if drv else "",  # one line per GPU: the first
                commit=commit(), date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    return info


def write_results(name: str, payload: dict[str, Any], results_dir: Path | None = None) -> Path:
    """Write ``{"environment": ..., **payload}`` to $OUT (if set) and ``results_dir`` (default
    ``$WARP_DRIVE_BENCH_RESULTS`` if set, else benchmarks/results/) as ``<name>_<GPU>.json``."""
    env = environment()
    gpu = (env.get("cuda_device") or "cpu").replace(" ", "_")
    doc = {"benchmark": name, "environment": env, **payload}
    text = json.dumps(doc, indent=2, default=float)
    folder = results_dir or os.environ.get("WARP_DRIVE_BENCH_RESULTS") or Path(__file__).parent / "results"
    paths = [Path(folder) / f"{name}_{gpu}.json"]
    if os.environ.get("OUT"):
        paths.append(Path(os.environ["OUT"]) / f"{name}.json")
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return paths[-1]


#: The 2.7.1 tutorial's training settings for Tag continuous (A2C, 100 envs): what the speed benchmarks
#: measure side by side with the reference. The bundled config now carries this project's measured
#: defaults (PPO, 1,000 envs; benchmarks/learning_side_by_side.py), so speed runs pin these.
TAG_TUTORIAL_A2C = [
    "trainer.num_envs=100", "trainer.train_batch_size=25000",
    *(f"policy.{p}.{k}" for p in ("runner", "tagger") for k in (
        "algorithm=A2C", "vf_loss_coeff=1", "entropy_coeff=0.05", "normalize_advantage=false", "gae_lambda=1.0",
        "num_epochs=null", "num_minibatches=1", "clip_grad_norm=true", "max_grad_norm=0.5")),
    "policy.runner.lr=0.005", "policy.tagger.lr=0.001",
]


def make_trainer(env_name: str, overrides: list[str], backend: str = "pycuda", results_dir: str = "/tmp/wd_bench",
                 tutorial: bool = True) -> Any:
    """Trainer for a bundled example config with dotted overrides (Tag continuous: on top of
    :data:`TAG_TUTORIAL_A2C` unless ``tutorial`` is False: the bundled config as committed)."""
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env_wrapper import EnvWrapper  # 2.7.1's path: every tree of ours keeps it
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    tutorial = TAG_TUTORIAL_A2C if env_name == "tag_continuous" and tutorial else []
    cfg = load_run_config(get_default_config_path(env_name), [*tutorial, f"trainer.env_backend={backend}",
                          "saving.metrics_log_freq=1000000", "saving.model_params_save_freq=100000000", *overrides])
    env = get_example_env_class(env_name)(**cfg.env)
    wrapper = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend=backend)
    return Trainer(wrapper, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, results_dir=results_dir)


def make_sampler(envs: int, agents: int, actions: int) -> tuple[Any, Any, Any, Any]:
    """A pycuda data store with an ``acts`` placeholder, its function manager, a seeded sampler
    registered for it, and softmax probabilities of shape (envs, agents, actions) on the GPU."""
    import numpy as np
    import torch

    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager
    from warp_drive.services.sampler import Sampler

    dm = PyCUDADataManager(num_agents=agents, num_envs=envs, episode_length=10)
    dm.push_data_to_device({"acts": np.zeros((envs, agents, 1), np.int32)}, torch_accessible=True)
    fm = PyCUDAFunctionManager(agents, envs)
    fm.load_cuda_from_source_code("")
    sampler = Sampler(fm)
    sampler.init_random(1)
    sampler.register_actions(dm, "acts", actions)
    probs = torch.softmax(torch.randn(envs, agents, actions, device="cuda"), -1).contiguous()
    return dm, fm, sampler, probs
