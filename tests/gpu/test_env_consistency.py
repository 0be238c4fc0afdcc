"""CUDA step kernels vs their NumPy references: same state, same actions, >= 2 episodes, 2 seeds."""

from __future__ import annotations

import pytest

from example_envs import get_example_env_class
from warp_drive.testing.consistency import EnvironmentCPUvsGPU

pytestmark = pytest.mark.gpu

TAG = dict(grid_length=10.0, episode_length=20, seed=274880)
TAG_CONFIGS = {
    # the reference's four scenarios, shortened
    "2 taggers 3 runners, full obs, exit": dict(TAG, num_taggers=2, num_runners=3, max_acceleration=1.0, min_acceleration=-1.0,
                                                 max_turn=0.785, min_turn=-0.785, num_acceleration_levels=3, num_turn_levels=3,
                                                 use_full_observation=True, tagging_distance=0.05),
    "4 taggers 1 runner, partial obs, stay": dict(TAG, num_taggers=4, num_runners=1, max_acceleration=0.05, min_acceleration=-0.05,
                                                   skill_level_tagger=2.0, step_penalty_for_tagger=-0.1, use_full_observation=False,
                                                   num_other_agents_observed=2, runner_exits_game_after_tagged=False, tagging_distance=0.25),
    "1 tagger 4 runners, partial obs": dict(TAG, num_taggers=1, num_runners=4, max_acceleration=2.0, min_acceleration=-2.0,
                                            step_reward_for_runner=0.1, skill_level_tagger=0.5, use_full_observation=False,
                                            num_other_agents_observed=3, tagging_distance=0.2),
    "3 taggers 30 runners (33 agents), K=10": dict(TAG, num_taggers=3, num_runners=30, use_full_observation=False,
                                                   num_other_agents_observed=10, tagging_distance=0.1, max_acceleration=0.5,
                                                   min_acceleration=-0.5),
}


@pytest.mark.parametrize("blocks_per_env", [1, 2])
def test_tag_continuous_cuda_matches_numpy(blocks_per_env):
    cls = get_example_env_class("tag_continuous")
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=TAG_CONFIGS, num_envs=3, blocks_per_env=blocks_per_env).test_env_reset_and_step(seeds=(0, 1))


@pytest.mark.parametrize("taggers,runners,envs", [(90, 910, 3), (10, 2490, 2), (50, 4950, 1)])
def test_tag_continuous_many_agents_span_blocks(taggers, runners, envs):
    cls = get_example_env_class("tag_continuous")
    cfg = dict(TAG, num_taggers=taggers, num_runners=runners, grid_length=40.0, episode_length=6, use_full_observation=False,
               num_other_agents_observed=10, tagging_distance=0.02, max_acceleration=0.5, min_acceleration=-0.5)
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={f"{taggers + runners} agents": cfg}, num_envs=envs).test_env_reset_and_step(seeds=(0,))


GRID = dict(num_taggers=4, grid_length=4, episode_length=20, seed=27)


@pytest.mark.parametrize("name", ["tag_gridworld", "tag_gridworld_with_reset_pool"])
def test_tag_gridworld_cuda_matches_numpy(name):
    cls = get_example_env_class(name)
    configs = {"full obs": dict(GRID, use_full_observation=True), "partial obs": dict(GRID, use_full_observation=False),
               "33 agents": dict(GRID, num_taggers=32, grid_length=10)}
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=configs, num_envs=5).test_env_reset_and_step(seeds=(0, 1))


@pytest.mark.parametrize("name", ["cartpole", "acrobot", "mountain_car", "continuous_mountain_car", "pendulum"])
@pytest.mark.parametrize("pool", [0, 16])
def test_classic_control_cuda_matches_numpy(name, pool):
    cls = get_example_env_class(name)
    cfg = {"episode_length": 60, "seed": 3, "reset_pool_size": pool}
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={f"{name} pool={pool}": cfg}, num_envs=37).test_env_reset_and_step(seeds=(0, 1))


