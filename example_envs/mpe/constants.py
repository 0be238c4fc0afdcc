"""Constants of the MPE envs: the single source of truth for the NumPy twins and the CUDA kernels.

Values are those of the PettingZoo-lineage reference implementation (the ``mpe2`` package,
``mpe2/_mpe_utils/core.py``, ``simple_env.py`` and the two scenarios); each reaches the kernels
through the envs' ``cuda_constants()`` as a ``constexpr`` of the rendered prelude.
"""

from __future__ import annotations

from typing import Final

#: Position dimensions (x, y).
DIM_P: Final[int] = 2
#: Integration step of ``World.step`` (``World.dt``).
DT: Final[float] = 0.1
#: Velocity damping per step (``World.damping``): v <- v * (1 - damping) + force / mass * dt.
DAMPING: Final[float] = 0.25
#: Contact response (``World.contact_force`` and ``World.contact_margin``): a pair of colliding
#: entities at distance d pushes apart with force contact_force * delta / d * k * softplus(-(d - d_min) / k).
CONTACT_FORCE: Final[float] = 100.0
CONTACT_MARGIN: Final[float] = 1e-3
#: Control sensitivity (``SimpleEnv._set_action``: 5.0 where ``agent.accel`` is None, as in both envs).
ACCEL: Final[float] = 5.0
#: Every entity of both envs has mass 1 (``Entity.initial_mass``), so force / mass == force, and no
#: ``max_speed`` (None): velocities are never clipped.
MASS: Final[float] = 1.0

#: Discrete movement actions (``SimpleEnv._set_action``): 0 no-op, 1 left (-x), 2 right (+x),
#: 3 down (-y), 4 up (+y); the unit direction is scaled by ACCEL. Both twins decode an action by
#: the rule "axis x for 1-2, y for 3-4; even: +1, odd: -1" (``physics.move_force``, ``MpeMoveForce``).
NUM_MOVE_ACTIONS: Final[int] = 5

#: Start positions of agents and landmarks: uniform in [START_LOW, START_HIGH) per coordinate.
START_LOW: Final[float] = -1.0
START_HIGH: Final[float] = 1.0

# ----------------------------------------------------------------------------- simple_spread_v3
#: Agent radius (``Agent.size`` in ``simple_spread``); landmarks do not collide.
SPREAD_AGENT_SIZE: Final[float] = 0.15
#: Communication width (``world.dim_c``); every agent is silent, so the channel is all zeros.
SPREAD_DIM_C: Final[int] = 2
SPREAD_DEFAULTS: Final[dict] = {
    "num_agents": 3, "local_ratio": 0.5, "episode_length": 25, "seed": None,
    "fresh_start_states": True, "env_backend": "cpu",
}


def spread_obs_dim(num_agents: int) -> int:
    """[own velocity (2), own position (2), landmarks - own position (2 N), others - own position
    (2 (N - 1)), others' communication (2 (N - 1))]: 18 for N = 3."""
    return 2 * DIM_P + DIM_P * num_agents + (DIM_P + SPREAD_DIM_C) * (num_agents - 1)


def spread_state_dim(num_agents: int) -> int:
    """The env's ``state`` (one row per env, for a centralized critic): every agent's position (2 N),
    every agent's velocity (2 N), every landmark's position (2 N): 18 for N = 3."""
    return 3 * DIM_P * num_agents


# ----------------------------------------------------------------------------- simple_speaker_listener_v4
SPEAKER: Final[int] = 0
LISTENER: Final[int] = 1
LISTENER_NUM_LANDMARKS: Final[int] = 3
#: Communication width: the speaker says one of three words (one-hot).
LISTENER_DIM_C: Final[int] = 3
#: Colour of landmark i (``reset_world``): channel i is GOAL_COLOUR_ON, the others GOAL_COLOUR_OFF
#: ((0.65, 0.15, 0.15), (0.15, 0.65, 0.15), (0.15, 0.15, 0.65)); the speaker observes the goal's colour.
GOAL_COLOUR_ON: Final[float] = 0.65
GOAL_COLOUR_OFF: Final[float] = 0.15
#: The listener's observation: [velocity (2), landmarks - position (2 x 3), the speaker's word (3)].
LISTENER_OBS_DIM: Final[int] = DIM_P + DIM_P * LISTENER_NUM_LANDMARKS + LISTENER_DIM_C
#: The speaker's observation is the goal colour (3 values), padded with zeros to LISTENER_OBS_DIM:
#: the data store holds one observation width for all agents.
SPEAKER_OBS_DIM: Final[int] = 3
SPEAKER_LISTENER_DEFAULTS: Final[dict] = {
    "episode_length": 25, "seed": None, "fresh_start_states": True, "env_backend": "cpu",
}
