"""Evaluation that can tell trained from random: 95% t intervals, the uniform-random baseline,
fresh start states, the paired comparison (same start states, same opponents' draws, the interval of
the per-episode difference), the learning summary and its command-line output (cpu backend)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv
from tests.helpers.threads import torch_threads
from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, UsageError
from warp_drive.training.run import evaluation as ev
from warp_drive.training import example_training_script as script
from warp_drive.training.run.random_policy import EpisodeKeyedUniform, UniformRandomActions, box_sampling_bounds
from warp_drive.training.run.statistics import Interval, mean_interval, t_quantile_975
from warp_drive.training.trainer import Trainer
from warp_drive.utils.constants import Constants


def _policy(algorithm="PPO"):
    return {"to_train": True, "algorithm": algorithm, "gamma": 0.98, "gae_lambda": 0.8, "lr": 0.003, "num_epochs": 4,
            "num_minibatches": 2, "entropy_coeff": 0.0, "normalize_advantage": True, "vf_loss_coeff": 0.5,
            "clip_grad_norm": True, "max_grad_norm": 0.5, "model": {"fc_dims": [32, 32]}}


def _config(tmp_path, envs, steps, iters, T, policies):
    return {"name": "eval", "trainer": {"num_envs": envs, "train_batch_size": envs * steps,
                                        "num_episodes": envs * steps * iters // T, "env_backend": "cpu", "seed": 1},
            "policy": policies,
            "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 100000, "basedir": str(tmp_path),
                       "name": "eval", "tag": "t"}}


def _cartpole(tmp_path, iters=30, envs=16, T=200):
    w = EnvWrapper(ClassicControlCartPoleEnv(episode_length=T, reset_pool_size=256, seed=3), num_envs=envs,
                   env_backend="cpu")
    return Trainer(w, _config(tmp_path, envs, 64, iters, T, {"shared": _policy()}), verbose=False)


# ----------------------------------------------------------------------------- intervals
def test_t_quantiles_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 5, 29, 30, 31, 40, 99, 1000, 10**6):
        assert t_quantile_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-4), df
    with pytest.raises(ConfigError, match="degree of freedom"):
        t_quantile_975(0)


def test_mean_interval_is_the_student_t_interval():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    iv = mean_interval(x)
    half = 2.7764 * x.std(ddof=1) / math.sqrt(5)
    assert (iv.mean, iv.n, iv.spread) == (3.0, 5, True)
    assert iv.low == pytest.approx(3 - half) and iv.high == pytest.approx(3 + half)
    same = mean_interval([2.0] * 10)
    assert not same.spread and same.low == same.high == 2.0
    one = mean_interval([7.0])
    assert one.n == 1 and math.isnan(one.low) and not one.above(mean_interval([0.0, 1.0]))
    assert mean_interval([10.0, 11.0, 12.0]).above(iv) and not iv.above(mean_interval([4.0, 5.0, 6.0]))
    with pytest.raises(ConfigError, match="at least 1 episode"):
        mean_interval([])
    with pytest.raises(ConfigError, match="NaN or infinite"):
        mean_interval([1.0, float("nan")])


# ----------------------------------------------------------------------------- the random policy
def test_random_discrete_actions_are_uniform_over_every_head(tmp_path):
    t = Trainer(EnvWrapper(ToyLine(num_agents=4, episode_length=20), num_envs=64, env_backend="cpu"),
                _config(tmp_path, 64, 20, 2, 20, {"a": _policy("A2C"), "b": _policy("A2C")}), {"a": [3, 1], "b": [0, 2]},
                verbose=False)
    t.env_wrapper.reset_all_envs()
    placeholder = t.env_wrapper.cuda_data_manager.data_on_device_via_torch(Constants.ACTIONS)
    placeholder.fill_(-1)
    UniformRandomActions(t.env_wrapper, t.policies["a"], torch.Generator().manual_seed(0)).write()
    a = placeholder.numpy()
    assert (a[:, [0, 2]] == -1).all()  # policy b's agents untouched
    counts = np.bincount(a[:, [3, 1]].ravel(), minlength=3)
    assert counts.sum() == 128 and (counts > 128 / 3 * 0.6).all() and len(counts) == 3  # ToyLine: Discrete(3)


def test_random_box_actions_fill_the_bounds(tmp_path):
    w = EnvWrapper(ClassicControlPendulumEnv(episode_length=50), num_envs=500, env_backend="cpu")
    t = Trainer(w, _config(tmp_path, 500, 10, 1, 50, {"shared": _policy()}), verbose=False)
    t.env_wrapper.reset_all_envs()
    UniformRandomActions(t.env_wrapper, t.policies["shared"], torch.Generator().manual_seed(0)).write()
    a = w.cuda_data_manager.data_on_device_via_torch(Constants.ACTIONS).numpy().ravel()
    assert a.min() >= -2.0 and a.max() <= 2.0 and a.min() < -1.8 and a.max() > 1.8 and abs(a.mean()) < 0.2
    lo, hi = box_sampling_bounds(np.array([-np.inf, -np.inf, 3.0, 0.0]), np.array([np.inf, 5.0, np.inf, 1.0]))
    np.testing.assert_array_equal(lo, [-1.0, 3.0, 3.0, 0.0])
    np.testing.assert_array_equal(hi, [1.0, 5.0, 5.0, 1.0])


# ----------------------------------------------------------------------------- fresh start states
def test_fresh_start_states_are_turned_on_and_restored():
    w = SimpleNamespace(supports_fresh_start_states=True, fresh_start_states=False)
    with pytest.raises(RuntimeError):
        with ev.fresh_start_states(w) as on:
            assert on and w.fresh_start_states is True
            raise RuntimeError
    assert w.fresh_start_states is False
    bare = SimpleNamespace()  # a wrapper without the start-state hook
    with ev.fresh_start_states(bare) as on:
        assert not on and not hasattr(bare, "fresh_start_states")


def test_evaluate_plays_differing_episodes_and_at_least_100_by_default(tmp_path):
    with torch_threads(1):
        t = _cartpole(tmp_path)
        seen = []
        step = t.env_wrapper.step_all_envs
        t.env_wrapper.step_all_envs = lambda: (seen.append(getattr(t.env_wrapper, "fresh_start_states", None)), step())[1]
        before = getattr(t.env_wrapper, "fresh_start_states", None)
        res = t.evaluate()["shared"]
    assert set(seen) == {True if getattr(t.env_wrapper, "supports_fresh_start_states", False) else before}
    assert getattr(t.env_wrapper, "fresh_start_states", None) == before
    assert res["num_episodes"] == len(res["episode_return"]) == 112  # ceil(100 / 16) = 7 per env
    assert len(res["random_episode_return"]) == 112
    assert len(set(res["episode_length"].tolist())) > 1  # greedy episodes from different starts differ
    assert res["return_interval"].spread and res["return_interval"].mean == pytest.approx(res["episode_return"].mean())
    assert res["fresh_start_states"] == t.env_wrapper.supports_fresh_start_states
    assert len(t.evaluate(num_episodes=2, random_baseline=False)["shared"]["episode_return"]) == 32
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ConfigError, match="at least 1 episode"):
            t.evaluate(num_episodes=bad)
        with pytest.raises(ConfigError, match="at least 1 episode"):
            ev.compare_with_random(t, total_episodes=bad)


# ----------------------------------------------------------------------------- trained vs random
def test_trained_and_random_weights_give_separated_results(tmp_path):
    """CartPole, PPO for 30 short iterations (about 2 s): the greedy return rises far above the
    uniform-random policy's (about 22; trained: 60 to 100, depending on the machine's float rounding),
    while untrained weights are not better than random."""
    with torch_threads(1):
        t = _cartpole(tmp_path)
        untrained = ev.compare_with_random(t)["shared"]
        t.train()
        trained = ev.compare_with_random(t)["shared"]
    assert not untrained.better and trained.better, (untrained, trained)
    assert trained.trained.above(untrained.trained) and trained.trained.mean > 2 * trained.random.mean
    assert 15 < trained.random.mean < 35 and trained.random.n == trained.trained.n == 112
    # the verdict's number: the paired difference over the same 112 episodes, above 0
    d = trained.difference
    assert d is not None and d.n == 112 and d.low > 0
    assert d.mean == pytest.approx(trained.trained.mean - trained.random.mean)  # same episodes: means subtract
    assert untrained.difference is not None and not untrained.difference.low > 0
    table = ev.comparison_table({"shared": trained})
    assert "verdict: the trained policy is better than uniform random (paired over the same 112 start states" in table
    assert "112 / 112" in table and "difference (paired)" in table.splitlines()[0]


def test_two_policies_are_each_compared_against_the_same_random_opponents(tmp_path):
    t = Trainer(EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=16, env_backend="cpu"),
                _config(tmp_path, 16, 20, 2, 20, {"a": _policy("A2C"), "b": _policy("A2C")}), {"a": [3, 1], "b": [0, 2]},
                verbose=False)
    played = []
    play = ev.play_episodes
    ev_play = lambda engine, per_env, greedy, random_tags, fresh: (played.append(sorted(random_tags)),  # noqa: E731
                                                                   play(engine, per_env, greedy, random_tags, fresh))[1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ev, "play_episodes", ev_play)
        res = t.evaluate(total_episodes=32)
        comparisons = ev.compare_with_random(t, total_episodes=32)
    # the game, all random, then per policy: it against random others, it random against the trained others
    assert played[:6] == [[], ["a", "b"], ["b"], ["a"], ["a"], ["b"]]
    for tag in ("a", "b"):
        r = res[tag]
        assert r["return_interval_vs_random_others"].n == r["random_return_interval"].n == 32
        assert r["random_return_interval_vs_trained_others"].n == 32
        assert r["difference_interval"].n == r["difference_interval_vs_trained_others"].n == 32
        assert r["difference_interval"].mean == pytest.approx(r["return_interval_vs_random_others"].mean
                                                              - r["random_return_interval"].mean)
        c = comparisons[tag]
        assert c.game is not None and c.random_in_game is not None and c.trained.n == c.random.n == 32
        assert c.difference is not None and c.difference_in_game is not None and c.difference.n == 32
        assert c.better == c.better_vs_random_others == (c.difference.low > 0)  # the verdict: the paired difference
    table = ev.comparison_table(comparisons).splitlines()
    # a game: the trained policies sample their actions (argmax is not the policy that was trained)
    assert not any(c.greedy for c in comparisons.values())
    assert table[0].split() == ["policy", "opponents", "trained", "(sampled)", "uniform", "random", "difference",
                                "(paired)", "episodes", "better", "than", "random"]
    assert [row.split()[0] for row in table[2:6]] == ["a", "trained*", "b", "trained*"]
    assert table[6].startswith("(* against the final trained other policies, for information")
    assert table[2].split()[1] == table[4].split()[1] == "random"


def test_comparison_table_verdicts():
    hi, lo, mid = Interval(10.0, 9.0, 11.0, 50), Interval(2.0, 1.0, 3.0, 50), Interval(2.5, 0.5, 9.5, 50)
    assert "verdict: the trained policy is better" in ev.comparison_table({"s": ev.Comparison("s", hi, lo)})
    text = ev.comparison_table({"a": ev.Comparison("a", hi, lo, hi), "b": ev.Comparison("b", lo, hi, lo),
                                "c": ev.Comparison("c", mid, lo, mid)})
    assert "NOT measurably better than uniform random: b (interval below random), c (intervals overlap)" in text
    # the verdict is against the uniform-random opponents only: b, better against the trained opponents
    # (which differ from run to run) but below random against random ones, is not better
    text = ev.comparison_table({"a": ev.Comparison("a", hi, lo, hi, random_in_game=lo),
                                "b": ev.Comparison("b", lo, hi, hi, random_in_game=lo)})
    assert "NOT measurably better than uniform random: b (interval below random)" in text
    b = ev.Comparison("b", lo, hi, hi, random_in_game=lo)
    assert b.better_vs_trained_others and not b.better
    text = ev.comparison_table({"a": ev.Comparison("a", hi, lo, lo, random_in_game=hi),
                                "b": ev.Comparison("b", hi, lo, hi, random_in_game=lo)})
    assert "verdict: every policy is better than uniform random against uniform-random opponents" in text
    assert not ev.Comparison("c", mid, lo, mid, random_in_game=lo).better  # overlaps both ways
    flat = Interval(500.0, 500.0, 500.0, 20, spread=False)
    assert "note: every greedy episode of s returned 500 (from fresh start states)" in \
        ev.comparison_table({"s": ev.Comparison("s", flat, lo)})
    assert "returned 500 (without fresh start states: the env may start every episode from the same state)" in \
        ev.comparison_table({"s": ev.Comparison("s", flat, lo, fresh_starts=False)})


def test_paired_difference_interval_on_a_synthetic_case():
    """Episodes are paired by their key (episode k of env e), whatever their order; only the episodes both
    plays finished count; the interval is the Student t interval of the per-episode differences."""
    a = {"episode_return": np.array([10.0, 12.0, 9.0, 11.0, 30.0]), "episode_key": np.array([0, 1, 2, 3, 7])}
    b = {"episode_return": np.array([9.5, 8.0, 10.0, 8.5]), "episode_key": np.array([3, 0, 2, 1])}
    d = ev.paired_difference(a, b)
    diffs = np.array([10.0 - 8.0, 12.0 - 8.5, 9.0 - 10.0, 11.0 - 9.5])  # keys 0..3; key 7 unpaired
    half = 3.1824 * diffs.std(ddof=1) / math.sqrt(4)
    assert (d.n, d.mean) == (4, pytest.approx(diffs.mean()))
    assert d.low == pytest.approx(diffs.mean() - half) and d.high == pytest.approx(diffs.mean() + half)
    # positively correlated arms: the paired interval is far narrower than the two separate ones
    rng = np.random.default_rng(0)
    start = rng.normal(0.0, 5.0, 200)  # what the start state contributes, common to both arms
    trained = {"episode_return": start + 1.0 + rng.normal(0, 1, 200), "episode_key": np.arange(200)}
    random = {"episode_return": start + rng.normal(0, 1, 200), "episode_key": np.arange(200)}
    paired = ev.paired_difference(trained, random)
    separate = mean_interval(trained["episode_return"]), mean_interval(random["episode_return"])
    assert paired.low > 0 and not separate[0].above(separate[1])  # measurable only when paired
    assert paired.half_width < 0.3 * separate[0].half_width


def test_verdict_is_the_paired_difference_interval_above_zero():
    """Overlapping intervals with a difference interval above 0 are better; a difference interval that
    includes 0, lies below it or comes from one episode is not; without a difference the verdict falls back
    to the unpaired rule (non-overlapping intervals)."""
    trained, random = Interval(12.0, 10.0, 14.0, 200), Interval(11.0, 9.0, 13.0, 200)  # overlap
    above, around, below = Interval(1.0, 0.4, 1.6, 200), Interval(0.5, -0.1, 1.1, 200), Interval(-1.0, -1.6, -0.4, 200)
    assert ev.Comparison("t", trained, random, difference=above).better
    assert not ev.Comparison("t", trained, random, difference=around).better
    assert not ev.Comparison("t", trained, random, difference=below).better
    assert not ev.Comparison("t", trained, random, difference=Interval(3.0, math.nan, math.nan, 1, False)).better
    assert ev.Comparison("t", trained, random, difference=Interval(2.0, 2.0, 2.0, 5, spread=False)).better
    assert not ev.Comparison("t", trained, random).better  # unpaired fallback: the intervals overlap
    assert not ev.Comparison("t", trained, random, difference=Interval(0.0, 0.0, 0.0, 200)).better  # 0 is not above 0
    text = ev.comparison_table({"t": ev.Comparison("t", trained, random, difference=above)})
    assert ("verdict: the trained policy is better than uniform random (paired over the same 200 start states: the 95% "
            "interval of the mean per-episode return difference trained − random lies above 0)") in text
    assert "1 ± 0.6  [0.4, 1.6]" in text.splitlines()[2]
    game = dict(game=trained, random_in_game=random, difference_in_game=below)
    text = ev.comparison_table({"a": ev.Comparison("a", trained, random, difference=above, **game),
                                "b": ev.Comparison("b", trained, random, difference=around, **game),
                                "c": ev.Comparison("c", trained, random, difference=below, **game)})
    assert ("verdict: NOT measurably better than uniform random: b (difference interval includes 0), c (difference "
            "below 0) [trained − random, paired over the same start states, 95% interval of the mean]") in text
    assert [line.split()[-1] for line in text.splitlines()[2:8]] == ["yes", "no", "no", "no", "no", "no"]
    text = ev.comparison_table({"a": ev.Comparison("a", trained, random, difference=above, **game),
                                "b": ev.Comparison("b", trained, random, difference=above, **game)})
    assert ("verdict: every policy is better than uniform random against uniform-random opponents (paired over the "
            "same 200 start states and opponent draws: the 95% interval") in text


def _small_tag(tmp_path):
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    env = TagContinuous(num_taggers=2, num_runners=5, grid_length=3.0, episode_length=30, seed=4,
                        num_acceleration_levels=3, num_turn_levels=3, tagging_distance=0.3)
    w = EnvWrapper(env, num_envs=4, env_backend="cpu")
    policy_map = {"tagger": sorted(env.taggers), "runner": sorted(env.runners)}
    return Trainer(w, _config(tmp_path, 4, 30, 1, 30, {"tagger": _policy("A2C"), "runner": _policy("A2C")}), policy_map,
                   verbose=False)


def test_every_play_of_an_evaluation_sees_the_same_start_states(tmp_path, monkeypatch):
    """Tag with fresh start states: the six plays of one evaluation (the game, all random, and per team
    trained vs random others and random vs trained others) start episode k of env e from the same start
    state (recorded from the start-state hook); the episode counters end past every play's."""
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    plays: list[dict[tuple[int, int], tuple]] = []
    hook = TagContinuous.numpy_start_state

    def recording(self, data, rows, key):
        hook(self, data, rows, key)
        for i, r in enumerate(np.asarray(rows).ravel()):
            state = tuple(tuple(np.asarray(data[n][r]).round(6).tolist()) for n in ("loc_x", "loc_y", "direction"))
            plays[-1][(int(key.env[i]), int(key.episode[i]))] = state

    monkeypatch.setattr(TagContinuous, "numpy_start_state", recording)
    t = _small_tag(tmp_path)
    play = ev.play_episodes
    monkeypatch.setattr(ev, "play_episodes", lambda *a, **k: (plays.append({}), play(*a, **k))[1])
    counters = lambda: t.env_wrapper.env_resetter.state_dict()["pool_counters"].clone()  # noqa: E731
    with torch_threads(1):
        before = counters()
        res = t.evaluate(num_episodes=3)
        after = counters()
    assert len(plays) == 6
    first = plays[0]
    for env in range(4):  # every play drew at least the 3 evaluated episodes of every env
        assert all(sum(1 for e, _ in p if e == env) >= 3 for p in plays)
    for other in plays[1:]:
        common = first.keys() & other.keys()
        assert len(common) >= 12 and all(first[k] == other[k] for k in common)
    assert len({s for p in plays for s in p.values()}) > 4  # fresh: the start states differ across episodes
    used = torch.tensor([[max(k for e, k in p if e == env) for env in range(4)] for p in plays]).amax(0)
    assert (after >= before + 3).all() and (after.long() > used).all()  # the next reset's key is a new one
    for tag in ("tagger", "runner"):
        assert res[tag]["difference_interval"].n == 12


