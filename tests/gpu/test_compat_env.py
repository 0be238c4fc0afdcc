"""2.7.1's env-authoring contract on the GPU.

A custom env written the 2.7.1 way (tests/helpers/legacy_env: gym-style Python class, a CUDA child
class whose step launches ``self.cuda_step(*self.cuda_step_function_feed(args), block=, grid=)``,
and a kernel using getEnvID / getAgentID / __sync_env_threads / wkNumberAgents) registered with
``EnvironmentRegistrar.add_cuda_env_src_path``, run through ``EnvWrapper`` and 2.7.1's consistency
checker for one and two blocks per env; and this package's Tag envs through that checker with
2.7.1's keywords and scenarios.
"""

from __future__ import annotations

import numpy as np
import pytest

from warp_drive.errors import ConfigError

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

CROWD = {
    "crowded": dict(num_agents=6, grid_length=2, episode_length=7, seed=5),
    "roomy": dict(num_agents=3, grid_length=5, episode_length=6, seed=1),
    "many": dict(num_agents=40, grid_length=4, episode_length=5, seed=2),
}


@pytest.fixture()
def registrar():
    from tests.helpers.legacy_env import CUDA_SOURCE, CUDALegacyCrowd
    from warp_drive.utils.env_registrar import EnvironmentRegistrar

    r = EnvironmentRegistrar()
    r.add_cuda_env_src_path(CUDALegacyCrowd.name, str(CUDA_SOURCE), env_backend="pycuda")
    return r


@pytest.mark.parametrize("blocks_per_env", [1, 2])
def test_legacy_env_steps_exactly_like_its_numpy_twin(registrar, blocks_per_env):
    """7 agents on a 2 x 2 grid: with two blocks per env, crowds span both blocks, so a missing
    env-wide barrier would show up as wrong crowd counts, rewards and mean positions."""
    from tests.helpers.legacy_env import CUDALegacyCrowd, crowd_step
    from warp_drive.env_wrapper import EnvWrapper

    E, N, T = 4, 7, 6
    env = CUDALegacyCrowd(num_agents=N, grid_length=2, episode_length=T, seed=3)
    w = EnvWrapper(env, num_envs=E, blocks_per_env=blocks_per_env, env_backend="pycuda", env_registrar=registrar)
    assert (w.n_envs, w.blocks_per_env, w.env_backend, w.name) == (E, blocks_per_env, "pycuda", "LegacyCrowd")
    w.reset_all_envs()
    dm = w.cuda_data_manager
    # the placeholders the kernel uses exist before its first step, shaped as in 2.7.1
    assert dm.get_shape("observations") == (E, N, 6) and dm.get_dtype("observations") == "float32"
    assert dm.get_shape("sampled_actions") == (E, N, 1) and dm.get_dtype("sampled_actions") == "int32"
    assert dm.get_shape("rewards") == (E, N) and dm.get_shape("_done_") == (E,) and dm.get_shape("_timestep_") == (E,)
    assert callable(env.cuda_step)

    x = np.broadcast_to(env.starting_location_x, (E, N)).copy()
    y = np.broadcast_to(env.starting_location_y, (E, N)).copy()
    t = np.zeros(E, np.int32)
    rng = np.random.default_rng(0)
    crowded_across_blocks = False
    for step in range(T):
        actions = rng.integers(0, 5, (E, N, 1)).astype(np.int32)
        dm.data_on_device_via_torch("sampled_actions")[:] = torch.from_numpy(actions).to(dm.device)
        assert w.step_all_envs() is None
        obs, rew, done = crowd_step(x, y, actions[..., 0], t, 2, 0.5, 1.0, T)
        np.testing.assert_array_equal(dm.pull_data_from_device("loc_x"), x)
        np.testing.assert_array_equal(dm.pull_data_from_device("loc_y"), y)
        np.testing.assert_array_equal(dm.pull_data_from_device("observations"), obs)
        np.testing.assert_array_equal(dm.pull_data_from_device("rewards"), rew)
        np.testing.assert_array_equal(dm.pull_data_from_device("_timestep_"), t)
        np.testing.assert_array_equal(dm.pull_data_from_device("_done_") > 0, done)
        same = (x[:, :4, None] == x[:, None, 4:]) & (y[:, :4, None] == y[:, None, 4:])
        crowded_across_blocks |= bool(same.any())
    assert crowded_across_blocks and env.timestep == T
    w.reset_only_done_envs()
    np.testing.assert_array_equal(dm.pull_data_from_device("loc_x"), np.broadcast_to(env.starting_location_x, (E, N)))
    np.testing.assert_array_equal(dm.pull_data_from_device("_done_"), np.zeros(E))
    np.testing.assert_array_equal(dm.pull_data_from_device("_timestep_"), np.zeros(E))


