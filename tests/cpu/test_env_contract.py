"""The env contract (warp_drive/env/): array schemas checked at push, the truncation flag, agent
groups, the registrar envs register themselves in, and the typed errors of its edges."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import example_envs
from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
from example_envs.dummy_env.dummy_env import DummyEnv
from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import TagGridWorld, TagGridWorldWithResetPool
from warp_drive.env import (
    ArraySpec,
    Constants,
    CUDAEnvironmentContext,
    DataFeed,
    EnvironmentRegistrar,
    canonical_backend,
    check_array_schema,
    env_registrar,
    split_done,
)
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataNotFoundError, DataShapeError, DataTypeError, UnknownEnvError

SMALL = {
    "tag_continuous": dict(num_taggers=2, num_runners=3, episode_length=6),
    "tag_gridworld": dict(num_taggers=2, grid_length=3, episode_length=6),
    "tag_gridworld_with_reset_pool": dict(num_taggers=2, grid_length=3, episode_length=6, reset_pool_size=3),
    "dummy_env": dict(num_agents=3, episode_length=6),
}


def _env(name: str, **config: Any) -> Any:
    return example_envs.get_example_env_class(name)(**{**SMALL.get(name, {"episode_length": 6}), **config})


def _feeds(env: Any) -> tuple[DataFeed, ...]:
    env.reset()
    return env.get_data_dictionary(), env.get_tensor_dictionary(), env.get_reset_pool_dictionary()


# ----------------------------------------------------------------------------- array schemas
@pytest.mark.parametrize("name", example_envs.example_env_names())
def test_every_example_env_declares_a_schema_its_feeds_fit(name):
    env = _env(name, **({"reset_pool_size": 4} if name == "cartpole" else {}))
    assert env.array_schema, f"{name} declares no array_schema"
    check_array_schema(env, _feeds(env))  # no error
    provided = {k for feed in _feeds(env) for k in feed}
    required = {k for k, spec in env.array_schema.items() if not spec.optional}
    assert required <= provided


class _BrokenTag(TagContinuous):
    """One array of one env with the wrong length (the bug the schema catches at push)."""

    def get_data_dictionary(self) -> DataFeed:
        feed = super().get_data_dictionary()
        feed["loc_y"]["data"] = feed["loc_y"]["data"][:-1]
        return feed


def test_a_per_env_shape_mismatch_fails_at_push_naming_the_array():
    wrapper = EnvWrapper(_BrokenTag(num_taggers=1, num_runners=3), num_envs=2, env_backend="cpu")
    with pytest.raises(DataShapeError, match=r"'loc_y' has shape \(3,\) for one env, but array_schema expects "
                                             r"\(num_agents=4,\) float32"):
        wrapper.reset_all_envs()
    assert not wrapper.cuda_data_manager.is_data_on_device("loc_x")  # nothing was pushed


def test_schema_dtype_missing_array_and_bad_dimension_are_typed_errors():
    class Grid(TagGridWorld):
        def get_data_dictionary(self) -> DataFeed:
            feed = super().get_data_dictionary()
            feed["loc_x"]["data"] = feed["loc_x"]["data"].astype(np.float32) + 0.5
            del feed["num_taggers_on_runner"]
            return feed

    env = Grid(num_taggers=2, grid_length=3)
    env.array_schema = {"loc_x": TagGridWorld.array_schema["loc_x"]}
    with pytest.raises(DataTypeError, match="'loc_x' holds float32 values, but array_schema declares int32"):
        check_array_schema(env, _feeds(env))
    env.array_schema = {"num_taggers_on_runner": ArraySpec((), "int32")}
    with pytest.raises(DataShapeError, match="declares 'num_taggers_on_runner', but the env's feeds do not provide it"):
        check_array_schema(env, _feeds(env))
    env.array_schema = {"loc_y": ArraySpec(("no_such_attribute",), "int32")}
    with pytest.raises(ConfigError, match="no int attribute 'no_such_attribute'"):
        check_array_schema(env, _feeds(env))
    with pytest.raises(ConfigError, match="dtype='float64'"):
        ArraySpec((), "float64")


def test_envs_without_a_schema_are_checked_as_before():
    class Plain(DummyEnv):
        array_schema = {}

    wrapper = EnvWrapper(Plain(num_agents=2), num_envs=2, env_backend="cpu")
    wrapper.reset_all_envs()
    assert wrapper.cuda_data_manager.get_shape("x") == (2, 2)


# ----------------------------------------------------------------------------- truncation
def test_split_done_with_and_without_the_flag():
    done = torch.tensor([0, 1, 1, 2, 1, 0], dtype=torch.int32)
    t = torch.tensor([3, 3, 10, 10, 10, 10], dtype=torch.int32)
    term, trunc = split_done(done, t, 10)  # 2.7.1 kernels: the time limit decides
    assert term.tolist() == [False, True, False, True, False, False]
    assert trunc.tolist() == [False, False, True, False, True, False]
    flag = torch.tensor([0, 0, 1, 0, 0, 1], dtype=torch.int32)  # env 4 terminated exactly at the limit
    term, trunc = split_done(done, t, 10, flag)
    assert term.tolist() == [False, True, False, True, True, False]
    assert trunc.tolist() == [False, False, True, False, False, False]  # a flag without done is no end
    term, trunc = split_done(done.numpy(), t.numpy(), 10, flag.numpy())  # NumPy arrays too
    assert trunc.tolist() == [False, False, True, False, False, False]


@pytest.mark.parametrize("name", ["tag_continuous", "tag_gridworld", "tag_gridworld_with_reset_pool", "cartpole",
                                  "acrobot", "mountain_car", "continuous_mountain_car", "pendulum"])
def test_numpy_steps_write_the_truncation_flag(name):
    """The flag is 1 exactly where an episode ends at the time limit without terminating."""
    env = _env(name)
    assert env.writes_truncation
    wrapper = EnvWrapper(env, num_envs=6, env_backend="cpu")
    wrapper.reset_all_envs()
    dm = wrapper.cuda_data_manager
    rng = np.random.default_rng(0)
    seen_truncation = False
    for _ in range(3 * env.episode_length):
        space = env.action_space[0]
        shape = dm.get_shape(Constants.ACTIONS)
        if hasattr(space, "nvec") or hasattr(space, "n"):
            high = np.broadcast_to(np.atleast_1d(getattr(space, "nvec", getattr(space, "n", None))), shape)
            actions = rng.integers(0, high).astype(np.int32)
        else:
            actions = rng.uniform(space.low[0], space.high[0], shape).astype(np.float32)
        wrapper.step_all_envs(actions)
        done = dm.pull_data_from_device(Constants.DONE)
        t = dm.pull_data_from_device(Constants.TIMESTEP)
        flag = dm.pull_data_from_device(Constants.TRUNCATED)
        assert set(flag.tolist()) <= {0, 1}
        assert not (flag.astype(bool) & ((done == 0) | (t < env.episode_length))).any()  # only at the limit
        early = (done > 0) & (t < env.episode_length)
        assert not flag[early].any()  # an end before the limit is a termination
        seen_truncation |= bool(flag.any())
        wrapper.reset_only_done_envs()
    assert seen_truncation


def test_only_envs_that_write_it_get_a_truncation_array():
    tag = EnvWrapper(_env("tag_gridworld"), num_envs=2, env_backend="cpu")
    dummy = EnvWrapper(DummyEnv(num_agents=2), num_envs=2, env_backend="cpu")
    tag.reset_all_envs()
    dummy.reset_all_envs()
    assert tag.cuda_data_manager.get_shape(Constants.TRUNCATED) == (2,)
    assert not dummy.cuda_data_manager.is_data_on_device(Constants.TRUNCATED)  # DummyEnv writes only _done_
    with pytest.raises(Exception, match="reserved"):
        dummy.cuda_data_manager.push_data_to_device({Constants.TRUNCATED: np.zeros(2, np.int32)})


def test_rollout_split_uses_the_flag_and_ignores_it_for_fixed_horizon_games():
    from warp_drive.training.engine.rollout import split_episode_ends

    done = torch.tensor([[1, 1]], dtype=torch.int32)
    t = torch.tensor([[5, 5]], dtype=torch.int32)
    flag = torch.tensor([[1, 0]], dtype=torch.int32)  # env 1 terminated on the last step
    _, term, trunc = split_episode_ends(done, t, 5, True, flag)
    assert trunc.tolist() == [[True, False]] and term.tolist() == [[False, True]]
    _, term, trunc = split_episode_ends(done, t, 5, True)  # no flag: the time limit rule
    assert trunc.tolist() == [[True, True]]
    _, term, trunc = split_episode_ends(done, t, 5, False, flag)  # bootstrap_at_time_limit=False
    assert trunc.tolist() == [[False, False]] and term.tolist() == [[True, True]]


# ----------------------------------------------------------------------------- agent groups
def test_agent_groups_and_the_default_policy_map():
    from warp_drive.training.example_training_script import default_policy_map

    tag = TagContinuous(num_taggers=2, num_runners=3, seed=1)
    groups = tag.agent_groups()
    assert sorted(groups) == ["runner", "tagger"] and sorted(groups["tagger"] + groups["runner"]) == list(range(5))
    assert default_policy_map(tag, ["tagger", "runner"]) == {"tagger": groups["tagger"], "runner": groups["runner"]}
    assert TagGridWorld(num_taggers=3).agent_groups() == {"tagger": [0, 1, 2], "runner": [3]}
    cart = ClassicControlCartPoleEnv()
    assert cart.agent_groups() == {"agents": [0]}
    assert default_policy_map(cart, ["shared"]) == {"shared": [0]}
    with pytest.raises(ConfigError, match=r"whose agent groups are \['agents'\]"):
        default_policy_map(DummyEnv(num_agents=4), ["tagger", "runner"])


# ----------------------------------------------------------------------------- registrar
def test_example_envs_register_themselves_lazily_with_their_run_configs():
    assert set(example_envs.example_env_names()) <= set(env_registrar.env_names())
    assert example_envs.registrar is env_registrar
    assert env_registrar.get("Tag_Gridworld_With_Reset_Pool", "pycuda") is TagGridWorldWithResetPool
    assert env_registrar.run_config_path("cartpole").name == "run_config.yaml"
    with pytest.raises(UnknownEnvError, match="did you mean 'cartpole'") as err:
        env_registrar.get("cartpol")
    assert isinstance(err.value, ConfigError) and isinstance(err.value, DataNotFoundError)


def test_a_registrar_registers_by_import_path_and_refuses_conflicts(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("name: dummy\n")
    registrar = EnvironmentRegistrar()
    registrar.register("mine", "example_envs.dummy_env.dummy_env:DummyEnv", run_config=config)
    registrar.register("mine", "example_envs.dummy_env.dummy_env:DummyEnv")  # the same target again: no-op
    assert registrar.run_config_path("mine") == config
    assert registrar.get("mine") is DummyEnv and registrar.get("MINE", "gpu") is DummyEnv
    with pytest.raises(ConfigError, match="already registered"):
        registrar.register("mine", TagContinuous)
    with pytest.raises(ConfigError, match="package.module:ClassName"):
        registrar.register("bad", "no_colon")
    registrar.register("missing", "example_envs.no_such_module:X")
    with pytest.raises(ConfigError, match="failed to import"):
        registrar.get("missing")
    with pytest.raises(ConfigError, match="without a run config"):
        registrar.run_config_path("missing")


def test_adapters_look_names_up_in_the_registrar_they_are_given():
    from warp_drive.interop import WarpDriveVectorEnv

    registrar = EnvironmentRegistrar()
    registrar.register("line", "example_envs.classic_control.cartpole.cartpole:ClassicControlCartPoleEnv")
    envs = WarpDriveVectorEnv("line", num_envs=2, env_config={"episode_length": 5}, env_registrar=registrar)
    assert envs.num_envs == 2
    with pytest.raises(UnknownEnvError, match="no env named 'cartpole'"):
        WarpDriveVectorEnv("cartpole", num_envs=2, env_registrar=registrar)
    with pytest.raises(ConfigError, match="unknown key 'reset_masks'; did you mean 'reset_mask'"):
        envs.reset(options={"reset_masks": np.array([True, False])})


# ----------------------------------------------------------------------------- typed errors at the edges
def test_backend_names_resolve_through_one_table():
    assert [canonical_backend(b) for b in ("pycuda", "CUDA", "gpu", "numba", "Numba", "cpu")] == (
        ["pycuda"] * 3 + ["numba"] * 2 + ["cpu"])
    with pytest.raises(ConfigError, match="did you mean 'cpu'"):
        canonical_backend("cpuu")
    with pytest.raises(ConfigError, match="unknown"):
        canonical_backend(["cpu"])
    from warp_drive.config import load_run_config

    config = load_run_config(example_envs.get_default_config_path("cartpole"), ["trainer.env_backend=gpu"])
    assert config.trainer.env_backend == "pycuda"


def test_data_feed_refuses_attributes_nothing_reads():
    feed = DataFeed()
    with pytest.raises(ConfigError, match="did you mean 'log_data_across_episode'"):
        feed.add_data("x", np.zeros(2), log_data_accross_episode=True)


def test_custom_271_templates_are_refused_not_ignored():
    from warp_drive.compat271.cuda_helpers import check_templates

    check_templates("template_env_config.h", "template_env_runner.cu", None)  # 2.7.1's defaults: accepted
    with pytest.raises(ConfigError, match="template_header_file='my.h'"):
        check_templates("my.h", None, None)
    with pytest.raises(ConfigError, match="template_path"):
        check_templates(None, None, "/templates")


def test_classic_control_builds_include_the_shared_header_folder():
    from warp_drive.cuda.compiler import env_include_dirs

    dirs = env_include_dirs(ClassicControlCartPoleEnv.cuda_source)
    assert (ClassicControlCartPoleEnv.cuda_source.parent.parent / "classic_control.cuh").parent in dirs


def test_the_base_env_has_no_renderer_and_steps_only_in_a_wrapper():
    from warp_drive.errors import UsageError

    env = CUDAEnvironmentContext()
    with pytest.raises(UsageError, match="no renderer"):
        env.render_rollout({})
    with pytest.raises(UsageError, match="wrap the env in an EnvWrapper"):
        env.step()
