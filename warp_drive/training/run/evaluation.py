"""Evaluation: roll out whole episodes with an engine's current policies and report their returns.

:func:`evaluate` (``Trainer.evaluate``) reports each policy's mean episode return and that of the
uniform-random policy with 95% Student t intervals; :func:`compare_with_random` and
:func:`~warp_drive.training.run.comparison.comparison_table` give the end-of-run learning summary.
Every function plays inside :meth:`~warp_drive.training.engine.Engine.evaluation_episodes` (envs
force-reset before and after).

The comparison with random is *paired* (common random numbers): every play of one evaluation
starts from the same episode counters (:func:`common_start_states`), so episode k of env e starts
from the same start state in each play (start states and reset-pool draws are keyed by the reset
seed, the env and its episode count), and uniformly random policies draw their actions keyed by
(env, episode, step) (:class:`~warp_drive.training.run.random_policy.EpisodeKeyedUniform`), so the
random opponents act alike too. "Better than random" is then the 95% Student t interval of the
mean per-episode difference (trained − random) lying above 0.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError, DataNotFoundError, UsageError
from warp_drive.training.run.comparison import Comparison, comparison_table  # noqa: F401 (the summary's names, here too)
from warp_drive.training.run.statistics import Interval, mean_interval

logger = logging.getLogger(__name__)

#: Episodes, in total over the env replicas, that an evaluation plays when the caller names none.
DEFAULT_EVAL_EPISODES = 100
#: Seed of the uniform-random policy's keyed draws (the same in every play: the baseline's draws do not
#: depend on, or disturb, any random stream of the run; each policy draws from its own stream).
RANDOM_POLICY_SEED = 0


def episodes_per_env(total: int, num_envs: int) -> int:
    """Episodes each of ``num_envs`` replicas plays so that at least ``total`` are played.

    Raises:
        ConfigError: ``total`` is not an integer >= 1.
    """
    if isinstance(total, bool) or not isinstance(total, (int, np.integer)) or total < 1:
        raise ConfigError(f"evaluation episodes = {total!r}; play at least 1 episode (an integer >= 1)")
    return math.ceil(int(total) / num_envs)


def _playing(engine: Any) -> tuple[Any, dict[str, Any], Any, int, int]:
    """The engine's env wrapper, policies, data manager, number of envs and episode length."""
    w = engine.env_wrapper
    return w, engine.policies, w.cuda_data_manager, w.n_envs, w.episode_length


@contextlib.contextmanager
def fresh_start_states(wrapper: Any) -> Iterator[bool]:
    """Every reset draws a new start state per env replica and episode while inside, where the
    env supports it (``wrapper.supports_fresh_start_states``); the previous setting comes back on
    exit. Yields whether fresh start states are on."""
    if not getattr(wrapper, "supports_fresh_start_states", False):
        yield False
        return
    saved = getattr(wrapper, "fresh_start_states", False)
    wrapper.fresh_start_states = True
    try:
        yield True
    finally:
        wrapper.fresh_start_states = saved


@contextlib.contextmanager
def common_start_states(wrapper: Any) -> Iterator[Callable[[], None]]:
    """Yields ``rewind``: called before each play, it sets every env's episode counter back to its value
    on entry, so the plays start their k-th episode of each env from the same start state (and the same
    reset-pool draw). On exit the counters move past every play's (no later episode reuses a start).
    A wrapper without a device-side resetter (gym-style cpu passthrough): ``rewind`` does nothing."""
    resetter = getattr(wrapper, "env_resetter", None)
    if resetter is None:
        yield lambda: None
        return
    if getattr(wrapper, "reset_on_host", False):  # the first reset zeroes the counters: do it before the snapshot
        wrapper.reset_all_envs()
    start = resetter.state_dict()
    ends: list[torch.Tensor] = []

    def rewind() -> None:
        ends.append(resetter.state_dict()["pool_counters"])
        resetter.load_state_dict(start)

    try:
        yield rewind
    finally:
        ends.append(resetter.state_dict()["pool_counters"])
        if start["pool_counters"] is not None:
            resetter.load_state_dict({"pool_seed": start["pool_seed"],
                                      "pool_counters": torch.stack(ends).amax(0)})


