"""The Numba backend on a CPU, through Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

What this proves: the Numba kernels' indexing and arithmetic (the simulator runs their Python bodies
thread by thread), that they read and write the data store's tensors in place, the launch-constant
modules made per configuration, the wiring of EnvWrapper(env_backend="numba") with the services, and
2.7.1's Numba manager API. What it cannot prove: compilation by numba-cuda, GPU memory sharing through
``__cuda_array_interface__``, streams, CUDA graphs or speed (``tests/gpu/test_numba_backend_gpu.py``).

Each test runs in a subprocess: the simulator is chosen when numba.cuda is first imported, and this
process must stay free to import the real numba.cuda (GPU tests collected in the same session).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba-cuda is not installed (pip install -e '.[numba]')")


def run_simulated(code: str) -> str:
    """Run ``code`` under the CUDA simulator with this checkout first on the path; its stdout."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_store_tensors_are_shared_in_place_with_numba_kernels():
    out = run_simulated("""
        import numpy as np
        from numba import cuda
        from warp_drive.vocab.data_feed import DataFeed
        from warp_drive.managers.numba_data_manager import NumbaDataManager
        from warp_drive.numba_backend.runtime import NumbaKernel

        @cuda.jit
        def scale(x, s):
            e, a = cuda.blockIdx.x, cuda.threadIdx.x
            if a < x.shape[1]:
                x[e, a] = x[e, a] * s

        dm = NumbaDataManager(num_agents=3, num_envs=2, episode_length=4)
        feed = DataFeed()
        feed.add_data("x", np.arange(6, dtype=np.float32).reshape(2, 3), save_copy_and_apply_at_reset=True)
        dm.push_data_to_device(feed, torch_accessible=True)
        tensor = dm.data_on_device_via_torch("x")
        ptr = tensor.data_ptr()
        NumbaKernel("scale", scale, True)[2, 3](dm.device_data("x"), np.float32(2.0))
        assert tensor.tolist() == [[0, 2, 4], [6, 8, 10]], tensor          # torch sees the kernel's writes
        tensor += 1                                                          # the kernel sees torch's
        scale[2, 3](dm.numba_array("x"), np.float32(10.0))
        assert dm.pull_data_from_device("x").tolist() == [[10, 30, 50], [70, 90, 110]]
        dm.reset_device("x")
        assert dm.data_on_device_via_torch("x").data_ptr() == ptr            # re-upload in place
        assert dm.pull_data_from_device("x").tolist() == [[0, 1, 2], [3, 4, 5]]
        print("shared")
    """)
    assert "shared" in out


def test_cartpole_numba_step_matches_its_numpy_twin_through_env_wrapper():
    out = run_simulated("""
        import numpy as np
        from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
        from warp_drive.env.env_wrapper import EnvWrapper
        from warp_drive.managers.numba_function_manager import NumbaFunctionManager

        E = 4
        numba = EnvWrapper(ClassicControlCartPoleEnv(episode_length=30, seed=3), num_envs=E, env_backend="numba")
        cpu = EnvWrapper(ClassicControlCartPoleEnv(episode_length=30, seed=3), num_envs=E, env_backend="cpu")
        assert isinstance(numba.cuda_function_manager, NumbaFunctionManager)
        assert numba.env.step_function_name == "NumbaClassicControlCartPoleEnvStep"
        numba.reset_all_envs(); cpu.reset_all_envs()
        rng = np.random.default_rng(0)
        dones = 0
        for t in range(40):
            actions = rng.integers(0, 2, size=(E, 1, 1)).astype(np.int32)
            numba.step_all_envs(actions); cpu.step_all_envs(actions)
            for name in ("state", "observations", "rewards", "_done_", "_truncated_", "_timestep_"):
                a = numba.cuda_data_manager.pull_data_from_device(name)
                b = cpu.cuda_data_manager.pull_data_from_device(name)
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-6, err_msg=f"step {t}: {name}")
            dones += int(cpu.cuda_data_manager.pull_data_from_device("_done_").sum())
            numba.reset_only_done_envs(); cpu.reset_only_done_envs()
        assert dones > 0  # resets were exercised
        print("consistent")
    """)
    assert "consistent" in out


