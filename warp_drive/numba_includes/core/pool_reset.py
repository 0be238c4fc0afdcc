"""Resets from reset pools (2.7.1's names): each reset env copies one row of the pool, drawn from
the env's own RNG state by thread 0 (one draw per env and launch, so every element of an env comes
from the same pool row; 2.7.1 drew once per thread, defect 9)."""

from numba import cuda, int32
from numba.cuda.random import init_xoroshiro128p_states, xoroshiro128p_uniform_float32

__all__ = ["init_random_for_reset", "reset_when_done_1d_from_pool", "reset_when_done_2d_from_pool",
           "reset_when_done_3d_from_pool"]


def init_random_for_reset(rng_states, seed):
    """Seed one RNG state per env (host call)."""
    init_xoroshiro128p_states(rng_states, seed)


@cuda.jit(device=True)
def _pool_row(rng_states, env_id, pool_size, row):
    """Thread 0 draws the env's pool row into shared ``row[0]``; every thread returns it."""
    if cuda.threadIdx.x == 0:
        r = int32(xoroshiro128p_uniform_float32(rng_states, env_id) * pool_size)
        row[0] = min(r, pool_size - 1)
    cuda.syncthreads()
    return row[0]


@cuda.jit
def reset_when_done_1d_from_pool(rng_states, data, ref, done, force_reset):
    env_id = cuda.blockIdx.x
    row = cuda.shared.array(1, int32)
    if force_reset > 0 or done[env_id] > 0:
        r = _pool_row(rng_states, env_id, ref.shape[0], row)
        if cuda.threadIdx.x == 0:
            data[env_id] = ref[r]


@cuda.jit
def reset_when_done_2d_from_pool(rng_states, data, ref, done, feature_dim, force_reset):
    env_id = cuda.blockIdx.x
    row = cuda.shared.array(1, int32)
    if force_reset > 0 or done[env_id] > 0:
        r = _pool_row(rng_states, env_id, ref.shape[0], row)
        for i in range(cuda.threadIdx.x, feature_dim, cuda.blockDim.x):
            data[env_id, i] = ref[r, i]


@cuda.jit
def reset_when_done_3d_from_pool(rng_states, data, ref, done, agent_dim, feature_dim, force_reset):
    env_id = cuda.blockIdx.x
    row = cuda.shared.array(1, int32)
    if force_reset > 0 or done[env_id] > 0:
        r = _pool_row(rng_states, env_id, ref.shape[0], row)
        for a in range(cuda.threadIdx.x, agent_dim, cuda.blockDim.x):
            for i in range(feature_dim):
                data[env_id, a, i] = ref[r, a, i]
