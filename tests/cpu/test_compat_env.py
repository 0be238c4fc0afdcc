"""2.7.1's env-authoring contract on the CPU: gym spaces by duck typing, the registrar's calls,
EnvWrapper's 2.7.1 constructor and its cpu paths, Argfix, and 2.7.1's example-env names."""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest
from gymnasium import spaces

from tests.helpers.legacy_env import CUDA_SOURCE, CUDALegacyCrowd, LegacyCrowd, crowd_step
from tests.helpers.legacy_env import gym_standin
from warp_drive.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataNotFoundError, DataTypeError, DeviceUnavailableError
from warp_drive.training.models.action_spec import action_heads_from_space, obs_dims_from_space
from warp_drive.utils.argument_fix import Argfix
from warp_drive.utils.constants import Constants
from warp_drive.utils.env_registrar import EnvironmentRegistrar, env_registrar
from warp_drive.utils.placeholders import action_layout
from warp_drive.utils.recursive_obs_dict_to_spaces_dict import recursive_obs_dict_to_spaces_dict
from warp_drive.utils.spaces import agent_spaces_to_gymnasium, space_kind, to_gymnasium


def _gym_spaces():
    """Space modules a 2.7.1 env may use: real gym (when installed) and the stand-in."""
    mods = [gym_standin]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from gym import spaces as gym_spaces
        mods.append(gym_spaces)
    except ImportError:  # pragma: no cover
        pass
    return mods


# ----------------------------------------------------------------------------- spaces
@pytest.mark.parametrize("mod", _gym_spaces(), ids=lambda m: m.__name__)
def test_gym_spaces_convert_to_gymnasium(mod):
    d = to_gymnasium(mod.Discrete(5))
    assert isinstance(d, spaces.Discrete) and d.n == 5
    b = to_gymnasium(mod.Box(-1.0, 2.0, (3,), np.float32))
    assert isinstance(b, spaces.Box) and b.shape == (3,) and b.dtype == np.float32
    np.testing.assert_array_equal(b.low, [-1, -1, -1])
    np.testing.assert_array_equal(b.high, [2, 2, 2])
    assert space_kind(mod.Discrete(2)) == "Discrete" and space_kind(mod.Box(0, 1, (1,))) == "Box"
    assert action_layout(mod.Discrete(5)) == (1, np.int32)
    assert action_layout(mod.Box(-1.0, 1.0, (2,), np.float32)) == (2, np.float32)
    assert action_heads_from_space(mod.Discrete(7)).categorical == (7,)
    assert action_heads_from_space(mod.Box(-1.0, 1.0, (3,), np.float32)).gaussian_dim == 3
    assert obs_dims_from_space(mod.Box(0.0, 1.0, (4, 2), np.float32)) == (4, 2)


def test_real_gym_multidiscrete_dict_and_start():
    gym_spaces = pytest.importorskip("gym.spaces")
    md = to_gymnasium(gym_spaces.MultiDiscrete([3, 4]))
    assert isinstance(md, spaces.MultiDiscrete) and md.nvec.tolist() == [3, 4]
    assert action_layout(gym_spaces.MultiDiscrete([3, 4])) == (2, np.int32)
    assert to_gymnasium(gym_spaces.Discrete(3, start=2)).start == 2
    nested = to_gymnasium(gym_spaces.Dict({"pos": gym_spaces.Box(0.0, 1.0, (2,)), "mask": gym_spaces.MultiBinary(3)}))
    assert isinstance(nested, spaces.Dict) and isinstance(nested["mask"], spaces.MultiBinary)
    # a whole per-agent Dict space (2.7.1's wrapper stored observation spaces that way)
    per_agent = agent_spaces_to_gymnasium(gym_spaces.Dict({0: gym_spaces.Box(0.0, 1.0, (2,))}))
    assert list(per_agent) == [0] and isinstance(per_agent[0], spaces.Box)


