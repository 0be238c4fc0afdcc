"""The MPE CUDA step kernels and start-state hooks against their NumPy twins (issue 38, item 3).

``EnvironmentCPUvsGPU`` runs both backends from the same host reset with the same random actions
and compares every per-env array (world state, observations, rewards, done, truncation and time
step) after every step and every reset, until every env has finished at least two episodes.
Tolerance: the checker's default for floats, ``(atol 1e-5, rtol 1e-4)``; integers exactly. The two
sides are written to agree bit for bit (no FMA, the contact softplus in double), except where
CUDA's and the host's double ``exp`` / ``log1p`` differ in the last bit. The host-run test of the
same phase functions (``tests/cpu/envs/test_mpe_kernels.py``) found them bit-identical.
"""

from __future__ import annotations

import pytest

from example_envs import get_example_env_class
from warp_drive.errors import ConfigError
from warp_drive.testing.consistency import EnvironmentCPUvsGPU

pytestmark = pytest.mark.gpu

SPREAD_CONFIGS = {
    "N=3 (simple_spread_v3 defaults), fresh starts": dict(seed=3),
    "N=3, one host start for all": dict(seed=3, fresh_start_states=False),
    "N=5, local_ratio 0.3, 10 steps": dict(num_agents=5, local_ratio=0.3, episode_length=10, seed=4),
    "N=40 (crowded: many contacts), 8 steps": dict(num_agents=40, episode_length=8, seed=5),
}
LISTENER_CONFIGS = {
    "defaults, fresh starts": dict(seed=3),
    "one host start for all": dict(seed=3, fresh_start_states=False),
    "7-step episodes": dict(episode_length=7, seed=6),
}


def test_mpe_simple_spread_cuda_matches_numpy():
    cls = get_example_env_class("mpe_simple_spread")
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=SPREAD_CONFIGS, num_envs=5).test_env_reset_and_step(seeds=(0, 1))


def test_mpe_simple_speaker_listener_cuda_matches_numpy():
    cls = get_example_env_class("mpe_simple_speaker_listener")
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=LISTENER_CONFIGS, num_envs=5).test_env_reset_and_step(seeds=(0, 1))


def test_mpe_many_envs_cuda_matches_numpy():
    """Many replicas (one block each): every env's rows, reset keys and flags in their place."""
    cls = get_example_env_class("mpe_simple_spread")
    report = EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={"N=3, 1000 envs": dict(seed=7, episode_length=5)},
                                 num_envs=1000).test_env_reset_and_step(seeds=(0,))
    assert "_truncated_" in report.arrays


@pytest.mark.parametrize("name", ["mpe_simple_spread", "mpe_simple_speaker_listener"])
def test_mpe_refuses_several_blocks_per_env(name):
    from warp_drive.env.env_wrapper import EnvWrapper

    with pytest.raises(ConfigError, match="max_blocks_per_env = 1"):
        EnvWrapper(get_example_env_class(name)(), num_envs=2, env_backend="pycuda", blocks_per_env=2)