def test_uniform_random_opponents_draw_alike_in_both_arms(tmp_path, monkeypatch):
    """The runners' uniform-random actions in episode k, step t of env e are the same whether the taggers
    play their model or act at random (common random numbers), and the keyed draws are uniform."""
    actions: list[dict[tuple[int, int, int], list]] = []
    write = UniformRandomActions.write

    def recording(self, episode=None, step=None):
        write(self, episode, step)
        if self.policy is t.policies["runner"]:
            cols = self.spec.num_columns
            acts = self.placeholder[:, self.policy.agent_index, :cols]
            for e in range(acts.shape[0]):
                actions[-1][(e, int(episode[e]), int(step[e]))] = acts[e].tolist()

    t = _small_tag(tmp_path)
    monkeypatch.setattr(UniformRandomActions, "write", recording)
    with torch_threads(1):
        for random_tags in (["runner"], ["tagger", "runner"]):  # the taggers' trained arm, then their random arm
            actions.append({})
            ev.play_episodes(t, 3, False, random_tags)
    common = actions[0].keys() & actions[1].keys()
    assert len(common) >= 4 * 30 and all(actions[0][k] == actions[1][k] for k in common)
    u = EpisodeKeyedUniform(0, 1)((2000, 3, 2), torch.arange(2000) % 7, torch.arange(2000) % 11)
    again = EpisodeKeyedUniform(0, 1)((2000, 3, 2), torch.arange(2000) % 7, torch.arange(2000) % 11)
    other = EpisodeKeyedUniform(0, 2)((2000, 3, 2), torch.arange(2000) % 7, torch.arange(2000) % 11)
    assert torch.equal(u, again) and not torch.equal(u, other)
    assert 0 <= float(u.min()) and float(u.max()) < 1 and abs(float(u.mean()) - 0.5) < 0.02
    assert abs(float(u.var()) - 1 / 12) < 0.005 and abs(float(torch.corrcoef(torch.stack([u.ravel(),
                                                                                        other.ravel()]))[0, 1])) < 0.05
    with pytest.raises(TypeError, match="episode and step"):
        UniformRandomActions(t.env_wrapper, t.policies["runner"], EpisodeKeyedUniform(0, 1)).write()