def test_gymnasium_spaces_pass_through_and_junk_is_refused():
    space = spaces.Discrete(4)
    assert to_gymnasium(space) is space
    with pytest.raises(DataTypeError, match="not a space"):
        to_gymnasium(object())
    with pytest.raises(DataTypeError, match="dict"):
        agent_spaces_to_gymnasium([spaces.Discrete(2)])


def test_recursive_obs_dict_to_spaces_dict():
    out = recursive_obs_dict_to_spaces_dict({0: np.zeros(3), 1: 2.5, 2: {"a": [1, 2]}, 3: np.zeros(2, np.int32)})
    assert out[0].shape == (3,) and out[0].dtype == np.float32 and out[0].high[0] == 1e20
    assert out[1].shape == (1,)
    assert out[2]["a"].shape == (2,)
    assert out[3].dtype == np.int32
    with pytest.raises(TypeError):
        recursive_obs_dict_to_spaces_dict({0: "text"})


# ----------------------------------------------------------------------------- registrar
def test_registrar_2_7_1_calls():
    registrar = EnvironmentRegistrar()
    assert registrar.get_cuda_env_src_path(CUDALegacyCrowd.name) is None  # 2.7.1: None, not an error
    registrar.add_cuda_env_src_path(CUDALegacyCrowd.name, str(CUDA_SOURCE), env_backend="pycuda")
    assert registrar.get_cuda_env_src_path("legacycrowd") == CUDA_SOURCE  # names are case-insensitive
    assert registrar.get_cuda_env_src_path("LegacyCrowd", env_backend="pycuda") == CUDA_SOURCE
    registrar.add(env_backend="pycuda")(CUDALegacyCrowd)
    registrar.add(env_backend=["cpu"])(LegacyCrowd)
    assert registrar.has_env("LegacyCrowd", env_backend="cpu") and registrar.has_env("LegacyCrowd", "gpu")
    assert registrar.get("LegacyCrowd", "pycuda") is CUDALegacyCrowd
    assert registrar.get("legacycrowd", "cpu") is LegacyCrowd
    with pytest.raises(ConfigError, match="already registered"):
        registrar.add(env_backend="cpu")(LegacyCrowd)
    with pytest.raises(DataNotFoundError, match="no env named"):
        registrar.get("nope", "cpu")
    with pytest.raises(ConfigError, match=r"\.cu"):
        registrar.add_cuda_env_src_path("x", "/tmp/x.cpp")
    # Numba registrations (2.7.1's other backend) are kept apart: module paths, not files
    registrar.add_cuda_env_src_path("LegacyCrowd", "my_pkg.crowd_step_numba", env_backend="numba")
    assert registrar.get_cuda_env_src_path("LegacyCrowd", "numba") == "my_pkg.crowd_step_numba"
    with pytest.raises(ConfigError, match="dotted module path"):
        registrar.add_cuda_env_src_path("y", "/abs/path.cu", env_backend="numba")
    registrar.add(env_backend="numba")(CUDALegacyCrowd)
    assert registrar.has_env("LegacyCrowd", "numba")
    # instances never share state; the module-level instance of 2.7.1 exists
    assert not EnvironmentRegistrar().has_env("LegacyCrowd", "cpu")
    assert isinstance(env_registrar, EnvironmentRegistrar)


def test_registrar_decorator_with_source_registers_it():
    registrar = EnvironmentRegistrar()
    registrar.add(env_backend=["cpu", "pycuda"], cuda_env_src_path=str(CUDA_SOURCE))(CUDALegacyCrowd)
    assert registrar.get_cuda_env_src_path("LegacyCrowd") == CUDA_SOURCE


# ----------------------------------------------------------------------------- Argfix
def test_argfix_renames_with_a_deprecation_warning():
    @Argfix({"old": "new"})
    def f(new=0):
        return new

    with pytest.warns(DeprecationWarning, match="'old' is a deprecated argument"):
        assert f(old=3) == 3
    assert f(new=4) == 4
    with pytest.raises(ConfigError, match="both"):
        f(old=1, new=2)