@pytest.mark.parametrize("blocks_per_env", [1, 2])
@pytest.mark.parametrize("classes", ["dual_mode", "cpu_and_cuda_classes", "testing_mode"])
def test_legacy_env_through_the_2_7_1_checker(registrar, blocks_per_env, classes):
    from tests.helpers.legacy_env import CUDALegacyCrowd, LegacyCrowd
    from warp_drive.env_cpu_gpu_consistency_checker import EnvironmentCPUvsGPU

    if classes == "cpu_and_cuda_classes":
        kwargs = dict(cpu_env_class=LegacyCrowd, cuda_env_class=CUDALegacyCrowd)
    else:
        kwargs = dict(dual_mode_env_class=CUDALegacyCrowd, use_gpu_testing_mode=classes == "testing_mode")
    checker = EnvironmentCPUvsGPU(
        **kwargs, env_configs=CROWD, num_envs=3, blocks_per_env=blocks_per_env, num_episodes=2,
        env_registrar=registrar,
    )
    assert not checker.vectorised
    report = checker.test_env_reset_and_step(consistency_threshold_pct=1, seed=274880)
    assert report.episodes_completed == 3 * 3 * 2
    assert report.max_abs_error["rewards"] == 0.0


def test_legacy_env_by_name_and_on_the_numba_backend(registrar):
    from tests.helpers.legacy_env import CUDALegacyCrowd
    from warp_drive.env_wrapper import EnvWrapper

    registrar.add(env_backend="pycuda")(CUDALegacyCrowd)
    w = EnvWrapper(env_name="LegacyCrowd", env_config=dict(num_agents=4, seed=0), num_envs=2, env_backend="pycuda",
                   env_registrar=registrar)
    assert isinstance(w.env, CUDALegacyCrowd)
    w.reset_all_envs()
    w.step_all_envs()
    # the numba backend runs a Numba step only: this env has none (tests/gpu/test_numba_backend_gpu.py runs one)
    with pytest.raises(ConfigError, match="has no Numba step"):
        EnvWrapper(CUDALegacyCrowd(num_agents=4, seed=0), num_envs=2, env_backend="numba", env_registrar=registrar)


def test_function_manager_builds_a_registered_env_2_7_1_style(registrar):
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    fm = PyCUDAFunctionManager(num_agents=5, num_envs=2)
    fm.compile_and_load_cuda(
        env_name="LegacyCrowd", template_header_file="template_env_config.h",
        template_runner_file="template_env_runner.cu", customized_env_registrar=registrar,
    )
    fm.initialize_functions(["CudaLegacyCrowdStep"])
    assert "CudaLegacyCrowdStep" in fm.cuda_function_names


# ----------------------------------------------------------------------------- our envs, 2.7.1 checker
TAG_2_7_1 = dict(grid_length=10.0, episode_length=20, seed=274880)
TAG_SCENARIOS = {  # the four scenarios of 2.7.1's tag_continuous test, with shorter episodes
    "2 taggers 3 runners, full obs, no tags": dict(
        TAG_2_7_1, num_taggers=2, num_runners=3, max_acceleration=1.0, min_acceleration=-1.0, max_turn=np.pi / 4,
        min_turn=-np.pi / 4, num_acceleration_levels=3, num_turn_levels=3, use_full_observation=True,
        runner_exits_game_after_tagged=True, tagging_distance=0.0),
    "4 taggers 1 runner, partial obs, runners stay": dict(
        TAG_2_7_1, num_taggers=4, num_runners=1, max_acceleration=0.05, min_acceleration=-0.05, skill_level_tagger=2.0,
        step_penalty_for_tagger=-0.1, use_full_observation=False, runner_exits_game_after_tagged=False,
        tagging_distance=0.25),
    "1 tagger 4 runners, partial obs": dict(
        TAG_2_7_1, num_taggers=1, num_runners=4, max_acceleration=2.0, min_acceleration=-2.0, max_turn=np.pi / 2,
        min_turn=-np.pi / 2, step_reward_for_runner=0.1, skill_level_tagger=0.5, use_full_observation=False,
        runner_exits_game_after_tagged=True),
    "3 taggers 2 runners, full obs, runners stay": dict(
        TAG_2_7_1, num_taggers=3, num_runners=2, max_acceleration=0.05, min_acceleration=-0.05, max_turn=np.pi,
        min_turn=-np.pi, skill_level_runner=0.5, use_full_observation=True, runner_exits_game_after_tagged=False),
}


@pytest.mark.parametrize("blocks_per_env", [1, 2])
def test_tag_continuous_through_the_2_7_1_checker(blocks_per_env):
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env_cpu_gpu_consistency_checker import EnvironmentCPUvsGPU

    EnvironmentCPUvsGPU(
        dual_mode_env_class=TagContinuous, env_configs=TAG_SCENARIOS, num_envs=2, num_episodes=2,
        blocks_per_env=blocks_per_env,
    ).test_env_reset_and_step(consistency_threshold_pct=1, seed=274880)