def test_learning_summary_needs_an_a2c_or_ppo_trainer():
    with pytest.raises(UsageError, match="A2C/PPO trainer"):
        ev.compare_with_random(SimpleNamespace(env_wrapper=None, policies={}))


# ----------------------------------------------------------------------------- command line
TINY = ["--env", "cartpole", "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
        "env.episode_length=50", "trainer.num_episodes=8"]


def test_cli_summary_prints_the_table_and_eval_episodes_sizes_it(tmp_path, capsys):
    assert script.main(TINY + ["--results_dir", str(tmp_path / "a"), "--eval_episodes", "10"]) == 0
    out = capsys.readouterr().out
    assert "evaluation: final policy (greedy) vs uniform random on the same episodes" in out
    assert "95% Student t interval" in out
    assert "difference (paired)" in out and "per-episode difference trained − random" in out
    assert "12 / 12" in out and "verdict: " in out  # ceil(10 / 4) = 3 episodes per env
    assert script.main(TINY + ["--results_dir", str(tmp_path / "b"), "--eval_episodes", "0"]) == 0
    assert "evaluation:" not in capsys.readouterr().out
    assert script.main(TINY + ["--results_dir", str(tmp_path / "a"), "--resume", str(tmp_path / "a"), "--evaluate",
                               "--eval_episodes", "5"]) == 0
    out = capsys.readouterr().out
    assert "8 / 8" in out and "done:" not in out
    for bad in (["--eval_episodes", "-1"], ["--evaluate", "--eval_episodes", "0"]):
        with pytest.raises(SystemExit) as exit_:
            script.main(TINY + bad)
        assert exit_.value.code == 2
    assert "--eval_episodes" in capsys.readouterr().err