# ----------------------------------------------------------------------------- EnvWrapper
def test_env_wrapper_signature_is_2_7_1s():
    params = list(inspect.signature(EnvWrapper.__init__).parameters)
    assert params[:12] == [
        "self", "env_obj", "env_name", "env_config", "num_envs", "blocks_per_env", "env_backend",
        "testing_mode", "testing_bin_filename", "env_registrar", "event_messenger", "process_id",
    ]
    assert inspect.signature(EnvWrapper.__init__).parameters["device_id"].kind is inspect.Parameter.KEYWORD_ONLY


def test_use_cuda_and_bool_backend():
    with pytest.warns(DeprecationWarning, match="use_cuda"):
        w = EnvWrapper(LegacyCrowd(seed=1), use_cuda=False)
    assert w.env_backend == "cpu"
    assert EnvWrapper(LegacyCrowd(seed=1), env_backend=False).env_backend == "cpu"


def test_cpu_passthrough_runs_a_2_7_1_env_gym_style():
    env = LegacyCrowd(num_agents=4, grid_length=3, episode_length=3, seed=2)
    w = EnvWrapper(env_obj=env, num_envs=1, env_backend="cpu")
    assert (w.n_agents, w.episode_length, w.name, w.env_backend) == (4, 3, "LegacyCrowd", "cpu")
    assert w.cuda_data_manager is None and w.reset_on_host
    # spaces: gym's converted once, the missing observation space built from the reset obs
    assert all(isinstance(s, spaces.Discrete) for s in env.action_space.values())
    assert env.observation_space[0].shape == (6,)
    obs = w.reset_all_envs()
    assert set(obs) == {0, 1, 2, 3} and env.timestep == 0
    expected = LegacyCrowd(num_agents=4, grid_length=3, episode_length=3, seed=2)
    expected.reset()
    for t in range(3):
        actions = {a: (a + t) % 5 for a in range(4)}
        o, r, d, info = w.step_all_envs(actions)
        eo, er, ed, _ = expected.step(actions)
        assert d == ed and info == {}
        for a in range(4):
            np.testing.assert_array_equal(o[a], eo[a])
            assert r[a] == er[a]
    assert d["__all__"]
    with pytest.raises(ConfigError, match="actions"):
        w.step_all_envs()
    for call in (w.reset_only_done_envs, w.init_reset_pool, w.custom_reset_all_envs):
        with pytest.raises(ConfigError, match="gym style"):
            call()
    np.testing.assert_array_equal(w.reset()[0], expected.reset()[0])


def test_dual_mode_2_7_1_env_on_cpu_uses_its_own_cpu_branch():
    w = EnvWrapper(CUDALegacyCrowd(seed=4), env_backend="cpu")
    w.reset()
    obs, rew, done, _ = w.step({a: 1 for a in range(5)})
    assert len(obs) == 5 and not done["__all__"]


def test_gpu_backends_need_a_cuda_source_before_touching_the_gpu():
    registrar = EnvironmentRegistrar()  # nothing registered
    with pytest.raises(ConfigError, match="add_cuda_env_src_path"):
        EnvWrapper(CUDALegacyCrowd(seed=1), num_envs=2, env_backend="pycuda", env_registrar=registrar)
    with pytest.raises(ConfigError, match="has no Numba step"):  # the numba backend needs a Numba module
        EnvWrapper(CUDALegacyCrowd(seed=1), env_backend="numba", env_registrar=registrar)
    registrar.add_cuda_env_src_path("LegacyCrowd", "some.numba_module", env_backend="numba")
    with pytest.raises(DeviceUnavailableError, match="numba"):  # neither a GPU nor Numba's CUDA simulator here
        EnvWrapper(CUDALegacyCrowd(seed=1), env_backend="numba", env_registrar=registrar)
    with pytest.raises(ConfigError, match="CUDAEnvironmentContext"):
        EnvWrapper(LegacyCrowd(seed=1), env_backend="pycuda")
    with pytest.raises(ConfigError, match="testing_bin_filename"):
        EnvWrapper(CUDALegacyCrowd(seed=1), env_backend="pycuda", testing_mode=True, testing_bin_filename="x.so")


