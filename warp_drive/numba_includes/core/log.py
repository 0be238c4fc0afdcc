"""Episode logs of one env (2.7.1's names): ``log`` (T + 1, A[, F]) holds slot 0 = the reset state,
``log_mask`` (T + 1,) int32 marks the slots written."""

from numba import cuda

__all__ = ["reset_log_mask", "update_log_mask", "log_one_step_2d", "log_one_step_3d"]


@cuda.jit
def reset_log_mask(log_mask, episode_length):
    if cuda.grid(1) == 0:
        for i in range(episode_length + 1):
            log_mask[i] = 0


@cuda.jit
def update_log_mask(log_mask, timestep, episode_length):
    if cuda.grid(1) == 0 and 0 <= timestep <= episode_length:
        log_mask[timestep] = 1


@cuda.jit
def log_one_step_2d(log, data, timestep, episode_length, env_id):
    agent_id = cuda.grid(1)
    if agent_id < data.shape[1] and timestep <= episode_length:
        log[timestep, agent_id] = data[env_id, agent_id]


@cuda.jit
def log_one_step_3d(log, data, feature_dim, timestep, episode_length, env_id):
    agent_id = cuda.grid(1)
    if agent_id < data.shape[1] and timestep <= episode_length:
        for i in range(feature_dim):
            log[timestep, agent_id, i] = data[env_id, agent_id, i]
