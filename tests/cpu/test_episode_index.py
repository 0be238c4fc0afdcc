"""Issue 40, item 5: a step's random draws differ between episodes. An env that binds ``Constants.EPISODE``
gets each env's episode index (its reset count) on the data store, advanced by every reset, so the
documented Philox counter ``(env * N + agent, timestep, episode)`` never repeats; ``(row, timestep, 0)``
(the former advice) repeats every episode."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.episode_draws import DRAWS_CU, Draws
from warp_drive.env import Constants, binds_episode_index
from warp_drive.env.env_wrapper import EnvWrapper


def _draws_per_episode(env: Draws, episodes: int = 3, num_envs: int = 2) -> tuple[np.ndarray, list[list[int]]]:
    """``(episodes, T, E, N)`` draws and the episode index seen at each episode's first step."""
    wrapper = EnvWrapper(env, num_envs=num_envs, env_backend="cpu")
    wrapper.reset_all_envs()
    dm = wrapper.cuda_data_manager
    draws, seen = [], []
    for _ in range(episodes):
        seen.append(dm.pull_data_from_device(Constants.EPISODE).tolist())
        steps = []
        for _ in range(env.episode_length):
            wrapper.step_all_envs(np.zeros((num_envs, env.num_agents, 1), np.int32))
            steps.append(dm.pull_data_from_device("draw").copy())
        draws.append(steps)
        wrapper.reset_only_done_envs()
    return np.array(draws), seen


def test_the_episode_index_advances_at_every_reset_and_the_draws_differ_between_episodes():
    draws, seen = _draws_per_episode(Draws())
    assert seen == [[0, 0], [1, 1], [2, 2]]
    for a in range(3):
        for b in range(a + 1, 3):
            assert not np.isin(draws[a], draws[b]).any(), f"episodes {a} and {b} share a draw"


def test_a_counter_without_the_episode_repeats_every_episode():
    draws, _ = _draws_per_episode(Draws(with_episode=False))
    assert np.array_equal(draws[0], draws[1]) and np.array_equal(draws[1], draws[2])


def test_the_episode_index_is_created_only_for_envs_that_bind_it():
    class NoEpisode(Draws):
        step_kernel_args = tuple(a for a in Draws.step_kernel_args if a != Constants.EPISODE)

        def numpy_step(self, data: dict) -> None:
            data[Constants.TIMESTEP] += 1

    assert binds_episode_index(Draws()) and not binds_episode_index(NoEpisode())
    wrapper = EnvWrapper(NoEpisode(), num_envs=2, env_backend="cpu")
    wrapper.reset_all_envs()
    assert not wrapper.cuda_data_manager.is_data_on_device(Constants.EPISODE)


def test_the_episode_index_is_reserved():
    from warp_drive.errors import DuplicateDataError
    from warp_drive.managers.data_manager import CPUDataManager

    dm = CPUDataManager(num_agents=2, num_envs=2, episode_length=3)
    with pytest.raises(DuplicateDataError, match="reserved"):
        dm.push_data_to_device({Constants.EPISODE: np.zeros(2, np.int32)})


def test_the_kernel_parameter_episode_arr_binds_the_episode_index():
    """The signature check (as on the GPU, with the parsed kernel handed to the cpu function manager)."""
    from warp_drive.cuda.signature import parse_kernel_signatures
    from warp_drive.errors import KernelSignatureError

    source = DRAWS_CU
    wrapper = EnvWrapper(Draws(), num_envs=2, env_backend="cpu")
    wrapper.reset_all_envs()
    fm, dm = wrapper.cuda_function_manager, wrapper.cuda_data_manager
    fm._signatures["CudaDrawsStep"] = parse_kernel_signatures(source)["CudaDrawsStep"]
    fm.check_arguments("CudaDrawsStep", Draws.step_kernel_args, dm)
    fm._signatures["CudaDrawsStep"] = parse_kernel_signatures(source.replace("const int* episode", "float* episode"))[
        "CudaDrawsStep"]
    with pytest.raises(KernelSignatureError, match="episode"):
        fm.check_arguments("CudaDrawsStep", Draws.step_kernel_args, dm)