def test_tag_continuous_evaluation_plays_fresh_starts_and_restores_the_setting(tmp_path):
    """Tag continuous starts every episode from one saved state unless fresh start states are on:
    greedy episodes are then all alike; evaluation turns them on (and back off) so they differ."""
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    env = TagContinuous(num_taggers=2, num_runners=5, grid_length=3.0, episode_length=30, seed=4,
                        num_acceleration_levels=3, num_turn_levels=3, tagging_distance=0.3)
    w = EnvWrapper(env, num_envs=4, env_backend="cpu")
    policy_map = {"tagger": sorted(env.taggers), "runner": sorted(env.runners)}
    t = Trainer(w, _config(tmp_path, 4, 30, 1, 30, {"tagger": _policy("A2C"), "runner": _policy("A2C")}), policy_map,
                verbose=False)
    assert w.supports_fresh_start_states and not w.fresh_start_states
    with torch_threads(1):
        saved = t.evaluate(num_episodes=3, random_baseline=False, fresh_starts=False)
        fresh = t.evaluate(num_episodes=3, random_baseline=False)
    assert not w.fresh_start_states  # restored
    for tag in ("tagger", "runner"):
        assert len(set(saved[tag]["episode_return"].tolist())) == 1  # one start state, greedy: one episode
        assert len(set(fresh[tag]["episode_return"].tolist())) > 1, fresh[tag]["episode_return"]
