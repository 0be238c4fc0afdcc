"""Issue 40, items 4 and 5 on the GPU: the out-of-tree fixture package's kernel agrees with its NumPy step
and trains through the command line on pycuda; the episode index (``Constants.EPISODE``) is advanced by the
device resets exactly as by the cpu backend's, so a kernel's draws keyed by it match their NumPy twin and
differ between episodes; a one-block-only env refuses two blocks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.episode_draws import DRAWS_CU, Draws
from tests.helpers.out_of_tree import write_env_package
from warp_drive.env import Constants
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.testing.consistency import EnvironmentCPUvsGPU

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "oot_gpu_pkg"


@pytest.fixture(scope="module")
def gather(tmp_path_factory):
    root = tmp_path_factory.mktemp("ext")
    write_env_package(root, PACKAGE)
    sys.path.insert(0, str(root))
    try:
        from warp_drive.cli.envs import resolve_env

        yield resolve_env(f"{PACKAGE}.gather:Gather").env_class, root
    finally:
        sys.path.remove(str(root))


def test_the_out_of_tree_kernel_matches_its_numpy_step(gather):
    cls, _ = gather
    configs = {"small": dict(num_agents=3, grid_length=4, episode_length=10), "default": {},
               "many agents": dict(num_agents=300, grid_length=100, episode_length=30)}
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=configs, num_envs=5).test_env_reset_and_step(seeds=(0, 1))


def test_a_one_block_env_refuses_two_blocks_on_the_gpu(gather):
    cls, _ = gather
    with pytest.raises(ConfigError, match="max_blocks_per_env = 1"):
        EnvWrapper(cls(num_agents=4), num_envs=2, env_backend="pycuda", blocks_per_env=2)


def test_the_training_script_trains_the_out_of_tree_env_on_the_gpu(gather, tmp_path):
    _, root = gather
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(ROOT)]))
    res = subprocess.run([sys.executable, "-m", "warp_drive.training.example_training_script", "--env",
                          f"{PACKAGE}.gather:Gather", "--backend", "pycuda", "--eval_episodes", "0", "--results_dir", "run",
                          "trainer.num_envs=100", "trainer.train_batch_size=4000", "trainer.num_episodes=300"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoint_latest.pt").is_file()


@pytest.fixture
def draws_on_gpu(tmp_path):
    source = tmp_path / "draws_step.cu"
    source.write_text(DRAWS_CU)
    return type("CudaDraws", (Draws,), {"cuda_source": source})


def test_draws_keyed_by_the_episode_index_match_numpy_and_differ_between_episodes(draws_on_gpu):
    EnvironmentCPUvsGPU(dual_mode_env_class=draws_on_gpu, env_configs={"3 agents": {}, "40 agents": dict(num_agents=40)},
                        num_envs=4, num_episodes=3).test_env_reset_and_step(seeds=(0,))
    wrapper = EnvWrapper(draws_on_gpu(), num_envs=2, env_backend="pycuda")
    wrapper.reset_all_envs()
    dm = wrapper.cuda_data_manager
    episodes = []
    for _ in range(3):
        steps = []
        for _ in range(4):
            wrapper.step_all_envs(np.zeros((2, 3, 1), np.int32))
            steps.append(dm.pull_data_from_device("draw").copy())
        episodes.append(np.array(steps))
        wrapper.reset_only_done_envs()
    assert dm.pull_data_from_device(Constants.EPISODE).tolist() == [3, 3]
    assert not np.isin(episodes[0], episodes[1]).any() and not np.isin(episodes[1], episodes[2]).any()