CLASSIC_CONTROL = {  # env module:class, constructor arguments, action draw (rng, E) -> (E, 1, 1)
    "acrobot.acrobot:ClassicControlAcrobotEnv": (
        "episode_length=15, seed=5", "rng.integers(-1, 4, size=(E, 1, 1)).astype(np.int32)"),
    "mountain_car.mountain_car:ClassicControlMountainCarEnv": (
        "episode_length=15, seed=6, goal_position=-0.45", "rng.integers(0, 3, size=(E, 1, 1)).astype(np.int32)"),
    "continuous_mountain_car.continuous_mountain_car:ClassicControlContinuousMountainCarEnv": (
        "episode_length=15, seed=7, goal_position=-0.45", "rng.uniform(-1.3, 1.3, size=(E, 1, 1)).astype(np.float32)"),
    "pendulum.pendulum:ClassicControlPendulumEnv": (
        "episode_length=15, seed=8", "rng.uniform(-2.5, 2.5, size=(E, 1, 1)).astype(np.float32)"),
}


@pytest.mark.parametrize("env", sorted(CLASSIC_CONTROL), ids=lambda e: e.split(".")[0])
def test_classic_control_numba_steps_match_their_numpy_twins(env):
    """Each classic-control Numba step against its NumPy twin: 40 steps with resets, every array."""
    module, cls = env.split(":")
    kwargs, draw = CLASSIC_CONTROL[env]
    out = run_simulated(f"""
        import numpy as np
        from example_envs.classic_control.{module} import {cls} as Env
        from warp_drive.env.env_wrapper import EnvWrapper

        E = 6
        numba = EnvWrapper(Env({kwargs}), num_envs=E, env_backend="numba")
        cpu = EnvWrapper(Env({kwargs}), num_envs=E, env_backend="cpu")
        assert numba.env.step_function_name == "Numba{cls}Step"
        numba.reset_all_envs(); cpu.reset_all_envs()
        rng = np.random.default_rng(1)
        dones = set()
        for t in range(40):
            actions = {draw}
            numba.step_all_envs(actions); cpu.step_all_envs(actions)
            for name in ("state", "observations", "rewards", "_done_", "_truncated_", "_timestep_"):
                a = numba.cuda_data_manager.pull_data_from_device(name)
                b = cpu.cuda_data_manager.pull_data_from_device(name)
                assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
                np.testing.assert_array_equal(a, b, err_msg=f"step {{t}}: {{name}}")
            dones |= set(cpu.cuda_data_manager.pull_data_from_device("_done_").tolist())
            numba.reset_only_done_envs(); cpu.reset_only_done_envs()
        assert 1 in dones  # resets were exercised
        print("consistent", sorted(dones))
    """)
    assert "consistent" in out


TAG_CONTINUOUS_STATE = ("loc_x", "loc_y", "speed", "direction", "acceleration", "still_in_the_game",
                        "edge_hit_reward_penalty", "tag_counts", "num_runners")