def test_env_name_and_registrar_build_the_env():
    registrar = EnvironmentRegistrar()
    registrar.add(env_backend="cpu")(LegacyCrowd)
    w = EnvWrapper(env_name="LegacyCrowd", env_config={"num_agents": 3, "seed": 0}, env_registrar=registrar)
    assert isinstance(w.env, LegacyCrowd) and w.n_agents == 3
    with pytest.raises(ConfigError, match="env_name"):
        EnvWrapper()


def test_vectorised_env_with_one_replica_also_steps_gym_style():
    from example_envs.tag_gridworld.tag_gridworld import TagGridWorld, compute_observations

    env = TagGridWorld(num_taggers=2, grid_length=4, episode_length=3)
    w = EnvWrapper(env, num_envs=1, env_backend="cpu")
    obs = w.reset()
    assert set(obs) == {0, 1, 2} and obs[0].shape == (env.obs_dim,)
    o, r, d, info = w.step({0: 1, 1: 3, 2: 0})
    dm = w.cuda_data_manager
    x, y = dm.pull_data_from_device("loc_x"), dm.pull_data_from_device("loc_y")
    np.testing.assert_array_equal(x[0], [3, 2, 0])
    np.testing.assert_array_equal(y[0], [2, 3, 0])
    expected = compute_observations(x, y, np.ones(1, np.int32), 3, 4, True)[0]
    for a in range(3):
        np.testing.assert_array_equal(o[a], expected[a])
    assert r[0] == np.float32(-0.01) and r[2] == np.float32(0.01) and d == {"__all__": False} and info == {}
    w.step({0: 0, 1: 0, 2: 0})
    _, _, d, _ = w.step({0: 0, 1: 0, 2: 0})
    assert d["__all__"]
    again = w.reset()  # a later reset also returns the observations (one replica on the cpu)
    np.testing.assert_array_equal(again[0], obs[0])
    with pytest.raises(ConfigError, match="one replica"):
        w2 = EnvWrapper(TagGridWorld(num_taggers=2), num_envs=2, env_backend="cpu")
        w2.reset()
        w2.step({0: 1, 1: 1, 2: 1})


def test_actions_array_is_written_before_a_2_7_1_step_without_arguments():
    """2.7.1 calls env.step() with no arguments on the device; actions passed to step_all_envs go
    to the sampled_actions placeholder first (here a vectorised env on the cpu backend)."""
    from example_envs.tag_gridworld.tag_gridworld import TagGridWorld

    w = EnvWrapper(TagGridWorld(num_taggers=2, grid_length=4), num_envs=3, env_backend="cpu")
    w.reset_all_envs()
    actions = np.ones((3, 3, 1), np.int32)
    assert w.step_all_envs(actions) is None
    np.testing.assert_array_equal(w.cuda_data_manager.pull_data_from_device(Constants.ACTIONS), actions)


