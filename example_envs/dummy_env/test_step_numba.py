"""The Numba twin of ``test_step.cu``: 2.7.1's ``testkernel`` of its unit tests (env name ``DummyEnv``).

Per (env, agent): x /= multiplier, y *= multiplier, the agent's action i is set to i (3 actions);
an env is done at ``step == episode_length`` or when any of its agents has y >= target.
"""

from numba import cuda, int32

from warp_drive.numba_includes.env_config import *  # noqa: F401,F403  (wkNumberAgents)

NUM_ACTION_DIMS = 3


@cuda.jit
def testkernel(x, y, done, actions, multiplier, target, step, episode_length):
    env_id = cuda.blockIdx.x
    agent_id = cuda.threadIdx.x
    reached = cuda.shared.array(1, int32)
    if agent_id == 0:
        reached[0] = 0
    cuda.syncthreads()
    if agent_id < wkNumberAgents:  # noqa: F405
        x[env_id, agent_id] = x[env_id, agent_id] / multiplier
        y[env_id, agent_id] = y[env_id, agent_id] * multiplier
        if y[env_id, agent_id] >= target:
            cuda.atomic.add(reached, 0, 1)
        for i in range(NUM_ACTION_DIMS):
            actions[env_id, agent_id, i] = i
    cuda.syncthreads()
    if agent_id == 0 and (step == episode_length or reached[0] > 0):
        done[env_id] = 1