TAG_ENVS = {  # env module:class, constructor arguments, action draw (rng, E) -> (E, N, heads), arrays compared
    "tag_gridworld.tag_gridworld:TagGridWorld-full": (
        "num_taggers=3, grid_length=3, episode_length=12, seed=2, use_full_observation=True",
        "rng.integers(-1, 6, size=(E, 4, 1)).astype(np.int32)",
        ("loc_x", "loc_y", "num_taggers_on_runner")),
    "tag_gridworld.tag_gridworld:TagGridWorld-partial": (
        "num_taggers=3, grid_length=3, episode_length=12, seed=3, use_full_observation=False",
        "rng.integers(0, 5, size=(E, 4, 1)).astype(np.int32)",
        ("loc_x", "loc_y", "num_taggers_on_runner")),
    "tag_continuous.tag_continuous:TagContinuous-full": (
        "num_taggers=2, num_runners=3, grid_length=3.0, episode_length=12, seed=4, tagging_distance=0.25, "
        "max_acceleration=0.5, num_acceleration_levels=3, num_turn_levels=3, edge_hit_penalty=-0.5, "
        "step_penalty_for_tagger=-0.1, use_full_observation=True",
        "rng.integers(-1, 5, size=(E, 5, 2)).astype(np.int32)", TAG_CONTINUOUS_STATE),
    "tag_continuous.tag_continuous:TagContinuous-partial": (
        "num_taggers=2, num_runners=4, grid_length=3.0, episode_length=12, seed=5, tagging_distance=0.2, "
        "num_acceleration_levels=3, num_turn_levels=3, use_full_observation=False, num_other_agents_observed=3",
        "rng.integers(0, 4, size=(E, 6, 2)).astype(np.int32)", TAG_CONTINUOUS_STATE),
    "tag_continuous.tag_continuous:TagContinuous-stay": (
        "num_taggers=3, num_runners=2, grid_length=2.0, episode_length=12, seed=6, tagging_distance=0.3, "
        "runner_exits_game_after_tagged=False, use_full_observation=False, num_other_agents_observed=2",
        "rng.integers(0, 11, size=(E, 5, 2)).astype(np.int32)", TAG_CONTINUOUS_STATE),
}


def compare_numba_with_numpy_twin(module: str, cls: str, kwargs: str, draw: str, names: tuple, steps: int = 40,
                                  num_envs: int = 3) -> str:
    """Run ``steps`` steps (with resets) of an env on the numba backend (simulator) and on its NumPy
    twin; every named array, observations, rewards and episode flags must be equal after each step."""
    return run_simulated(f"""
        import numpy as np
        from example_envs.{module} import {cls} as Env
        from warp_drive.env.env_wrapper import EnvWrapper

        E = {num_envs}
        numba = EnvWrapper(Env({kwargs}), num_envs=E, env_backend="numba")
        cpu = EnvWrapper(Env({kwargs}), num_envs=E, env_backend="cpu")
        assert numba.env.step_function_name == "Numba{cls}Step"
        numba.reset_all_envs(); cpu.reset_all_envs()
        rng = np.random.default_rng(1)
        resets = 0
        for t in range({steps}):
            actions = {draw}
            numba.step_all_envs(actions); cpu.step_all_envs(actions)
            for name in {names!r} + ("observations", "rewards", "_done_", "_truncated_", "_timestep_"):
                a = numba.cuda_data_manager.pull_data_from_device(name)
                b = cpu.cuda_data_manager.pull_data_from_device(name)
                assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
                np.testing.assert_array_equal(a, b, err_msg=f"step {{t}}: {{name}}")
            resets += int((cpu.cuda_data_manager.pull_data_from_device("_done_") > 0).sum())
            numba.reset_only_done_envs(); cpu.reset_only_done_envs()
        assert resets > 0
        print("consistent", resets)
    """)


@pytest.mark.parametrize("env", sorted(TAG_ENVS))
def test_tag_numba_steps_match_their_numpy_twins(env):
    path, _, _ = env.partition("-")
    module, cls = path.split(":")
    kwargs, draw, names = TAG_ENVS[env]
    assert "consistent" in compare_numba_with_numpy_twin(module, cls, kwargs, draw, names)