# ----------------------------------------------------------------------------- example-env names
def test_2_7_1_example_env_import_paths():
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from example_envs.tag_gridworld.tag_gridworld import CUDATagGridWorld, CUDATagGridWorldWithResetPool, TagGridWorld

    assert issubclass(CUDATagGridWorld, TagGridWorld) and CUDATagGridWorld.name == "TagGridWorld"
    assert CUDATagGridWorld(num_taggers=3).step_function_name == "CudaTagGridWorldStep"
    pool_env = CUDATagGridWorldWithResetPool(num_taggers=2, grid_length=6)
    assert pool_env.reset_pool_size == 5 and pool_env.name == "TagGridWorld"
    assert TagContinuous.name == "TagContinuous"
    for module, names in {
        "example_envs.single_agent.base": ["SingleAgentEnv", "map_to_single_agent", "get_action_for_single_agent"],
        "example_envs.single_agent.classic_control.cartpole.cartpole": ["ClassicControlCartPoleEnv", "CUDAClassicControlCartPoleEnv"],
        "example_envs.single_agent.classic_control.acrobot.acrobot": ["ClassicControlAcrobotEnv", "CUDAClassicControlAcrobotEnv"],
        "example_envs.single_agent.classic_control.mountain_car.mountain_car": [
            "ClassicControlMountainCarEnv", "CUDAClassicControlMountainCarEnv"],
        "example_envs.single_agent.classic_control.continuous_mountain_car.continuous_mountain_car": [
            "ClassicControlContinuousMountainCarEnv", "CUDAClassicControlContinuousMountainCarEnv"],
        "example_envs.single_agent.classic_control.pendulum.pendulum": ["ClassicControlPendulumEnv", "CUDAClassicControlPendulumEnv"],
    }.items():
        mod = importlib.import_module(module)
        for name in names:
            assert hasattr(mod, name), f"{module}.{name}"


TAG_CONTINUOUS_2_7_1_PARAMS = [
    "num_taggers", "num_runners", "grid_length", "episode_length", "starting_location_x", "starting_location_y",
    "starting_directions", "seed", "max_speed", "skill_level_runner", "skill_level_tagger", "max_acceleration",
    "min_acceleration", "max_turn", "min_turn", "num_acceleration_levels", "num_turn_levels", "edge_hit_penalty",
    "use_full_observation", "num_other_agents_observed", "tagging_distance", "tag_reward_for_tagger",
    "step_penalty_for_tagger", "tag_penalty_for_runner", "step_reward_for_runner", "end_of_game_reward_for_runner",
    "runner_exits_game_after_tagged", "env_backend",
]


def test_tag_continuous_takes_2_7_1_keywords_in_order():
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    params = list(inspect.signature(TagContinuous.__init__).parameters)[1:]
    assert params[: len(TAG_CONTINUOUS_2_7_1_PARAMS)] == TAG_CONTINUOUS_2_7_1_PARAMS
    env = TagContinuous(num_taggers=5, num_runners=20, tagging_distance=0.0, seed=3, env_backend="numba")
    taggers, runners = list(env.taggers), list(env.runners)
    assert len(taggers) == 5 and len(runners) == 20 and sorted(taggers + runners) == list(range(25))
    assert all(env.agent_types[i] != env.agent_types[j] for i in taggers for j in runners)
    assert env.env_backend == "numba"  # the wrapper picks the Numba step (NumbaTagContinuousStep)


def test_tag_gridworld_2_7_1_attributes():
    from example_envs.tag_gridworld.tag_gridworld import TagGridWorld

    env = TagGridWorld(num_taggers=2, grid_length=6, starting_location_x=np.array([3.0, 3.0, 0.0]),
                       starting_location_y=[3, 3, 0])
    np.testing.assert_array_equal(env.step_actions, [[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]])
    assert env.starting_location_x.dtype == np.int32
    with pytest.raises(ConfigError):
        TagGridWorld(num_taggers=2, starting_location_x=[0.5, 1, 2], starting_location_y=[0, 1, 2])


def test_classic_control_takes_2_7_1_positional_order():
    from example_envs.single_agent.classic_control.cartpole.cartpole import CUDAClassicControlCartPoleEnv
    from example_envs.single_agent.classic_control.pendulum.pendulum import ClassicControlPendulumEnv

    env = CUDAClassicControlCartPoleEnv(200, "numba", 0, 7)
    assert (env.episode_length, env.env_backend, env.reset_pool_size, env.seed) == (200, "numba", 0, 7)
    assert env.agents == {0: True} and env.num_agents == 1 and env.name == "ClassicControlCartPoleEnv"
    assert env.step_function_name == "NumbaClassicControlCartPoleEnvStep"
    pend = ClassicControlPendulumEnv(episode_length=50, env_backend="cpu", reset_pool_size=16, seed=1)
    assert pend.reset_pool_size == 16