def test_tag_gridworld_through_the_2_7_1_checker():
    from example_envs.tag_gridworld.tag_gridworld import CUDATagGridWorld, TagGridWorld
    from warp_drive.env_cpu_gpu_consistency_checker import EnvironmentCPUvsGPU

    configs = {"full obs": dict(num_taggers=4, grid_length=4, episode_length=20, seed=27),
               "partial obs": dict(num_taggers=4, grid_length=4, episode_length=20, seed=27, use_full_observation=False)}
    EnvironmentCPUvsGPU(cpu_env_class=TagGridWorld, cuda_env_class=CUDATagGridWorld, env_configs=configs,
                        num_envs=2, num_episodes=2).test_env_reset_and_step(consistency_threshold_pct=1, seed=274880)


def test_gridworld_action_table_pushed_the_2_7_1_way():
    """2.7.1 scripts copy env.step_actions into __constant__ kIndexToActionArr; the kernel reads it."""
    from example_envs.tag_gridworld.tag_gridworld import CUDATagGridWorld
    from warp_drive.env_wrapper import EnvWrapper

    env = CUDATagGridWorld(num_taggers=2, grid_length=6, episode_length=10)
    w = EnvWrapper(env, num_envs=2, env_backend="pycuda")
    dm, fm = w.cuda_data_manager, w.cuda_function_manager
    dm.add_shared_constants({"kIndexToActionArr": -env.step_actions})  # every move reversed
    fm.initialize_shared_constants(dm, constant_names=["kIndexToActionArr"])
    w.reset_all_envs()
    x0 = dm.pull_data_from_device("loc_x")
    w.step_all_envs(np.full((2, 3, 1), 2, np.int32))  # action 2 is -x in the default table
    np.testing.assert_array_equal(dm.pull_data_from_device("loc_x"), np.minimum(x0 + 1, 6))
    dm2 = EnvWrapper(CUDATagGridWorld(num_taggers=2, grid_length=6, episode_length=10), num_envs=2,
                     env_backend="pycuda")
    dm2.cuda_data_manager.add_shared_constants({"kIndexToActionArr": env.step_actions})
    dm2.cuda_function_manager.initialize_shared_constants(dm2.cuda_data_manager, constant_names=["kIndexToActionArr"])
    dm2.reset_all_envs()
    dm2.step_all_envs(np.full((2, 3, 1), 2, np.int32))
    np.testing.assert_array_equal(dm2.cuda_data_manager.pull_data_from_device("loc_x"), np.maximum(x0 - 1, 0))


def test_data_loader_registers_per_head_actions_with_the_gpu_sampler():
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.services.sampler import Sampler
    from warp_drive.training.utils.data_loader import create_and_push_data_placeholders

    env = TagContinuous(num_taggers=2, num_runners=8, seed=0)
    w = EnvWrapper(env, num_envs=3, env_backend="pycuda")
    w.reset_all_envs()
    sampler = Sampler(w.cuda_function_manager)
    create_and_push_data_placeholders(w, sampler, {"tagger": list(env.taggers), "runner": list(env.runners)},
                                      training_batch_size_per_env=4)
    dm = w.cuda_data_manager
    sampler.init_random(seed=1)
    probs = torch.zeros((3, 10, len(env.turn_actions)), device=dm.device)
    probs[..., 3] = 1.0
    sampler.sample(dm, probs, "sampled_actions_1")
    assert (dm.pull_data_from_device("sampled_actions_1") == 3).all()
    assert dm.get_shape("processed_observations_batch_runner") == (4, 3, 8, env.obs_dim)


def test_trainer_trains_a_2_7_1_env_in_a_cuda_graph(registrar, tmp_path):
    """The 2.7.1 env's own step (self.cuda_step(...)) joins the trainer's CUDA-graph capture."""
    import math

    from tests.helpers.legacy_env import CUDALegacyCrowd
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    env_cfg = dict(num_agents=6, grid_length=3, episode_length=10, seed=0)
    run_config = dict(
        name="legacy_crowd", env=env_cfg, trainer=dict(num_envs=16, train_batch_size=160, num_episodes=64),
        policy=dict(shared=dict(to_train=True, algorithm="A2C", gamma=0.98, lr=0.001,
                                model=dict(type="fully_connected", fc_dims=[32, 32], model_ckpt_filepath=""))),
        saving=dict(metrics_log_freq=1, model_params_save_freq=1000, basedir=str(tmp_path), name="legacy", tag="t"),
    )
    w = EnvWrapper(CUDALegacyCrowd(**env_cfg), num_envs=16, env_backend="pycuda", env_registrar=registrar)
    trainer = Trainer(w, run_config, {"shared": list(range(6))}, verbose=False)
    metrics = trainer.train()
    losses = [v for k, v in metrics.items() if k.endswith("loss")]
    assert losses and all(math.isfinite(v) for v in losses), metrics
    graph = getattr(trainer, "graphed_rollout", None)
    assert graph is not None and graph.captured
    trainer.graceful_close()