def test_271_function_manager_api_dummy_env_log_and_reset():
    """2.7.1's Numba unit-test flow (test_function_manager.py, shortened): dynamic_import_numba, the
    DummyEnv kernel launched as kernel[grid, block], the log controller and the resetter."""
    out = run_simulated("""
        import numpy as np
        from warp_drive.managers.numba_managers.numba_data_manager import NumbaDataManager
        from warp_drive.managers.numba_managers.numba_function_manager import (
            NumbaEnvironmentReset, NumbaFunctionManager, NumbaLogController)
        from warp_drive.utils.data_feed import DataFeed

        dm = NumbaDataManager(num_agents=5, num_envs=2, episode_length=2)
        fm = NumbaFunctionManager(num_agents=5, num_envs=2)
        fm.dynamic_import_numba(env_name="DummyEnv", template_header_file="template_env_config.txt",
                                template_runner_file="template_env_runner.txt")
        log, resetter = NumbaLogController(function_manager=fm), NumbaEnvironmentReset(function_manager=fm)
        fm.initialize_functions(["testkernel"])
        assert "reset_when_done_2d" in fm.numba_function_names  # 2.7.1's Numba core, loaded by default
        data = DataFeed()
        data.add_data("X", [[0.1, 0.2, 0.3, 0.4, 0.5], [0.6, 0.7, 0.8, 0.9, 1.0]],
                      save_copy_and_apply_at_reset=True, log_data_across_episode=True)
        data.add_data("multiplier", 2.0)
        dm.push_data_to_device(data)
        dm.push_data_to_device({"Y": {"data": np.array([[6, 7, 8, 9, 10], [1, 2, 3, 4, 5]]), "attributes": {}},
                                "actions": {"data": np.zeros((2, 5, 3), np.int32), "attributes": {}}},
                               torch_accessible=True)
        log.reset_log(data_manager=dm, env_id=0)
        kernel = fm.get_function("testkernel")
        for t in (1, 2):
            resetter.reset_when_done(dm)
            kernel[fm.grid, fm.block](dm.device_data("X"), dm.device_data("Y"), dm.device_data("_done_"),
                                      dm.device_data("actions"), dm.device_data("multiplier"), np.int32(100),
                                      np.int32(t), dm.meta_info("episode_length"))
            log.update_log(data_manager=dm, step=t)
        logged = log.fetch_log(data_manager=dm, names=["X"])["X_for_log"]
        assert abs(logged[1].mean() - 0.15) < 1e-6 and abs(logged[2].mean() - 0.075) < 1e-6
        assert list(dm.pull_data_from_device("_done_")) == [1, 1]
        assert dm.pull_data_from_device("actions")[:, :, 2].tolist() == [[2] * 5] * 2
        resetter.reset_when_done(dm)
        assert list(dm.pull_data_from_device("_done_")) == [0, 0]
        assert abs(dm.pull_data_from_device("X")[1].mean() - 0.8) < 1e-6
        print("api")
    """)
    assert "api" in out


def test_launch_constants_follow_each_configuration():
    """A second configuration in one process gets its own constants (2.7.1 kept the first: defect 13)."""
    out = run_simulated("""
        from warp_drive.managers.numba_function_manager import NumbaFunctionManager
        runners = []
        for agents in (5, 7):
            fm = NumbaFunctionManager(num_agents=agents, num_envs=2)
            runners.append(fm.load_env_module("example_envs.dummy_env.test_step_numba"))
        print([r.wkNumberAgents for r in runners], [r.testkernel.py_func.__globals__["wkNumberAgents"] for r in runners])
    """)
    assert "[5, 7] [5, 7]" in out


def test_numba_sampler_categorical_and_ou_noise():
    out = run_simulated("""
        import numpy as np, torch
        from warp_drive.managers.numba_data_manager import NumbaDataManager
        from warp_drive.managers.numba_function_manager import NumbaFunctionManager
        from warp_drive.services.numba_services import NumbaSampler

        E, A = 200, 5
        dm = NumbaDataManager(num_agents=A, num_envs=E, episode_length=1)
        fm = NumbaFunctionManager(num_agents=A, num_envs=E)
        sampler = NumbaSampler(function_manager=fm)
        sampler.init_random(seed=7)
        feed = {"cat": {"data": np.zeros((E, A, 1), np.int32), "attributes": {}},
                "ou": {"data": np.zeros((E, A, 1), np.float32), "attributes": {}}}
        dm.push_data_to_device(feed, torch_accessible=True)
        sampler.register_actions(dm, "cat", 3)
        sampler.register_actions(dm, "ou", 1, is_deterministic=True)
        probs = torch.tensor([0.2, 0.0, 0.8]).expand(E, A, 3).contiguous()
        sampler.sample(dm, probs, "cat")
        cat = dm.pull_data_from_device("cat")
        assert set(np.unique(cat)) <= {0, 2} and 0.7 < (cat == 2).mean() < 0.9
        mean = torch.full((E, A, 1), 0.5)
        damping, stddev = 0.15, 0.2
        draws = []
        for _ in range(300):
            sampler.sample(dm, mean, "ou", damping=damping, stddev=stddev)
            draws.append(dm.pull_data_from_device("ou").ravel().copy())
        draws = np.array(draws[100:])
        theory = stddev / (1 - (1 - damping) ** 2) ** 0.5
        assert abs(draws.mean() - 0.5) < 0.01 and abs(draws.std(axis=1).mean() - theory) < 0.01, draws.std()
        sampler.sample(dm, mean, "ou", scale=0.0)
        assert np.allclose(dm.pull_data_from_device("ou"), 0.5)
        print("sampled")
    """)
    assert "sampled" in out