@pytest.mark.parametrize("blocks_per_env", [1, 2])
def test_dummy_env_cuda_matches_numpy(blocks_per_env):
    cls = get_example_env_class("dummy_env")
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={"default": {}}, num_envs=4, blocks_per_env=blocks_per_env).test_env_reset_and_step(seeds=(0, 1))


# ----------------------------------------------------------------------------- issue 16
@pytest.mark.parametrize("name,config", [
    ("tag_continuous", dict(TAG_CONFIGS["2 taggers 3 runners, full obs, exit"])),
    ("tag_gridworld", dict(GRID, use_full_observation=True)),
])
@pytest.mark.parametrize("blocks_per_env", [1, 2])
def test_truncation_flag_and_per_phase_arguments_match_numpy(name, config, blocks_per_env):
    """``_truncated_`` is compared like every per-env array, for the fused kernel (1 block per env)
    and the phase kernels, which now take only the arguments each uses (2 blocks per env)."""
    cls = get_example_env_class(name)
    report = EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={name: config}, num_envs=4,
                                 blocks_per_env=blocks_per_env).test_env_reset_and_step(seeds=(0,))
    assert "_truncated_" in report.arrays and report.episodes_completed >= 8


@pytest.mark.parametrize("name", ["cartpole", "mountain_car", "pendulum"])
def test_classic_control_truncation_flag_matches_numpy(name):
    """The shared header's ClassicControlEndStep writes the flag the NumPy step writes."""
    cls = get_example_env_class(name)
    report = EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={name: {"episode_length": 20, "seed": 1}},
                                 num_envs=64).test_env_reset_and_step(seeds=(0,))
    assert "_truncated_" in report.arrays


# ----------------------------------------------------------------------------- fresh start states
# The rendered Cuda<Name>ResetWithStartState kernels against the NumPy hooks: the checker compares
# every per-env array after the first reset and after every reset of done envs.
@pytest.mark.parametrize("blocks_per_env", [1, 2])
def test_tag_continuous_fresh_starts_match_numpy(blocks_per_env):
    cls = get_example_env_class("tag_continuous")
    configs = {f"{k}, fresh": dict(v, fresh_start_states=True) for k, v in TAG_CONFIGS.items()}
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=configs, num_envs=3, blocks_per_env=blocks_per_env).test_env_reset_and_step(seeds=(0, 1))


def test_tag_continuous_fresh_starts_match_numpy_at_1000_agents():
    cls = get_example_env_class("tag_continuous")
    cfg = dict(TAG, num_taggers=90, num_runners=910, grid_length=40.0, episode_length=4, use_full_observation=False,
               num_other_agents_observed=10, tagging_distance=0.02, fresh_start_states=True)
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={"1000 agents, fresh": cfg}, num_envs=3).test_env_reset_and_step(seeds=(0,))


def test_tag_gridworld_fresh_starts_match_numpy():
    cls = get_example_env_class("tag_gridworld")
    configs = {"full obs, fresh": dict(GRID, use_full_observation=True, fresh_start_states=True),
               "partial obs, fresh": dict(GRID, use_full_observation=False, fresh_start_states=True),
               "33 agents, fresh": dict(GRID, num_taggers=32, grid_length=10, fresh_start_states=True)}
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs=configs, num_envs=5).test_env_reset_and_step(seeds=(0, 1))


@pytest.mark.parametrize("name", ["cartpole", "acrobot", "mountain_car", "continuous_mountain_car", "pendulum"])
def test_classic_control_fresh_starts_match_numpy(name):
    cls = get_example_env_class(name)
    cfg = {"episode_length": 60, "seed": 3, "fresh_start_states": True}
    EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={f"{name} fresh": cfg}, num_envs=37).test_env_reset_and_step(seeds=(0, 1))


def test_fresh_starts_differ_across_replicas_on_the_gpu():
    from warp_drive.env.env_wrapper import EnvWrapper

    env = get_example_env_class("tag_continuous")(**dict(TAG, num_taggers=2, num_runners=8, fresh_start_states=True))
    w = EnvWrapper(env, num_envs=20, env_backend="pycuda")
    w.reset_all_envs()
    x = w.cuda_data_manager.pull_data_from_device("loc_x")
    assert len({row.tobytes() for row in x}) == 20