@torch.no_grad()
def play_episodes(engine: Any, per_env: int, greedy: bool = True, random_tags: Sequence[str] = (),
                  fresh_starts: bool = True) -> dict[str, dict[str, np.ndarray]]:
    """Every env replica plays its next ``per_env`` episodes (from fresh start states where the env
    has them, unless not ``fresh_starts``: then as the wrapper is set); the policies in
    ``random_tags`` act uniformly at random, the others with their models (greedy, or sampled when
    not ``greedy``). A random policy's draws are keyed by (its index among the policies, env,
    episode k of that env in this play, step within the episode), the same in every play.

    Returns:
        ``{tag: {"episode_return": (E * per_env,), "episode_length": (E * per_env,),
        "episode_key": (E * per_env,)}}``: per episode, the return summed over steps and averaged
        over the policy's agents, its length, and ``k * E + e`` (episode k of env e: the pairing key).
    """
    from warp_drive.training.run.random_policy import EpisodeKeyedUniform, UniformRandomActions

    w, policies, dm, E, T = _playing(engine)
    rewards_all = dm.data_on_device_via_torch(Constants.REWARDS)
    dev = rewards_all.device
    streams = {tag: i for i, tag in enumerate(policies)}
    randoms = [UniformRandomActions(w, policies[tag], EpisodeKeyedUniform(RANDOM_POLICY_SEED, streams[tag]))
               for tag in random_tags]
    returns = {tag: torch.zeros((per_env, E), device=dev) for tag in policies}
    lengths = torch.zeros((per_env, E), device=dev)
    running = {tag: torch.zeros((E, p.num_agents), device=dev) for tag, p in policies.items()}
    running_len = torch.zeros(E, device=dev)
    finished = torch.zeros(E, dtype=torch.long, device=dev)
    envs = torch.arange(E, device=dev)
    starts = fresh_start_states(w) if fresh_starts else contextlib.nullcontext(False)
    with engine.evaluation_episodes(greedy) as rollout, starts as fresh:
        if fresh:  # the start states of this evaluation's first episodes are fresh too
            w.reset_all_envs()
            rollout.begin()
        for step in range(per_env * T):
            rollout.sample(None)
            for r in randoms:
                r.write(finished, running_len)
            w.step_all_envs()
            done = dm.data_on_device_via_torch(Constants.DONE) > 0
            slot = finished.clamp(max=per_env - 1)
            record = done & (finished < per_env)
            for tag, p in policies.items():
                running[tag] += p.select(rewards_all)
                returns[tag][slot, envs] += torch.where(record, running[tag].mean(1), 0.0)
                running[tag].mul_((~done).float()[:, None])
            running_len += 1
            lengths[slot, envs] += torch.where(record, running_len, 0.0)
            running_len.mul_((~done).float())
            finished += record.long()
            rollout.end_step(None)
            if step % 32 == 31 and bool((finished >= per_env).all()):  # one host sync every 32 steps
                break
    done_mask = (torch.arange(per_env, device=dev)[:, None] < finished[None, :]).cpu().numpy()
    length = lengths.cpu().numpy()[done_mask]
    key = np.arange(per_env * E).reshape(per_env, E)[done_mask]
    return {tag: {"episode_return": returns[tag].cpu().numpy()[done_mask], "episode_length": length.copy(),
                  "episode_key": key.copy()} for tag in policies}


def paired_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> Interval:
    """The mean per-episode return difference ``a − b`` with its 95% Student t interval, over the
    episodes both plays finished, paired by their ``episode_key`` (the same start state)."""
    _, ia, ib = np.intersect1d(a["episode_key"], b["episode_key"], assume_unique=True, return_indices=True)
    return mean_interval(np.asarray(a["episode_return"])[ia] - np.asarray(b["episode_return"])[ib])