def test_errors_name_the_fix():
    out = run_simulated("""
        import numpy as np
        from warp_drive.env.env_wrapper import EnvWrapper
        from warp_drive.errors import ConfigError, DataNotFoundError, KernelSignatureError
        from warp_drive.managers.numba_function_manager import NumbaFunctionManager
        from example_envs.classic_control.base import ClassicControlEnv
        from example_envs.classic_control.acrobot.acrobot import ClassicControlAcrobotEnv

        class NoNumbaStep(ClassicControlAcrobotEnv):
            name = "NoNumbaStep"
            numba_source = None

        try:
            EnvWrapper(NoNumbaStep(seed=1), num_envs=2, env_backend="numba")
        except ConfigError as err:
            assert "numba_source" in str(err) and "env_backend='pycuda'" in str(err), err
        else:
            raise AssertionError("no error for an env without a Numba step")
        fm = NumbaFunctionManager(num_agents=5, num_envs=2)
        fm.load_env_module("example_envs.dummy_env.test_step_numba")
        try:
            fm.check_arguments("testkernel", ["X", "Y"], None)
        except KernelSignatureError as err:
            assert "takes 8 arguments" in str(err), err
        try:
            fm.initialize_functions(["nokernel"])
        except DataNotFoundError as err:
            assert "testkernel" in str(err), err
        print("errors")
    """)
    assert "errors" in out


