"""Evaluation: roll out whole episodes with an engine's current policies and report their returns.

Every function plays inside :meth:`Engine.evaluation_episodes
<warp_drive.training.engine.Engine.evaluation_episodes>`: the envs are force-reset before and
after, so training continues from fresh episodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from warp_drive.utils.constants import Constants


@torch.no_grad()
def evaluate(engine: Any, deterministic: bool = True, num_episodes: int = 1) -> dict[str, dict[str, np.ndarray]]:
    """Run until every env finished ``num_episodes`` episodes (at most ``num_episodes * T`` steps).

    Greedy (argmax / Gaussian mean) actions when ``deterministic``, sampled otherwise. The envs
    are force-reset before and after, so training can continue from fresh episodes.
    """
    w, policies, dev = engine.env_wrapper, engine.policies, engine.device
    dm = w.cuda_data_manager
    E, T = w.n_envs, w.episode_length
    returns = {tag: torch.zeros((num_episodes, E), device=dev) for tag in policies}
    lengths = torch.zeros((num_episodes, E), device=dev)
    running = {tag: torch.zeros((E, p.num_agents), device=dev) for tag, p in policies.items()}
    running_len = torch.zeros(E, device=dev)
    finished = torch.zeros(E, dtype=torch.long, device=dev)
    rewards_all = dm.data_on_device_via_torch(Constants.REWARDS)
    envs = torch.arange(E, device=dev)
    with engine.evaluation_episodes(deterministic) as rollout:
        for _ in range(num_episodes * T):
            rollout.sample(None)
            w.step_all_envs()
            done = dm.data_on_device_via_torch(Constants.DONE) > 0
            active = finished < num_episodes
            slot = finished.clamp(max=num_episodes - 1)
            record = done & active
            for tag, p in policies.items():
                running[tag] += p.select(rewards_all)
                mean = running[tag].mean(1)
                returns[tag][slot, envs] += torch.where(record, mean, 0.0)
                running[tag].mul_((~done).float()[:, None])
            running_len += 1
            lengths[slot, envs] += torch.where(record, running_len, 0.0)
            running_len.mul_((~done).float())
            finished += record.long()
            rollout.end_step(None)
    done_mask = (torch.arange(num_episodes, device=dev)[:, None] < finished[None, :]).cpu().numpy()
    out = {}
    for tag in policies:
        out[tag] = {"episode_return": returns[tag].cpu().numpy()[done_mask], "episode_length": lengths.cpu().numpy()[done_mask]}
    return out


# ----------------------------------------------------------------------------- 2.7.1 API helpers
#: 2.7.1 ``sample_params`` that only its DDPG exploration noise understood.
_OU_PARAMS = ("damping", "stddev", "scale")


def greedy_from_sample_params(sample_params: dict[str, Any], default: bool) -> bool:
    """The sampling mode asked for by 2.7.1's ``**sample_params`` (``use_argmax=True``: greedy).

    Raises:
        ConfigError: OU-noise parameters (2.7.1's DDPG exploration) or any other unknown name.
    """
    from warp_drive.errors import ConfigError

    params = dict(sample_params)
    greedy = bool(params.pop("use_argmax", default))
    for name in params:
        if name in _OU_PARAMS:
            raise ConfigError(f"sample parameter {name}={params[name]!r} drives 2.7.1's OU exploration noise (DDPG), "
                              "which does not exist here; pass only use_argmax=True/False")
        raise ConfigError(f"unknown sample parameter {name}={params[name]!r}; the only one is use_argmax=True/False")
    return greedy


@torch.no_grad()
def evaluate_per_agent(engine: Any, greedy: bool) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One episode per env: per-agent reward sums and episode lengths, per policy (2.7.1's layout).

    Every step's reward counts, the one that ends the episode included, and an env stops counting
    once its episode ended (2.7.1 dropped the last reward and indexed the env axis with agent ids).

    Returns:
        ``({tag: (E, A_p) float32}, {tag: (E,) int32})``.
    """
    w, policies, dev = engine.env_wrapper, engine.policies, engine.device
    dm = w.cuda_data_manager
    E, T = w.n_envs, w.episode_length
    sums = {tag: torch.zeros((E, p.num_agents), device=dev) for tag, p in policies.items()}
    steps = torch.zeros(E, dtype=torch.int32, device=dev)
    active = torch.ones(E, dtype=torch.bool, device=dev)
    rewards = dm.data_on_device_via_torch(Constants.REWARDS)
    with engine.evaluation_episodes(greedy) as rollout:
        for t in range(T):
            rollout.sample(None)
            w.step_all_envs()
            done = dm.data_on_device_via_torch(Constants.DONE) > 0
            for tag, p in policies.items():
                sums[tag] += torch.where(active[:, None], p.select(rewards), 0.0)
            steps += active.int()
            active &= ~done
            rollout.end_step(None)
            if t % 32 == 31 and not bool(active.any()):  # one host sync every 32 steps
                break
    lengths = steps.cpu().numpy()
    return {tag: s.cpu().numpy() for tag, s in sums.items()}, {tag: lengths.copy() for tag in policies}


@torch.no_grad()
def fetch_episode_states(
    engine: Any,
    list_of_states: list[str] | None = None,
    env_id: int = 0,
    include_rewards_actions: bool = False,
    include_probabilities: bool = False,
    policy: str = "",
    greedy: bool = False,
) -> Any:
    """One episode of env ``env_id`` with the current policies (2.7.1's ``fetch_episode_states``).

    Everything is recorded on the device and copied to the host once, at the end.

    Returns:
        ``states`` = ``{name: (T + 1, *shape) float64}``: row t is the state before step t, the row
        after the final state and later rows are NaN; with ``include_rewards_actions`` also
        ``actions`` (T, *action_shape) and ``rewards`` (T, *reward_shape) float32 (a_t and
        r_{t+1}, zero after the episode), and with ``include_probabilities`` a dict
        ``{t: {tag: [per-head probabilities of env_id's agents]}}`` (Gaussian heads: mean and std).
        The tuple is ``(states, actions, rewards[, probabilities])``, or ``(states, probabilities)``
        when only probabilities are asked for (2.7.1 silently dropped them then).
        ``policy`` restricts actions, rewards and probabilities to that policy's agents.
    """
    from warp_drive.errors import ConfigError, DataNotFoundError

    w, policies = engine.env_wrapper, engine.policies
    dm = w.cuda_data_manager
    E, T = w.n_envs, w.episode_length
    if isinstance(env_id, bool) or not isinstance(env_id, (int, np.integer)) or not 0 <= env_id < E:
        raise ConfigError(f"env_id={env_id!r} is not an env index; use 0 <= env_id < {E}")
    names = [] if list_of_states is None else list_of_states
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"list_of_states={list_of_states!r} must be a list of data names, e.g. ['loc_x', 'loc_y']")
    for name in names:
        if not dm.is_data_on_device(name):
            raise DataNotFoundError(f"'{name}' is not on the device; pushed: {', '.join(sorted(dm.names()))}")
        shape = dm.get_shape(name)
        if not shape or shape[0] != E:
            raise ConfigError(f"'{name}' has shape {tuple(shape)}, without the env axis ({E} envs) first; "
                              "fetch only per-env arrays")
    if policy and policy not in policies:
        raise ConfigError(f"policy={policy!r} is not a policy tag; tags: {', '.join(policies)}")
    tags = [policy] if policy else list(policies)
    pick = policies[policy].select if policy else (lambda x: x)
    views = {n: dm.data_on_device_via_torch(n) for n in names}
    actions_all = dm.data_on_device_via_torch(Constants.ACTIONS)
    rewards_all = dm.data_on_device_via_torch(Constants.REWARDS)
    done_all = dm.data_on_device_via_torch(Constants.DONE)
    states = {n: torch.empty((T + 1, *v.shape[1:]), dtype=v.dtype, device=v.device) for n, v in views.items()}
    actions = torch.zeros((T, *pick(actions_all).shape[1:]), dtype=actions_all.dtype, device=actions_all.device)
    rewards = torch.zeros((T, *pick(rewards_all).shape[1:]), dtype=torch.float32, device=rewards_all.device)
    done = torch.zeros(T, dtype=torch.bool, device=done_all.device)
    probs: dict[str, list[list[torch.Tensor]]] = {tag: [] for tag in tags}
    with engine.evaluation_episodes(greedy) as rollout:
        for n, v in views.items():
            states[n][0].copy_(v[env_id])
        for t in range(T):
            if include_probabilities:
                for tag in tags:
                    heads = rollout.heads[tag]
                    flat = [x for h in heads for x in (h if isinstance(h, tuple) else (h,))]
                    probs[tag].append([x[env_id].clone() for x in flat])
            rollout.sample(None)
            w.step_all_envs()
            for n, v in views.items():  # the state after step t, before any reset
                states[n][t + 1].copy_(v[env_id])
            actions[t].copy_(pick(actions_all)[env_id])
            rewards[t].copy_(pick(rewards_all)[env_id])
            done[t] = done_all[env_id] > 0
            rollout.end_step(None)
    ended = torch.nonzero(done).flatten()
    last = int(ended[0]) if len(ended) else T - 1  # the step that ended env_id's first episode
    out_states = {}
    for n, rec in states.items():
        host = np.full(rec.shape, np.nan, dtype=np.float64)
        host[: last + 2] = rec[: last + 2].cpu().numpy()
        out_states[n] = host
    if not (include_rewards_actions or include_probabilities):
        return out_states
    result: list[Any] = [out_states]
    if include_rewards_actions:
        actions[last + 1:] = 0
        rewards[last + 1:] = 0
        result += [actions.cpu().numpy(), rewards.cpu().numpy()]
    if include_probabilities:
        result.append({t: {tag: [x.cpu().numpy() for x in probs[tag][t]] for tag in tags} for t in range(last + 1)})
    return tuple(result)
