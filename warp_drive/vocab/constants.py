"""Reserved data names: the one place they are spelled out."""

from __future__ import annotations


class Constants:
    """Names of the arrays the framework itself creates or reads."""

    OBSERVATIONS = "observations"
    ACTIONS = "sampled_actions"
    REWARDS = "rewards"
    DONE_FLAGS = "done_flags"
    PROCESSED_OBSERVATIONS = "processed_observations"
    #: ``(E, N, L)`` int32 or float32, optional: per agent, nonzero where an action is legal (L: the sum of the
    #: policy's categorical head sizes, heads concatenated); declared in the env's data feed, written by its step.
    #: A policy's categorical heads then never sample an illegal action (warp_drive/training/agent_masks.py)
    ACTION_MASK = "action_mask"
    #: ``(E, N)`` int32 or float32, optional: nonzero while an agent is in the game, 0 once it left (dead,
    #: finished); declared in the env's data feed, written by its step. Samples of inactive agents are left out of
    #: the losses, the advantage statistics and the metrics (warp_drive/training/agent_masks.py)
    ACTIVE = "active"
    #: ``(E, *S)`` float32, optional: the env's global state per env, declared in its data feed; what a critic sees
    #: with ``critic_input: global_state`` (warp_drive/training/network_inputs.py)
    STATE = "state"

    DONE = "_done_"
    TIMESTEP = "_timestep_"
    LOG_MASK = "_log_mask_"
    #: (E,) int32, written by the step of an env whose class sets ``writes_truncation``: 1 where
    #: the episode ended at the time limit without terminating, else 0 (read together with DONE).
    TRUNCATED = "_truncated_"
    #: (E,) int32, the env's episode index: how many times the env was reset (0 in the episode of the host
    #: reset, then + 1 at every reset; the reset pools' and start states' draw counter). Created when the env
    #: binds it in a kernel's arguments; the third Philox counter word that makes a step's draws differ
    #: between episodes (docs/adding_an_env.md, "per-thread random states").
    EPISODE = "_episode_"

    AT_RESET_SUFFIX = "_at_reset"
    LOG_SUFFIX = "_for_log"

    RESERVED = (DONE, TIMESTEP, LOG_MASK, TRUNCATED, EPISODE)
