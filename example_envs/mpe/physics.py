"""The NumPy twin of ``mpe.cuh``: MPE's world physics, vectorised over envs and agents, in float32.

These functions are the specification of the CUDA helpers of the same role (each names its twin).
They follow ``mpe2/_mpe_utils/core.py`` (``World.step``) operation by operation, in float32 instead
of float64, with every product and sum rounded separately (the kernels use ``wkMulRn`` /
``wkAddRn``, never a fused multiply-add):

1. Action force (``apply_action_force``): ``u = ACCEL * direction(action)`` for a movable agent,
   0 otherwise (no motor noise: ``u_noise`` is None in both envs).
2. Contact forces (``apply_environment_force``), only between agents that collide: agent i adds, for
   every other agent j in ascending order, ``((CONTACT_FORCE * delta) / d) * p`` with
   ``delta = pos_i - pos_j``, ``d = |delta|`` and the soft penetration
   ``p = k * softplus(-(d - d_min) / k)``, ``k = CONTACT_MARGIN``. The softplus is evaluated in
   float64 and rounded once (``exp`` / ``log1p`` of CUDA and NumPy differ in float32).
   Landmarks never collide in these envs.
3. Integration (``integrate_state``): ``pos += vel * dt``; then ``vel = vel * (1 - damping) +
   force * dt`` (mass 1, no speed limit) for movable agents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from example_envs.mpe import constants as C
from warp_drive.env import Constants
from warp_drive.vocab.start_state import StartKey, uniform_in

__all__ = [
    "add_contact_forces", "distance", "end_step", "integrate", "move_force", "penetration", "start_positions",
]

F32 = np.float32
DT = F32(C.DT)
#: 1 - damping, in float32 (exact for 0.25).
VELOCITY_KEEP = F32(1.0 - C.DAMPING)
CONTACT_FORCE = F32(C.CONTACT_FORCE)
#: The margin as the kernels see it (a float32 constant), widened to float64 for the softplus.
CONTACT_MARGIN = float(F32(C.CONTACT_MARGIN))
ACCEL = F32(C.ACCEL)


def move_direction(actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit direction (x, y) of discrete movement actions (any int array), float32. CUDA twin:
    ``MpeMoveForce``. 1: -x, 2: +x, 3: -y, 4: +y, else 0."""
    moving = (actions >= 1) & (actions <= 4)
    sign = np.where(actions % 2 == 0, F32(1.0), F32(-1.0))
    on_x = moving & (actions <= 2)
    on_y = moving & (actions > 2)
    return np.where(on_x, sign, F32(0.0)), np.where(on_y, sign, F32(0.0))


def move_force(actions: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """(..., N, 2) float32 action forces of movement actions (..., N); 0 where an agent is not
    ``movable`` (N,). CUDA twin: ``MpeMoveForce``."""
    dx, dy = move_direction(actions)
    force = np.stack([dx * ACCEL, dy * ACCEL], axis=-1).astype(F32)
    force[..., ~np.asarray(movable, bool), :] = F32(0.0)
    return force


def distance(delta: np.ndarray) -> np.ndarray:
    """``|delta|`` over the last axis (size 2), float32: ``sqrt(dx * dx + dy * dy)``. CUDA twin:
    ``MpeNorm``."""
    return np.sqrt(delta[..., 0] * delta[..., 0] + delta[..., 1] * delta[..., 1]).astype(F32)


def penetration(dist: np.ndarray, dist_min: float) -> np.ndarray:
    """``k * softplus(-(d - d_min) / k)`` in float64, rounded once to float32. CUDA twin:
    ``MpePenetration``. ``dist_min`` is a float32 value (the sum of two float32 radii)."""
    x = -(dist.astype(np.float64) - float(dist_min)) / CONTACT_MARGIN
    with np.errstate(over="ignore", under="ignore"):
        soft = np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
    return (soft * CONTACT_MARGIN).astype(F32)


def add_contact_forces(pos: np.ndarray, force: np.ndarray, dist_min: np.float32) -> None:
    """Add the contact forces between all pairs of agents of (E, N, 2) positions to ``force`` in
    place; agent i sums over j = 0 .. N-1 (j != i) in order. CUDA twin: ``MpeAddContactForces``."""
    n = pos.shape[1]
    for j in range(n):
        delta = (pos - pos[:, j : j + 1, :]).astype(F32)  # (E, N, 2): pos_i - pos_j
        with np.errstate(divide="ignore", invalid="ignore"):
            d = distance(delta)
            pen = penetration(d, dist_min)
            pair = ((CONTACT_FORCE * delta) / d[..., None]) * pen[..., None]
        others = np.arange(n) != j
        force[:, others, :] += pair[:, others, :]


def integrate(pos: np.ndarray, vel: np.ndarray, force: np.ndarray, movable: np.ndarray) -> None:
    """One integration step of (E, N, 2) positions and velocities, in place (mass 1, no speed
    limit); agents that are not ``movable`` (N,) keep their state. CUDA twin: ``MpeIntegrate``."""
    m = np.asarray(movable, bool)
    pos[:, m] += vel[:, m] * DT
    vel[:, m] = vel[:, m] * VELOCITY_KEEP + force[:, m] * DT


def end_step(data: Mapping[str, Any]) -> None:
    """``_timestep_ += 1``; ``_done_`` = ``_truncated_`` = 1 at the time limit, else 0 (MPE episodes
    end only by time: ``mpe2``'s truncation at ``max_cycles``). CUDA twin: ``MpeEndStep``."""
    timestep = data[Constants.TIMESTEP]
    timestep += 1
    time_up = (timestep >= int(data["episode_length"])).astype(np.int32)
    data[Constants.DONE][...] = time_up
    data[Constants.TRUNCATED][...] = time_up


def start_positions(key: StartKey, num_agents: int, num_landmarks: int) -> tuple[np.ndarray, np.ndarray]:
    """Start positions of R resetting envs: agent a at (uniform(w0), uniform(w1)) of slot a,
    landmark l the same from slot N + l, each coordinate in [START_LOW, START_HIGH). Returns
    (R, N, 2) and (R, L, 2) float32. CUDA twin: ``MpeDrawStartPositions``."""
    words = key.words(np.arange(num_agents + num_landmarks))  # (R, N + L, 4)
    xy = uniform_in(words[..., :2], C.START_LOW, C.START_HIGH)
    return xy[:, :num_agents].copy(), xy[:, num_agents:].copy()