@torch.no_grad()
def evaluate(engine: Any, deterministic: bool = True, num_episodes: int | None = None, *,
             total_episodes: int = DEFAULT_EVAL_EPISODES, random_baseline: bool = True,
             fresh_starts: bool = True, start_weights: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Play episodes from fresh start states with the current policies and with the uniform-random
    policy, every play over the same start states (paired: :func:`common_start_states`); report each
    with its 95% Student t interval over episodes and the paired per-episode differences.

    Args:
        deterministic: greedy actions (argmax / Gaussian mean) for the trained policies, else sampled.
        num_episodes: episodes per env replica; default: enough for ``total_episodes`` in total.
        total_episodes: episodes in total (rounded up to a multiple of the env replicas).
        random_baseline: also play the uniform-random baseline over the same episodes: every
            policy uniformly random and, with several policies, each policy with its model against
            uniformly random other policies (the same opponents, drawing the same actions, as in
            the baseline) and uniformly random against the trained other policies.
        fresh_starts: turn the wrapper's ``fresh_start_states`` on for these episodes (where the
            env supports it); False plays the start states as the wrapper is set (2.7.1's: the
            saved start state).
        start_weights: ``{tag: {role: state_dict}}``, the weights a run started from
            (:mod:`~warp_drive.training.run.start_weights`); with ``random_baseline``, each named policy
            whose weights differ from them also plays them over the same episodes, against the same
            opponents as its verdict's play (uniformly random other policies; alone with one policy),
            and its own weights come back after.

    Returns:
        ``{tag: {...}}`` with ``episode_return``, ``episode_length`` and ``episode_key`` (arrays, one
        entry per episode, return averaged over the policy's agents; every policy playing its model),
        ``num_episodes`` (int), ``return_interval`` (:class:`~warp_drive.training.run.statistics.Interval`)
        and ``fresh_start_states`` (whether the episodes started from fresh start states);
        with ``random_baseline`` also ``random_episode_return`` and ``random_return_interval``
        (every policy uniformly random) and ``difference_interval``: the paired mean difference,
        episode by episode, of the policy playing its model (against uniformly random other policies
        where there are several) minus the all-random play; with several policies also
        ``episode_return_vs_random_others`` and ``return_interval_vs_random_others``,
        ``random_episode_return_vs_trained_others`` and ``random_return_interval_vs_trained_others``
        (this policy uniformly random, the others playing their models) and
        ``difference_interval_vs_trained_others`` (the all-model play minus that one). With
        ``start_weights``, each policy that learned also has ``start_episode_return``,
        ``start_return_interval`` (its start weights' play) and ``learned_interval``: the paired
        difference, episode by episode, of its verdict's play (``difference_interval``'s first term)
        minus that one.

    Raises:
        ConfigError: ``num_episodes`` or ``total_episodes`` below 1 (or not an integer).
    """
    w = engine.env_wrapper
    per_env = episodes_per_env(total_episodes, w.n_envs) if num_episodes is None else episodes_per_env(num_episodes, 1)
    with common_start_states(w) as rewind:
        def play(random_tags: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
            rewind()
            return play_episodes(engine, per_env, deterministic, random_tags, fresh_starts)

        game = play(())
        out: dict[str, dict[str, Any]] = {tag: dict(res) for tag, res in game.items()}
        tags = list(out)
        for res in out.values():
            res["num_episodes"] = len(res["episode_return"])
            res["return_interval"] = mean_interval(res["episode_return"])
            res["fresh_start_states"] = fresh_starts and bool(getattr(w, "supports_fresh_start_states", False))
        if not random_baseline:
            return out
        randoms = play(tags)
        _add(out, "random_episode_return", "random_return_interval", randoms)
        if len(tags) == 1:
            out[tags[0]]["difference_interval"] = paired_difference(game[tags[0]], randoms[tags[0]])
            _play_start(engine, out, tags[0], game[tags[0]], start_weights, lambda: play(()))
            return out
        solos = {}
        for tag in tags:
            solos[tag] = solo = play([t for t in tags if t != tag])
            _add(out, "episode_return_vs_random_others", "return_interval_vs_random_others", {tag: solo[tag]})
            out[tag]["difference_interval"] = paired_difference(solo[tag], randoms[tag])
            alone = play([tag])
            _add(out, "random_episode_return_vs_trained_others", "random_return_interval_vs_trained_others",
                 {tag: alone[tag]})
            out[tag]["difference_interval_vs_trained_others"] = paired_difference(game[tag], alone[tag])
        for tag in tags:  # last: the plays above draw the same random numbers as without start weights
            others = [t for t in tags if t != tag]
            _play_start(engine, out, tag, solos[tag][tag], start_weights, lambda others=others: play(others))
    return out


def _play_start(engine: Any, out: dict[str, dict[str, Any]], tag: str, final: dict[str, np.ndarray],
                start_weights: Mapping[str, Any] | None, play: Callable[[], dict[str, dict[str, np.ndarray]]]) -> None:
    """``tag``'s start weights over the episodes (and opponents) of ``final``, its verdict's play: the
    ``start_*`` and ``learned_interval`` entries of :func:`evaluate`; nothing without start weights or
    where the policy still holds them."""
    from warp_drive.training.run.start_weights import playing, same_as_current

    policies = _playing(engine)[1]
    if not start_weights or tag not in start_weights or same_as_current(policies[tag], start_weights[tag]):
        return
    with playing(policies, {tag: start_weights[tag]}):
        start = play()[tag]
    _add(out, "start_episode_return", "start_return_interval", {tag: start})
    out[tag]["learned_interval"] = paired_difference(final, start)


def _add(out: dict[str, dict[str, Any]], returns_key: str, interval_key: str, played: dict[str, dict[str, np.ndarray]]) -> None:
    for tag, res in played.items():
        out[tag][returns_key] = res["episode_return"]
        out[tag][interval_key] = mean_interval(res["episode_return"])


def compare_with_random(engine: Any, total_episodes: int = DEFAULT_EVAL_EPISODES,
                        fresh_starts: bool = True, greedy: bool | None = None,
                        start_weights: Mapping[str, Any] | None = None) -> dict[str, Comparison]:
    """Each policy's return against the uniform-random policy's (the learning summary's numbers).

    ``greedy``: the trained policies play greedily (argmax / Gaussian mean) or sample their actions
    as in training; None: greedily with one policy (as rl-baselines3-zoo evaluates), sampled with
    several: in a game the trained object is a stochastic policy, and a deterministic pursuer that is
    still unsure is easy to escape (the Tag measurements: ``docs/config_reference.md``).

    "Better" is decided on the paired per-episode difference trained − random over the same start
    states (:class:`Comparison`). With several policies it is decided per policy against the same
    fixed opponents, the other policies uniformly random; the all-trained game against the all-random game
    cannot serve, since in a zero-sum game both teams cannot beat the all-random game at once.

    ``start_weights`` (the weights the run started from): each policy that learned also plays them in its
    verdict's play, over the same episodes (:attr:`Comparison.start`, :attr:`Comparison.learned`).

    Raises:
        ConfigError: ``total_episodes`` below 1.
        UsageError: the engine has no :meth:`evaluation_episodes` (DDPG trainers).
    """
    if not hasattr(engine, "evaluation_episodes"):
        raise UsageError(f"{type(engine).__name__} cannot play the random-policy baseline; "
                         "the learning summary needs an A2C/PPO trainer")
    if greedy is None:
        greedy = len(engine.policies) == 1
    res = evaluate(engine, deterministic=greedy, total_episodes=total_episodes, fresh_starts=fresh_starts,
                   start_weights=start_weights)
    if len(res) == 1:
        return {tag: Comparison(tag, r["return_interval"], r["random_return_interval"], None, r["fresh_start_states"],
                                greedy=greedy, difference=r["difference_interval"], start=r.get("start_return_interval"),
                                learned=r.get("learned_interval")) for tag, r in res.items()}
    return {tag: Comparison(tag, r["return_interval_vs_random_others"], r["random_return_interval"], r["return_interval"],
                            r["fresh_start_states"], r["random_return_interval_vs_trained_others"], greedy,
                            r["difference_interval"], r["difference_interval_vs_trained_others"],
                            r.get("start_return_interval"), r.get("learned_interval"))
            for tag, r in res.items()}


# ----------------------------------------------------------------------------- 2.7.1 API helpers
#: 2.7.1 ``sample_params`` that only its DDPG exploration noise understood.
_OU_PARAMS = ("damping", "stddev", "scale")


def greedy_from_sample_params(sample_params: dict[str, Any], default: bool) -> bool:
    """The sampling mode asked for by 2.7.1's ``**sample_params`` (``use_argmax=True``: greedy).

    Raises:
        ConfigError: OU-noise parameters (2.7.1's DDPG exploration) or any other unknown name.
    """
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
    w, policies, dm, E, T = _playing(engine)
    dev = engine.device
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
        ``states`` = ``{name: (T + 1, *shape) float64}``, where row t is the state before step t, the row
        after the final state and later rows are NaN; with ``include_rewards_actions`` also
        ``actions`` ``(T, *action_shape)`` and ``rewards`` ``(T, *reward_shape)`` float32 (a_t and
        r_{t+1}, zero after the episode), and with ``include_probabilities`` a dict
        ``{t: {tag: [per-head probabilities of env_id's agents]}}`` (Gaussian heads: mean and std).
        The tuple is ``(states, actions, rewards[, probabilities])``, or ``(states, probabilities)``
        when only probabilities are asked for (2.7.1 silently dropped them then).
        ``policy`` restricts actions, rewards and probabilities to that policy's agents.
    """
    w, policies, dm, E, T = _playing(engine)
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
