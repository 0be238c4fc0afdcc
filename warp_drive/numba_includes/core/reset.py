"""Resets from saved copies (2.7.1's names): env = block, one thread per row of the env's slice.

An env is reset when ``force_reset`` is set or its ``done`` flag is; ``ref`` has the data's shape.
"""

from numba import cuda

__all__ = ["reset_when_done_1d", "reset_when_done_2d", "reset_when_done_3d", "undo_done_flag_and_reset_timestep"]


@cuda.jit(device=True)
def _resets(done, env_id, force_reset):
    return force_reset > 0 or done[env_id] > 0


@cuda.jit
def reset_when_done_1d(data, ref, done, force_reset):
    env_id = cuda.blockIdx.x
    if cuda.threadIdx.x == 0 and _resets(done, env_id, force_reset):
        data[env_id] = ref[env_id]


@cuda.jit
def reset_when_done_2d(data, ref, done, feature_dim, force_reset):
    env_id = cuda.blockIdx.x
    if _resets(done, env_id, force_reset):
        for i in range(cuda.threadIdx.x, feature_dim, cuda.blockDim.x):
            data[env_id, i] = ref[env_id, i]


@cuda.jit
def reset_when_done_3d(data, ref, done, agent_dim, feature_dim, force_reset):
    env_id = cuda.blockIdx.x
    if _resets(done, env_id, force_reset):
        for a in range(cuda.threadIdx.x, agent_dim, cuda.blockDim.x):
            for i in range(feature_dim):
                data[env_id, a, i] = ref[env_id, a, i]


@cuda.jit
def undo_done_flag_and_reset_timestep(done, timestep, force_reset):
    env_id = cuda.blockIdx.x
    if cuda.threadIdx.x == 0 and _resets(done, env_id, force_reset):
        done[env_id] = 0
        timestep[env_id] = 0
