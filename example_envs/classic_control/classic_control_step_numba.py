"""What the classic-control Numba steps share (the Numba twin of ``classic_control.cuh``).

Each ``<env>_step_numba.py`` defines ``NumbaClassicControl<Env>EnvStep``: one thread per env on a flat
grid (``ClassicControlEnv.cuda_step_kernel``), the env's transition, then :func:`end_step`. This module
reads no launch constants (it is imported once per process; the env modules are executed per
configuration), so the terminal ``_done_`` value is an argument.
"""

from numba import cuda

__all__ = ["end_step", "clip"]


@cuda.jit(device=True)
def end_step(env, terminated, terminal_done, done_arr, truncated_arr, timestep_arr, episode_length):
    """Episode bookkeeping of one env (base.py: ``ClassicControlEnv.numpy_step``): ``_timestep_`` += 1;
    ``_done_`` = ``terminal_done`` on termination (even at the time limit), else 1 at the time limit;
    ``_truncated_`` = 1 when the time limit ends an episode that did not terminate."""
    t = timestep_arr[env] + 1
    timestep_arr[env] = t
    time_up = t >= episode_length
    done_arr[env] = terminal_done if terminated else (1 if time_up else 0)
    truncated_arr[env] = 1 if (time_up and not terminated) else 0


@cuda.jit(device=True)
def clip(x, lo, hi):
    """``np.clip(x, lo, hi)`` for ``lo <= hi`` (NaN passes through)."""
    return lo if x < lo else (hi if x > hi else x)