def test_single_agent_env_base_for_a_user_env():
    from example_envs.single_agent.base import SingleAgentEnv, get_action_for_single_agent, map_to_single_agent

    class Counter(SingleAgentEnv):
        name = "Counter"

        def __init__(self, episode_length=4, env_backend="cpu", reset_pool_size=0, seed=None):
            super().__init__(episode_length, env_backend, reset_pool_size, seed)
            self.action_space = map_to_single_agent(gym_standin.Discrete(2))

        def reset(self):
            self.timestep = 0
            return map_to_single_agent(np.zeros(1, np.float32))

        def step(self, action=None):
            self.timestep += 1
            a = get_action_for_single_agent(action)
            return (map_to_single_agent(np.full(1, a, np.float32)), map_to_single_agent(1.0),
                    {"__all__": self.timestep >= self.episode_length}, {})

    w = EnvWrapper(Counter(), env_backend="cpu")
    assert w.n_agents == 1 and w.env.agents == {0: True}
    w.reset()
    assert w.step({0: 1})[0][0][0] == 1.0
    with pytest.raises(ConfigError, match="single-agent"):
        get_action_for_single_agent({0: 1, 1: 0})


def test_constants_match_2_7_1():
    assert (Constants.OBSERVATIONS, Constants.ACTIONS, Constants.REWARDS, Constants.DONE_FLAGS,
            Constants.PROCESSED_OBSERVATIONS, Constants.ACTION_MASK) == (
        "observations", "sampled_actions", "rewards", "done_flags", "processed_observations", "action_mask")


def test_crowd_fixture_interaction():
    """The fixture's game really couples agents: crowding needs every agent's new position."""
    x = np.array([[0, 1, 1]], np.int32)
    y = np.array([[0, 0, 0]], np.int32)
    obs, rew, done = crowd_step(x, y, np.array([[1, 0, 2]]), np.zeros(1, np.int32), 3, 0.5, 1.0, 2)
    np.testing.assert_array_equal(x, [[1, 1, 0]])
    np.testing.assert_array_equal(rew, [[-0.5, -0.5, 0.0]])
    np.testing.assert_allclose(obs[0, :, 4], [1 / 3, 1 / 3, 0])
    assert not done[0]


def test_cuda_step_launches_on_the_managers_stream():
    """A 2.7.1 step calls self.cuda_step(*args, block=, grid=) with no stream: it must launch on the
    function manager's current stream (the trainer's CUDA-graph capture sets one)."""
    calls = []

    class Kernel:
        def __call__(self, *args, block=None, grid=None, stream=None):
            calls.append((args, block, grid, stream))

    class FakeManager:
        has_kernels = True
        stream = None
        block, grid = (5, 1, 1), (3, 1)

        def initialize_functions(self, names):
            self.names = names

        def get_function(self, name):
            return Kernel()

    fm = FakeManager()
    env = CUDALegacyCrowd(seed=0)
    assert env.initialize_step_function_context(None, fm, lambda args: list(args)) is True
    assert fm.names == ["CudaLegacyCrowdStep"]
    env.cuda_step(1, 2, block=fm.block, grid=fm.grid)
    fm.stream = "capture-stream"
    env.cuda_step(1, 2, block=fm.block, grid=fm.grid)
    env.cuda_step(1, 2, block=fm.block, grid=fm.grid, stream="mine")
    assert [c[3] for c in calls] == [None, "capture-stream", "mine"]
    assert calls[0][:3] == ((1, 2), (5, 1, 1), (3, 1))
