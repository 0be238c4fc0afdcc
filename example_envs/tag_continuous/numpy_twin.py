"""The NumPy twin of ``tag_continuous_step.cu``: one step of Tag (continuous) and the start-state
draw, vectorised over envs and agents, in place on the data store's arrays.

These functions are the specification of the CUDA kernels; each ``__device__`` helper of the
kernel names the function it mirrors (as ``tag_continuous.<name>``: :mod:`example_envs.tag_continuous.tag_continuous`
re-exports them). See ``README.md`` for the observation layout, the reward table and the
tolerances. :class:`~example_envs.tag_continuous.tag_continuous.TagContinuous` calls
:func:`step` from ``numpy_step`` and :func:`start_state` from ``numpy_start_state``.

One step (every env replica, all agents at once):

1. ``_timestep_ += 1``; every agent in the game moves (:func:`move_agents`): acceleration += table
   value, direction turns (wrapped into [0, 2 pi)), speed = clip(speed + acceleration, 0,
   max_speed * skill), acceleration resets to 0 at either speed limit, position advances by
   speed * (cos, sin) and is clipped to [0, L] (an edge hit costs ``edge_hit_penalty``).
2. Observations are written from the moved state (:func:`compute_observations`), before tagging.
3. Each runner in the game is tagged by the nearest tagger closer than ``tagging_distance * L``
   (:func:`find_tags`; ties go to the lower tagger id). Tagger reward = (runners it tagged) *
   ``tag_reward_for_tagger``; a tagged runner gets ``tag_penalty_for_runner`` and leaves the game
   (if ``runner_exits_game_after_tagged``). At t == T runners still in the game and *not tagged on
   this step* get ``end_of_game_reward_for_runner``.
4. ``_done_`` = 1 when t >= T or no runner is left; ``_truncated_`` = 1 when t >= T and runners
   are left (the time limit ended the episode), else 0.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from example_envs.tag_continuous import constants as C
from warp_drive.env import Constants
from warp_drive.vocab.start_state import StartKey, uniform_in
from warp_drive.utils.philox import scale_bits_to_range

__all__ = ["compute_observations", "find_tags", "move_agents", "nearest_agents", "start_state", "step"]

F32 = np.float32
#: Pairs (env-rows x agents x agents) handled at once by the NumPy nearest-neighbour search: its
#: scratch arrays (16 bytes per pair, 2 MiB) stay in cache between its passes.
_PAIR_CHUNK = 1 << 17
_SCRATCH = threading.local()  # per-thread reusable scratch arrays of the neighbour search


def step(
    data: Mapping[str, Any], use_full_observation: bool, num_other_agents_observed: int,
    runner_exits_game_after_tagged: bool,
) -> None:
    """Step every env of ``data`` (the data store's arrays, env axis first) in place: the steps of
    the module docstring. CUDA twins: the kernels of ``tag_continuous_step.cu``."""
    x, y = data["loc_x"], data["loc_y"]
    speed, direction, acc = data["speed"], data["direction"], data["acceleration"]
    still, edge_pen, tag_counts = data["still_in_the_game"], data["edge_hit_reward_penalty"], data["tag_counts"]
    num_runners = _env_vector(data["num_runners"])
    types = data["agent_types"]
    timestep, done = data[Constants.TIMESTEP], data[Constants.DONE]
    episode_length = int(data["episode_length"])
    grid_length, max_speed = F32(data["grid_length"]), F32(data["max_speed"])

    in_game = still != 0  # before this step
    timestep += 1
    move_agents(
        x, y, speed, direction, acc, edge_pen, in_game, data[Constants.ACTIONS],
        data["acceleration_actions"], data["turn_actions"], max_speed * data["skill_levels"],
        grid_length, F32(data["edge_hit_penalty"]),
    )
    obs = data[Constants.OBSERVATIONS]
    written = compute_observations(
        x, y, speed, acc, direction, types, still, timestep, episode_length, grid_length, max_speed,
        use_full_observation, num_other_agents_observed, out=obs,
    )
    if written is not obs:
        obs[...] = written
    tagged, counts = find_tags(x, y, in_game, types, data["tagger_ids"], F32(data["distance_margin_for_reward"]))
    is_tagger = types == C.TAGGER
    tag_counts[...] = np.where(is_tagger, counts, tagged.astype(np.int32))

    last_step = (timestep >= episode_length)[:, None]
    reward = np.where(in_game, edge_pen + data["step_rewards"], F32(0))
    reward = np.where(tagged, reward + F32(data["tag_penalty_for_runner"]), reward)
    reward = np.where(is_tagger, reward + counts.astype(F32) * F32(data["tag_reward_for_tagger"]), reward)
    end_bonus = ~is_tagger & in_game & ~tagged & last_step
    reward = np.where(end_bonus, reward + F32(data["end_of_game_reward_for_runner"]), reward)
    data[Constants.REWARDS][...] = reward

    if runner_exits_game_after_tagged:
        still[tagged] = 0
        num_runners -= tagged.sum(axis=1, dtype=np.int32)
    time_up = timestep >= episode_length
    done[time_up | (num_runners == 0)] = 1
    data[Constants.TRUNCATED][...] = time_up & (num_runners > 0)  # the CUDA twin: TagEndStep


def start_state(
    data: Mapping[str, Any], rows: np.ndarray, key: StartKey, *, draw_x: bool, draw_y: bool,
    draw_direction: bool, episode_length: int, use_full_observation: bool, num_other_agents_observed: int,
) -> None:
    """Start states of the reset envs ``rows``, in place: agent a at x, y = uniform in [0, L) from
    words 0 and 1 of slot a and heading ``START_DIRECTIONS[floor(u * 4)]`` from word 2 (each only
    where ``draw_*``: no starting value was given); the rest of the state is the restored saved
    copy (at rest, in the game). Observations at t = 0. CUDA twin: ``TagContinuousStartState``."""
    words = key.words(np.arange(len(data["agent_types"])))  # (R, N, 4)
    length = F32(data["grid_length"])
    x, y, direction = data["loc_x"], data["loc_y"], data["direction"]
    if draw_x:
        x[rows] = uniform_in(words[..., 0], 0.0, length)
    if draw_y:
        y[rows] = uniform_in(words[..., 1], 0.0, length)
    if draw_direction:
        table = np.asarray(C.START_DIRECTIONS, F32)
        direction[rows] = table[scale_bits_to_range(words[..., 2], len(table))]
    data[Constants.OBSERVATIONS][rows] = compute_observations(
        x[rows], y[rows], data["speed"][rows], data["acceleration"][rows], direction[rows],
        data["agent_types"], data["still_in_the_game"][rows], np.zeros(len(rows), np.int32),
        episode_length, length, F32(data["max_speed"]), use_full_observation,
        num_other_agents_observed,
    )


def _env_vector(arr: np.ndarray) -> np.ndarray:
    """A per-env value stored as (E,) or (E, 1), seen as an (E,) view (writes go through)."""
    view = arr.reshape(arr.shape[0])
    assert np.shares_memory(view, arr)
    return view


def move_agents(
    x: np.ndarray, y: np.ndarray, speed: np.ndarray, direction: np.ndarray, acc: np.ndarray,
    edge_pen: np.ndarray, in_game: np.ndarray, actions: np.ndarray, acc_table: np.ndarray,
    turn_table: np.ndarray, max_speeds: np.ndarray, grid_length: np.float32, edge_hit_penalty: np.float32,
) -> None:
    """Dynamics of one step, in place on (E, N) arrays. CUDA twin: ``TagMoveAgent``.

    Out-of-game agents get speed 0 and direction 0, so they stay where they are.
    """
    a_acc = np.clip(actions[..., 0], 0, len(acc_table) - 1)
    a_turn = np.clip(actions[..., 1], 0, len(turn_table) - 1)
    new_acc = acc + acc_table[a_acc]
    new_dir = np.fmod(direction + turn_table[a_turn], C.TWO_PI)
    new_dir = np.where(new_dir < 0, new_dir + C.TWO_PI, new_dir)
    new_dir = np.where(in_game, new_dir, F32(0))
    new_speed = np.where(in_game, np.minimum(np.maximum(speed + new_acc, F32(0)), max_speeds), F32(0))
    new_acc = np.where((new_speed <= 0) | (new_speed >= max_speeds), F32(0), new_acc)
    # cos/sin in float64, rounded once to float32 (the kernel does the same with sincos(double)).
    cos_dir = np.cos(new_dir.astype(np.float64)).astype(F32)
    sin_dir = np.sin(new_dir.astype(np.float64)).astype(F32)
    new_x = x + new_speed * cos_dir
    new_y = y + new_speed * sin_dir
    hit = (new_x < 0) | (new_x > grid_length) | (new_y < 0) | (new_y > grid_length)
    x[...] = np.clip(new_x, F32(0), grid_length)
    y[...] = np.clip(new_y, F32(0), grid_length)
    speed[...] = new_speed
    direction[...] = new_dir
    acc[...] = new_acc
    edge_pen[...] = np.where(hit, edge_hit_penalty, F32(0))


def compute_observations(
    x: np.ndarray, y: np.ndarray, speed: np.ndarray, acc: np.ndarray, direction: np.ndarray,
    agent_types: np.ndarray, still: np.ndarray, timestep: np.ndarray, episode_length: int,
    grid_length: np.float32, max_speed: np.float32, use_full_observation: bool, k: int,
    out: np.ndarray | None = None,
) -> npt.NDArray[np.float32]:
    """(E, N, 7 M + 1) observations; layout in README.md. CUDA twins: ``TagFullObservationValue``
    (full) and ``TagWritePartialObservation`` (K nearest).

    ``out``: a C-contiguous float32 array of that shape to write into (returned), else a new one.
    """
    num_envs, n = x.shape
    in_self = still != 0
    if use_full_observation:
        slot = np.arange(n - 1)
        others = np.broadcast_to(slot + (slot >= np.arange(n)[:, None]), (num_envs, n, n - 1))
        relative_ok = np.broadcast_to(in_self[:, :, None], others.shape)  # self in game
        present = None  # every slot holds an agent
    else:
        others, present = nearest_agents(x, y, still, k)
        relative_ok = present
    m = others.shape[2]
    shape = (num_envs, n, 7 * m + 1)
    if out is None or out.shape != shape or out.dtype != F32 or not out.flags.c_contiguous:
        out = np.empty(shape, F32)
    flat = np.arange(num_envs)[:, None, None] * n + others  # (E, N, M) index into (E * N) arrays
    not_ok = ~relative_ok
    pos_norm = grid_length * C.SQRT2

    def block(j: int) -> np.ndarray:
        return out[:, :, j * m : (j + 1) * m]

    for j, (feature, scale) in enumerate(
        ((x, pos_norm), (y, pos_norm), (speed, max_speed), (acc, max_speed), (direction, C.TWO_PI))
    ):
        dst = block(j)  # (feature[other] - feature[self]) / scale, 0 where not observed
        np.subtract(np.ravel(feature).take(flat), feature[:, :, None], out=dst)
        np.divide(dst, scale, out=dst)
        np.copyto(dst, F32(0), where=not_ok)
    block(5)[...] = agent_types[others]
    block(6)[...] = np.ravel(still).take(flat)
    if present is not None:
        np.copyto(block(5), F32(0), where=~present)
        np.copyto(block(6), F32(0), where=~present)
    out[:, :, 7 * m] = np.where(in_self, (timestep.astype(F32) / F32(episode_length))[:, None], F32(0))
    return out


def nearest_agents(x: np.ndarray, y: np.ndarray, still: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The K nearest other agents still in the game, for every observer in the game.

    Ordered by squared distance (float32: dx*dx + dy*dy with dx = x_other - x_self), ties by lower
    agent id; CUDA twin: the sorted register list in ``TagWritePartialObservation``.

    Returns:
        ids (E, N, K) int, present (E, N, K) bool (False: empty slot, or the observer is out).
    """
    num_envs, n = x.shape
    x, y = x.astype(F32, copy=False), y.astype(F32, copy=False)
    ids = np.zeros((num_envs, n, k), np.int64)
    # One int64 key per pair: the float32 squared distance's bits (ordered like the distance, which
    # is >= 0, or +inf for pairs that do not count: self, or the other out of the game) above the
    # candidate's id, so a partial selection of the K smallest keys orders by distance, ties by
    # lower id, as a stable sort of the distances would.
    shift = max(1, (n - 1).bit_length())
    candidate = np.arange(n, dtype=np.int64)
    out_of_game = None if still.all() else np.where(still != 0, F32(0), F32(np.inf))  # added to the distance
    chunk = max(1, _PAIR_CHUNK // (n * n))  # bounds memory; one pass for small problems
    for lo in range(0, num_envs, chunk):
        sl = slice(lo, lo + chunk)
        rows = len(range(*sl.indices(num_envs)))
        d2, dy, keys = _scratch_arrays(rows, n)  # reused: no fresh pages to fault in every step
        np.subtract(x[sl, None, :], x[sl, :, None], out=d2)
        np.multiply(d2, d2, out=d2)
        np.subtract(y[sl, None, :], y[sl, :, None], out=dy)
        np.multiply(dy, dy, out=dy)
        np.add(d2, dy, out=d2)
        if out_of_game is not None:
            np.add(d2, out_of_game[sl, None, :], out=d2)
        d2.reshape(rows, n * n)[:, :: n + 1] = np.inf  # self
        np.left_shift(d2.view(np.int32), shift, out=keys, dtype=np.int64)
        np.bitwise_or(keys, candidate, out=keys)
        if k < n:
            keys.partition(k - 1, axis=2)  # in place: the K smallest first, in no order
        nearest = keys[:, :, :k].copy()
        nearest.sort(axis=2)
        ids[sl] = nearest & ((1 << shift) - 1)
    env = np.arange(num_envs)[:, None, None]
    present = (still[env, ids] != 0) & (ids != np.arange(n)[:, None]) & (still[:, :, None] != 0)
    return ids, present


def _scratch_arrays(rows: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, n, n) float32, float32 and int64 scratch arrays, kept per thread for the next call."""
    cached = getattr(_SCRATCH, "arrays", None)
    if cached is None or cached[0].shape[1] != n or cached[0].shape[0] < rows:
        cached = (np.empty((rows, n, n), F32), np.empty((rows, n, n), F32), np.empty((rows, n, n), np.int64))
        _SCRATCH.arrays = cached
    return cached[0][:rows], cached[1][:rows], cached[2][:rows]


def find_tags(
    x: np.ndarray, y: np.ndarray, in_game: np.ndarray, agent_types: np.ndarray,
    tagger_ids: np.ndarray, margin: np.float32,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int32]]:
    """Tags of one step. CUDA twin: ``TagNearestTaggerInReach`` + integer atomics.

    Returns:
        ``(tagged, counts)``, both (E, N). ``tagged`` marks each runner in the game whose nearest
        tagger is closer than ``margin`` (squared distances compared, first minimum = lowest
        tagger id); ``counts`` holds, for each tagger, the number of runners it tagged (0 for
        runners).
    """
    num_envs, n = x.shape
    dx = x[:, None, tagger_ids] - x[:, :, None]
    dy = y[:, None, tagger_ids] - y[:, :, None]
    d2 = dx * dx + dy * dy  # (E, N, num_taggers)
    nearest = np.argmin(d2, axis=2)
    d2_min = np.take_along_axis(d2, nearest[:, :, None], axis=2)[:, :, 0]
    tagged = in_game & (agent_types != C.TAGGER) & (d2_min < margin * margin)
    flat = (np.arange(num_envs)[:, None] * n + tagger_ids[nearest])[tagged]
    counts = np.bincount(flat, minlength=num_envs * n).reshape(num_envs, n).astype(np.int32)
    return tagged, counts
