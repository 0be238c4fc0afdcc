"""Classic-control envs through EnvWrapper on the cpu backend (saved-copy and reset-pool resets).

After every reset the observation placeholder must describe the state it was reset to (with a
pool, state and observation pools share one row per env), and stepping continues from it.
"""

from __future__ import annotations

import numpy as np
import pytest

from example_envs.classic_control import CLASSIC_CONTROL_ENVS
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.utils.constants import Constants

NUM_ENVS = 5


@pytest.mark.parametrize("pool_size", [0, 16], ids=["saved_copy", "pool"])
@pytest.mark.parametrize("name", sorted(CLASSIC_CONTROL_ENVS))
def test_classic_env_wrapper_cpu_resets_keep_obs_and_state_aligned(name, pool_size):
    env = CLASSIC_CONTROL_ENVS[name](episode_length=12, reset_pool_size=pool_size, seed=3)
    wrapper = EnvWrapper(env_obj=env, num_envs=NUM_ENVS, env_backend="cpu")
    wrapper.reset_all_envs()
    dm = wrapper.cuda_data_manager
    view = dm.host_view()
    state, obs = view["state"][:, 0], view[Constants.OBSERVATIONS][:, 0]
    np.testing.assert_array_equal(env.observe(state), obs)
    if pool_size:
        pool_states = env.reset_pool()[0][:, 0]
        assert all(any(np.array_equal(s, p) for p in pool_states) for s in state)
    else:
        np.testing.assert_array_equal(state, np.repeat(env.state[None], NUM_ENVS, axis=0))
    space = env.action_space[0]
    space.seed(0)
    resets = 0
    for _ in range(30):
        actions = np.array([space.sample() for _ in range(NUM_ENVS)]).reshape(NUM_ENVS, 1, 1)
        wrapper.step_all_envs(actions)
        done = view[Constants.DONE].copy()
        assert set(done.tolist()) <= {0, 1, env.TERMINAL_DONE_VALUE}
        wrapper.reset_only_done_envs()
        resets += int(np.count_nonzero(done))
        reset = done > 0
        assert np.all(view[Constants.TIMESTEP][reset] == 0)
        # obs of a stepped env is computed from the float64 state (<= 1 float32 ulp from observe())
        np.testing.assert_allclose(
            env.observe(view["state"][:, 0]), view[Constants.OBSERVATIONS][:, 0], atol=1e-6
        )
        np.testing.assert_array_equal(
            env.observe(view["state"][reset, 0]), view[Constants.OBSERVATIONS][reset, 0]
        )
    assert resets >= 2 * NUM_ENVS  # 30 steps with a time limit of 12: every env was reset twice
