"""MPE ``simple_speaker_listener_v4``: a speaker who sees the goal tells a listener who moves.

Agent 0, the speaker, does not move; it observes the colour of the goal landmark and says one of
three words (``Discrete(3)``). Agent 1, the listener, observes its velocity, the landmarks and the
word, and moves (``Discrete(5)``). Both get ``-|listener - goal|^2``. Dual mode:
:meth:`MpeSimpleSpeakerListenerEnv.numpy_step` (:class:`~example_envs.mpe.base.MpeEnv`'s skeleton
with this module's word, rewards and observations) on the CPU, ``simple_speaker_listener_step.cu``
on the GPU; matches ``mpe2.simple_speaker_listener_v4`` step for step. The data store holds one
observation width for both agents: the speaker's 3 values are padded with zeros to the listener's
11. See ``../README.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs import reject_unknown_kwargs
from example_envs.mpe import constants as C
from example_envs.mpe.base import WORLD_SCHEMA, WORLD_STATE, MpeEnv
from warp_drive.env import ArraySpec, Constants
from warp_drive.vocab.start_state import StartKey
from warp_drive.utils.philox import scale_bits_to_range

F32 = np.float32
#: The speaker's scenario state: the goal landmark (E, 1) and its last word, one-hot (E, 3).
EXTRA_STATE = ("goal", "speaker_comm")


def goal_colours(goal: np.ndarray) -> np.ndarray:
    """(E, 3) float32 colour of each env's goal landmark (E,). CUDA twin: in
    ``MpeSpeakerListenerObserve``."""
    on = np.arange(C.LISTENER_NUM_LANDMARKS)[None, :] == goal[:, None]
    return np.where(on, F32(C.GOAL_COLOUR_ON), F32(C.GOAL_COLOUR_OFF)).astype(F32)


def speaker_listener_observations(agent_pos: np.ndarray, agent_vel: np.ndarray, landmark_pos: np.ndarray,
                                  goal: np.ndarray, speaker_comm: np.ndarray) -> np.ndarray:
    """(E, 2, 11) float32: the speaker's row = [goal colour (3), zeros (8)]; the listener's =
    [velocity (2), landmark_l - position (l in order, 6), the speaker's word (3)]. CUDA twin:
    ``MpeSpeakerListenerObserve``."""
    e = agent_pos.shape[0]
    obs = np.zeros((e, 2, C.LISTENER_OBS_DIM), F32)
    obs[:, C.SPEAKER, : C.SPEAKER_OBS_DIM] = goal_colours(goal)
    rel = (landmark_pos - agent_pos[:, C.LISTENER : C.LISTENER + 1, :]).reshape(e, -1)
    obs[:, C.LISTENER] = np.concatenate([agent_vel[:, C.LISTENER], rel, speaker_comm], axis=-1)
    return obs


def speaker_listener_rewards(agent_pos: np.ndarray, landmark_pos: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """(E, 2) float32: both agents get ``-(dx * dx + dy * dy)``, (dx, dy) = listener - goal
    landmark. CUDA twin: ``MpeSpeakerListenerReward``."""
    target = landmark_pos[np.arange(len(goal)), goal]
    delta = agent_pos[:, C.LISTENER] - target
    reward = -(delta[:, 0] * delta[:, 0] + delta[:, 1] * delta[:, 1])
    return np.repeat(reward[:, None], 2, axis=1).astype(F32)


class MpeSimpleSpeakerListenerEnv(MpeEnv):
    """``simple_speaker_listener_v4`` with discrete actions (defaults:
    ``constants.SPEAKER_LISTENER_DEFAULTS``).

    Args:
        episode_length: steps per episode (``mpe2``'s ``max_cycles``), ended as a truncation.
        seed: seed of the host ``reset()`` (``mpe2``'s ``reset(seed=...)`` goal and layout) and of
            the device's start-state draws.
        fresh_start_states: True (default): every replica and every episode draws its own goal and
            layout on the device; False: every reset restores the host ``reset()``'s.
        env_backend: "cpu" or "pycuda" (overwritten by the EnvWrapper).

    Raises:
        ConfigError: an argument is unknown, has the wrong type or is out of range.
    """

    name = "MpeSimpleSpeakerListener"
    cuda_source = Path(__file__).with_name("simple_speaker_listener_step.cu")
    array_schema = {
        **WORLD_SCHEMA,
        "goal": ArraySpec((1,), "int32"),
        "speaker_comm": ArraySpec((C.LISTENER_DIM_C,)),
    }
    extra_state_names = EXTRA_STATE
    step_kernel_args = (
        *WORLD_STATE, *EXTRA_STATE, Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS, Constants.DONE,
        Constants.TRUNCATED, Constants.TIMESTEP, ("episode_length", "meta"),
    )
    start_state_args = (*WORLD_STATE, *EXTRA_STATE, Constants.OBSERVATIONS)

    def __init__(
        self,
        episode_length: int = 25,
        seed: int | None = None,
        fresh_start_states: bool = True,
        env_backend: str = "cpu",
        **unknown: Any,
    ) -> None:
        reject_unknown_kwargs(self.name, unknown, C.SPEAKER_LISTENER_DEFAULTS)
        self.num_agents = 2
        self.num_landmarks = C.LISTENER_NUM_LANDMARKS
        self.movable = np.array([False, True])
        self.obs_dim = C.LISTENER_OBS_DIM
        self.action_space = {
            C.SPEAKER: spaces.Discrete(C.LISTENER_DIM_C),
            C.LISTENER: spaces.Discrete(C.NUM_MOVE_ACTIONS),
        }
        self._init_common(episode_length, seed, fresh_start_states, env_backend)

    def agent_groups(self) -> dict[str, list[int]]:
        """``{"speaker": [0], "listener": [1]}``: a run config's policies name these roles."""
        return {"speaker": [C.SPEAKER], "listener": [C.LISTENER]}

    def cuda_constants(self) -> dict[str, Any]:
        """The shared constants and the scenario's."""
        return {
            **super().cuda_constants(),
            "kSpeaker": C.SPEAKER,
            "kListener": C.LISTENER,
            "kDimC": C.LISTENER_DIM_C,
            "kSpeakerObsDim": C.SPEAKER_OBS_DIM,
            "kGoalColourOn": C.GOAL_COLOUR_ON,
            "kGoalColourOff": C.GOAL_COLOUR_OFF,
        }

    def extra_state(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The goal (``rng.integers(3)``, drawn first, as ``reset_world`` does) and a silent word."""
        goal = np.array([rng.integers(C.LISTENER_NUM_LANDMARKS)], np.int32)
        return {"goal": goal, "speaker_comm": np.zeros(C.LISTENER_DIM_C, F32)}

    def draw_extra_start(self, state: Mapping[str, np.ndarray], rows: np.ndarray, key: StartKey) -> None:
        """The goal of each reset env: word 2 of slot 0, scaled to [0, 3)."""
        state["goal"][rows, 0] = scale_bits_to_range(key.words(0)[:, 2], C.LISTENER_NUM_LANDMARKS)

    def apply_actions(self, state: Mapping[str, np.ndarray], actions: np.ndarray) -> np.ndarray:
        """The speaker's action is its word (one-hot into ``speaker_comm``); the listener's moves it."""
        word = actions[:, C.SPEAKER]
        state["speaker_comm"][...] = np.arange(C.LISTENER_DIM_C)[None, :] == word[:, None]
        return actions

    def compute_rewards(self, state: Mapping[str, np.ndarray]) -> np.ndarray:
        """(E, 2) rewards (:func:`speaker_listener_rewards`)."""
        return speaker_listener_rewards(state["agent_pos"], state["landmark_pos"], state["goal"][:, 0])

    def observe(self, state: Mapping[str, np.ndarray]) -> np.ndarray:
        """(E, 2, 11) observations (:func:`speaker_listener_observations`)."""
        return speaker_listener_observations(state["agent_pos"], state["agent_vel"], state["landmark_pos"],
                                             state["goal"][:, 0], state["speaker_comm"])
