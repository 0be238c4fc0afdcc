"""Random draws: per-thread xoroshiro128+ states, categorical and OU sampling (2.7.1's names).

Layout: ``distr``, ``cum_distr`` (E, A, n) float32; ``action_indices`` (E, A, 1) int32; ``actions``,
``ou_states`` (E, A, 1) float32; one RNG state per (env, agent) thread, env = block, agent = thread.
"""

from numba import cuda
from numba.cuda.random import (
    init_xoroshiro128p_states,
    xoroshiro128p_normal_float32,
    xoroshiro128p_uniform_float32,
)

__all__ = ["kEps", "init_random", "search_index", "sample_actions", "sample_ou_process"]

kEps = 1.0e-8


def init_random(rng_states, seed):
    """Seed ``rng_states`` (from ``numba.cuda.random.create_xoroshiro128p_states``) on the host."""
    init_xoroshiro128p_states(rng_states, seed)


@cuda.jit(device=True)
def search_index(cum, p, env_id, agent_id, last):
    """First index i <= last of row (env_id, agent_id) with cum[i] >= p (within kEps), else last."""
    lo = 0
    hi = last
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[env_id, agent_id, mid] + kEps < p:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cuda.jit
def sample_actions(rng_states, distr, action_indices, cum_distr, num_actions, use_argmax):
    env_id = cuda.blockIdx.x
    agent_id = cuda.threadIdx.x
    thread = cuda.grid(1)
    if thread >= rng_states.shape[0] or agent_id >= distr.shape[1]:
        return
    if use_argmax > 0:
        best = 0
        for i in range(1, num_actions):
            if distr[env_id, agent_id, i] > distr[env_id, agent_id, best]:
                best = i
        action_indices[env_id, agent_id, 0] = best
        return
    total = 0.0
    for i in range(num_actions):
        total += distr[env_id, agent_id, i]
        cum_distr[env_id, agent_id, i] = total
    p = xoroshiro128p_uniform_float32(rng_states, thread)
    action_indices[env_id, agent_id, 0] = search_index(cum_distr, p, env_id, agent_id, num_actions - 1)


@cuda.jit
def sample_ou_process(rng_states, distr, actions, ou_states, damping, stddev, scale):
    """actions = distr + scale * ou, with ou <- (1 - damping) * ou + stddev * N(0, 1); scale ~ 0: distr."""
    env_id = cuda.blockIdx.x
    agent_id = cuda.threadIdx.x
    thread = cuda.grid(1)
    if thread >= rng_states.shape[0] or agent_id >= distr.shape[1]:
        return
    if scale < kEps:
        actions[env_id, agent_id, 0] = distr[env_id, agent_id, 0]
        return
    noise = stddev * xoroshiro128p_normal_float32(rng_states, thread)
    ou = (1.0 - damping) * ou_states[env_id, agent_id, 0] + noise
    ou_states[env_id, agent_id, 0] = ou
    actions[env_id, agent_id, 0] = distr[env_id, agent_id, 0] + scale * ou