def test_importing_warp_drive_and_the_cuda_extra_need_no_numba():
    proc = subprocess.run([sys.executable, "-c", "import sys, warp_drive, warp_drive.env.env_wrapper, "
                           "warp_drive.managers.numba_managers.numba_function_manager; print('numba' in sys.modules)"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.strip() == "False", proc.stderr[-2000:]
    tree = ast.parse((ROOT / "setup.py").read_text())
    extras = next(ast.literal_eval(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call)
                  for k in n.keywords if k.arg == "extras_require")
    assert not any("numba" in r for r in extras["cuda"])
    assert any(r.startswith("numba-cuda") for r in extras["numba"])


def test_numba_build_check_compiles_registered_steps_or_says_it_cannot():
    """``check_build --numba`` without a GPU: PTX for sm_90 where NVIDIA's NVVM/NVRTC libraries are
    installed, else a loud NOT CHECKED (exit 1), never a silent success."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"} | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "warp_drive.testing.numba_build", "--arch", "sm_90", "--envs",
                           "example_envs"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    line = next(l for l in proc.stdout.splitlines() if l.startswith("NumbaClassicControlCartPoleEnvStep"))
    if "NOT CHECKED" in line:
        assert proc.returncode == 1 and "NVRTC" in line
    else:
        assert "ok (" in line and proc.returncode == 0, proc.stdout + proc.stderr


def test_training_runs_the_numba_steps_from_a_run_config_and_the_cli(tmp_path):
    """``trainer.env_backend: numba`` builds the envs on the numba backend (their Numba steps, the CUDA C
    services' twins under the simulator) and the training loop runs unchanged; the CLI keeps a config's
    ``numba`` when ``--backend`` is not given, and ``--backend numba`` picks it."""
    out = run_simulated(f"""
        from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
        from warp_drive.cli import train as cli
        from warp_drive.config import load_run_config
        from warp_drive.managers.numba_function_manager import NumbaFunctionManager
        from warp_drive.training.run.build import build_trainer

        raw = {{"name": "single_cartpole", "env": {{"episode_length": 10, "seed": 3, "fresh_start_states": True}},
               "policy": {{"shared": {{"to_train": True, "num_epochs": 2}}}},
               "trainer": {{"num_envs": 3, "train_batch_size": 30, "num_episodes": 6, "env_backend": "numba"}}}}
        config = load_run_config(raw)
        assert config.trainer.env_backend == "numba"
        trainer = build_trainer(config, ClassicControlCartPoleEnv, backend=config.trainer.env_backend,
                                results_dir={str(tmp_path / "api")!r}, verbose=False)
        try:
            assert isinstance(trainer.engine.env_wrapper.cuda_function_manager, NumbaFunctionManager)
            assert trainer.engine.env_wrapper.env.step_function_name == "NumbaClassicControlCartPoleEnvStep"
            trainer.train()
            assert trainer.engine.iteration == 2, trainer.engine.iteration
        finally:
            trainer.graceful_close()
        plan = cli.plan_run(cli.parse_args(["--env", "cartpole", "--backend", "numba", "--results_dir",
                                            {str(tmp_path / "plan")!r}]), announce=False)
        assert plan.backend == "numba" and plan.config.trainer.env_backend == "numba"
        print("trained")
    """)
    assert "trained" in out
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "cartpole",
                           "--results_dir", str(tmp_path / "cli"), "--eval_episodes", "0", "trainer.env_backend=numba",
                           "env.episode_length=10", "trainer.num_envs=3", "trainer.train_batch_size=30",
                           "trainer.num_episodes=6"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "done: iterations 1-2 of 2" in proc.stdout, proc.stdout
    saved = json.loads((tmp_path / "cli" / "run_config.json").read_text())
    assert saved["trainer"]["env_backend"] == "numba"


def test_271_numba_script_and_numba_utils_misc_paths(tmp_path):
    """2.7.1's ``example_training_script_numba`` trains on the envs' Numba steps (the simulator stands in
    for the GPU), and ``warp_drive.utils.numba_utils.misc`` makes ``env_config`` / ``env_runner`` in memory."""
    out = run_simulated(f"""
        import sys
        from warp_drive.errors import ConfigError
        from warp_drive.training.scripts import example_training_script_numba as script
        from warp_drive.utils.numba_utils import misc

        assert script.main.__name__ == "main_numba"
        assert script.parse_args(["--env", "single_cartpole"]).env == "single_cartpole"
        raw = {{"name": "single_cartpole", "env": {{"episode_length": 10, "seed": 4}},
               "policy": {{"shared": {{"to_train": True, "num_epochs": 1}}}},
               "trainer": {{"num_envs": 2, "train_batch_size": 20, "num_episodes": 4, "env_backend": "pycuda"}},
               "saving": {{"basedir": {str(tmp_path)!r}, "name": "n", "tag": "t"}}}}
        script.setup_trainer_and_train(raw, results_directory="run", verbose=True)

        assert misc.get_default_env_directory("TagContinuous") == "example_envs.tag_continuous.tag_continuous_step_numba"
        assert misc.get_default_env_directory("YOUR_ENVIRONMENT") is None
        misc.update_env_header("template_env_config.txt", num_envs=3, num_agents=4, blocks_per_env=1)
        misc.check_env_header(num_envs=3, num_agents=4)
        try:
            misc.check_env_header(num_envs=3, num_agents=5)
        except ConfigError as err:
            assert "wkNumberAgents" in str(err), err
        else:
            raise AssertionError("a wrong header passed")
        misc.update_env_runner("template_env_runner.txt", env_name="DummyEnv")
        runner = sys.modules["warp_drive.numba_includes.env_runner"]
        assert runner.testkernel.py_func.__globals__["wkNumberAgents"] == 4 and hasattr(runner, "reset_when_done_2d")
        try:
            misc.update_env_runner(env_name="NoSuchEnv")
        except ConfigError as err:
            assert "add_cuda_env_src_path" in str(err), err
        print("paths")
    """)
    assert "paths" in out and "Training steps/s" in out, out
    saved = json.loads((tmp_path / "n" / "t" / "run" / "run_config.json").read_text())
    assert saved["trainer"]["env_backend"] == "numba"
