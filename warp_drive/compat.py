"""Where 2.7.1 code finds things here: the table of compatibility import paths.

Every module listed in :data:`COMPAT_MODULES` exists only so that code written for Salesforce
WarpDrive 2.7.1 imports unchanged. Each is a thin re-export of the implementation named in its
docstring (which starts with ``2.7.1 compatibility path:``); none holds logic of its own.

:data:`MOVED_MODULES` lists this project's own former module paths (of the command-line programs, now
in :mod:`warp_drive.cli`, of the placeholders, and of the modules that moved to make each folder one floor
of ``docs/architecture.md``), kept the same way (docstring ``Former path:``).

A module of the bottom floors that moved whole keeps its old path as an *alias*: the old path's file calls
:func:`alias`, so both paths give the one module object (``monkeypatch`` and ``mock.patch`` of either reach
the code). :data:`MOVED_ALIASES` lists the former paths of ``warp_drive/training/``'s flat modules, moved whole
into ``engine/`` and ``run/``, and of the A2C/PPO modules moved into ``algorithms/actor_critic/``: no file
stands at those old paths; importing one gives the *same module object* as the new path
(:func:`install_moved_aliases`, called by ``warp_drive.training``).

No module but these re-exports imports a path of either table (``tests/cpu/test_import_structure.py``).
A re-export whose targets must load late (a ``python -m`` entry point that installs signal handlers before
the heavy imports) declares them with :func:`lazy_exports`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def alias(name: str, module: ModuleType) -> None:
    """Makes the module path ``name`` (a former path: its file passes its own ``__name__``) the module
    ``module`` itself: ``sys.modules[name]`` becomes ``module``, and the import system hands that object
    to the importer (and sets it as the parent package's attribute). Run as ``python -m <former path>``,
    the file runs ``module.main()`` and exits with its status instead."""
    if name == "__main__":
        raise SystemExit(module.main())
    sys.modules[name] = module


def lazy_exports(module: str, sources: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for module ``module`` re-exporting ``sources`` (name -> the module
    that defines it), each imported on first use (PEP 562) and then kept in the module's namespace."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(sources[name]), name)
        setattr(importlib.import_module(module), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(module)), *sources})

    return __getattr__, __dir__, sorted(sources, key=str.lower)

#: module path -> what it re-exports (one line)
COMPAT_MODULES: dict[str, str] = {
    "warp_drive.training.pytorch_lightning": "WarpDriveModule, CUDACallback, PerfStatsCallback (+ data module, WarpDriveDataset) bound to pytorch_lightning (tutorial 7)",
    "warp_drive.env_cpu_gpu_consistency_checker": "the module warp_drive.testing.consistency itself (EnvironmentCPUvsGPU, generate_random_actions; an alias)",
    "warp_drive.utils.gpu_environment_context": "CUDAEnvironmentContext, the env base class (warp_drive.env.context)",
    "warp_drive.utils.data_feed": "DataFeed (warp_drive.vocab.data_feed)",
    "warp_drive.utils.constants": "Constants, the reserved data names (warp_drive.vocab.constants)",
    "warp_drive.utils.env_registrar": "EnvironmentRegistrar, env_registrar (warp_drive.vocab.registrar)",
    "warp_drive.training.utils.data_loader": "create_and_push_data_placeholders, get_obs, get_flattened_obs_size (warp_drive.compat271.data_loader, warp_drive.env.placeholders)",
    "warp_drive.managers.pycuda_managers": "package of the 2.7.1 PyCUDA manager modules (warp_drive.managers)",
    "warp_drive.managers.pycuda_managers.pycuda_data_manager": "PyCUDADataManager, CudaTensorHolder, CUDADataManager (warp_drive.managers.pycuda_data_manager)",
    "warp_drive.managers.pycuda_managers.pycuda_function_manager": "PyCUDAFunctionManager, PyCUDASampler, PyCUDAEnvironmentReset, PyCUDALogController, CUDAFunctionFeed and base names (warp_drive.managers.*)",
    "warp_drive.managers.numba_managers": "package of the 2.7.1 Numba manager modules (warp_drive.managers)",
    "warp_drive.managers.numba_managers.numba_data_manager": "NumbaDataManager (warp_drive.managers.numba_data_manager)",
    "warp_drive.managers.numba_managers.numba_function_manager": "NumbaFunctionManager, NumbaSampler, NumbaEnvironmentReset, NumbaLogController and base names (warp_drive.managers.numba_function_manager, warp_drive.services.numba_services)",
    "warp_drive.utils.common": "get_project_root (warp_drive.cuda.project_root)",
    "warp_drive.utils.pycuda_utils": "package of warp_drive.utils.pycuda_utils.misc",
    "warp_drive.utils.numba_utils": "package of warp_drive.utils.numba_utils.misc",
    "warp_drive.utils.numba_utils.misc": "get_default_env_directory (dotted Numba step modules); update_env_header / check_env_header / update_env_runner make and check env_config / env_runner in memory (warp_drive.compat271.numba_helpers)",
    "warp_drive.utils.pycuda_utils.misc": "get_default_env_directory; update_env_header / check_env_header / update_env_runner raise ConfigError (warp_drive.compat271.cuda_helpers)",
    "warp_drive.utils.architecture_validate": "DeviceArchitectures, calculate_blocks_per_env, validate_device_setup (warp_drive.compat271.cuda_helpers)",
    "warp_drive.utils.device_context": "make_current_context (warp_drive.compat271.cuda_helpers)",
    "warp_drive.utils.autoinit_pycuda": "context, device: importing it attaches pycuda to the primary context (warp_drive.compat271.autoinit; no-op without a GPU)",
    "example_envs.single_agent": "package of 2.7.1's single-agent envs (example_envs.classic_control)",
    "example_envs.single_agent.base": "SingleAgentEnv, map_to_single_agent, get_action_for_single_agent (example_envs.classic_control.base)",
    "example_envs.single_agent.classic_control": "package of 2.7.1's classic-control envs (example_envs.classic_control)",
    "example_envs.single_agent.classic_control.cartpole": "package of the CartPole env",
    "example_envs.single_agent.classic_control.cartpole.cartpole": "ClassicControlCartPoleEnv, CUDAClassicControlCartPoleEnv (example_envs.classic_control.cartpole.cartpole)",
    "example_envs.single_agent.classic_control.acrobot": "package of the Acrobot env",
    "example_envs.single_agent.classic_control.acrobot.acrobot": "ClassicControlAcrobotEnv, CUDAClassicControlAcrobotEnv (example_envs.classic_control.acrobot.acrobot)",
    "example_envs.single_agent.classic_control.mountain_car": "package of the MountainCar env",
    "example_envs.single_agent.classic_control.mountain_car.mountain_car": "ClassicControlMountainCarEnv, CUDAClassicControlMountainCarEnv (example_envs.classic_control.mountain_car.mountain_car)",
    "example_envs.single_agent.classic_control.continuous_mountain_car": "package of the ContinuousMountainCar env",
    "example_envs.single_agent.classic_control.continuous_mountain_car.continuous_mountain_car": "ClassicControlContinuousMountainCarEnv, CUDAClassicControlContinuousMountainCarEnv (example_envs.classic_control.continuous_mountain_car.continuous_mountain_car)",
    "example_envs.single_agent.classic_control.pendulum": "package of the Pendulum env",
    "example_envs.single_agent.classic_control.pendulum.pendulum": "ClassicControlPendulumEnv, CUDAClassicControlPendulumEnv (example_envs.classic_control.pendulum.pendulum)",
    "warp_drive.training.trainer": "Trainer = Trainer271, 2.7.1's trainer (warp_drive.training.run.trainer271); run_directory, check_placeholder_layout, RUN_CONFIG_FILE (warp_drive.training.run.trainer)",
    "warp_drive.training.trainers": "package of 2.7.1's trainer modules (warp_drive.training.run.trainer271)",
    "warp_drive.training.trainers.trainer_a2c": "TrainerA2C = Trainer271 (warp_drive.training.run.trainer271)",
    "warp_drive.training.trainers.trainer_base": "TrainerBase = Trainer271 (warp_drive.training.run.trainer271); all_equal, verbose_print, PerfStats, Metrics, SamplerParamsLog (warp_drive.training.run.reporting), recursive_merge_config_dicts (warp_drive.config.load)",
    "warp_drive.training.models.fully_connected_actor_critic": "FullyConnectedActor, FullyConnectedActionValueCritic (warp_drive.training.models.actor_critic)",
    "warp_drive.training.trainers.trainer_ddpg": "TrainerDDPG (warp_drive.training.run.trainer271), soft_update, hard_update (warp_drive.training.algorithms.ddpg)",
    "warp_drive.training.deprecate": "package of 2.7.1's pre-refactor modules",
    "warp_drive.training.deprecate.trainer": "Trainer = Trainer271 (warp_drive.training.run.trainer271)",
    "warp_drive.training.algorithms.policygradient": "package of 2.7.1's A2C/PPO modules (warp_drive.training.algorithms.actor_critic)",
    "warp_drive.training.algorithms.policygradient.a2c": "A2C (warp_drive.training.algorithms.actor_critic.a2c)",
    "warp_drive.training.algorithms.policygradient.ppo": "PPO (warp_drive.training.algorithms.actor_critic.ppo)",
    "warp_drive.training.utils.ring_buffer": "RingBuffer, RingBufferManager (warp_drive.compat271.ring_buffer)",
    "warp_drive.training.utils.vertical_scaler": "perform_auto_vertical_scaling (warp_drive.training.run.auto_scale)",
    "warp_drive.training.utils.distributed_train": "package of 2.7.1's multi-GPU launchers",
    "warp_drive.training.utils.distributed_train.distributed_trainer_pycuda": "perform_distributed_training (warp_drive.training.distributed)",
    "warp_drive.training.utils.device_child_process": "package of 2.7.1's per-device process helpers",
    "warp_drive.training.utils.device_child_process.child_process_base": "ProcessWrapper: a spawned process that hands its target's exception back (warp_drive.training.distributed)",
    "warp_drive.training.utils.device_child_process.process_group_torch": "setup_torch_process_group, clear_torch_process_group (warp_drive.training.distributed)",
    "warp_drive.training.scripts": "package of 2.7.1's example training scripts",
    "warp_drive.training.scripts.example_training_script_pycuda": "setup_trainer_and_train, main, parse_args; runnable with python -m (warp_drive.cli.setup_and_train)",
    "warp_drive.training.scripts.example_training_script_numba": "setup_trainer_and_train, main, parse_args on the envs' Numba steps (numba backend; cpu without numba-cuda and a GPU); runnable with python -m (warp_drive.cli.setup_and_train)",
    "warp_drive.env_wrapper": "the module warp_drive.env.env_wrapper itself (EnvWrapper; an alias)",
    "example_envs.tag_continuous.generate_rollout_animation": "generate_tag_env_rollout_animation (example_envs.tag_continuous.rendering)",
}

#: this project's former module path -> what it re-exports (one line)
MOVED_MODULES: dict[str, str] = {
    "warp_drive.training.example_training_script": "the example training script: main, parse_args, plan_run, build, run, "
                                                   "CPU_SIZED_* and the shared CLI helpers; runnable with python -m (warp_drive.cli.train)",
    "warp_drive.training.lightning.train": "the Lightning CLI: main, parse_args, run; runnable with python -m "
                                           "(warp_drive.cli.lightning_train)",
    "warp_drive.training.setup_and_train": "setup_trainer_and_train, main, parse_args, run_config_path, env_class_for "
                                           "(warp_drive.cli.setup_and_train, warp_drive.cli.envs)",
    "warp_drive.config.ddpg": "DDPGPolicyConfig, DDPGModelConfig, OU_NOISE_PARAMS, OU_DEFAULTS, parse_ou_params, the "
                              "section defaults (warp_drive.training.algorithms.ddpg.config)",
    "warp_drive.utils.placeholders": "the step placeholders and 2.7.1's training placeholders: action_layout, "
                                     "create_and_push_data_placeholders, get_obs, ... (warp_drive.env.placeholders, "
                                     "warp_drive.compat271.data_loader)",
    "warp_drive.env.backends": "the module warp_drive.vocab.backends itself (an alias)",
    "warp_drive.env.constants": "the module warp_drive.vocab.constants itself (an alias)",
    "warp_drive.env.data_feed": "the module warp_drive.vocab.data_feed itself (an alias)",
    "warp_drive.env.done": "the module warp_drive.vocab.done itself (an alias)",
    "warp_drive.env.registrar": "the module warp_drive.vocab.registrar itself (an alias)",
    "warp_drive.env.schema": "the module warp_drive.vocab.schema itself (an alias)",
    "warp_drive.env.start_state": "the module warp_drive.vocab.start_state itself (an alias)",
    "warp_drive.config._checks": "the module warp_drive.utils.checks itself (an alias)",
    "warp_drive.managers.environment_reset": "the module warp_drive.services.environment_reset itself (an alias)",
    "warp_drive.managers.log_controller": "the module warp_drive.services.log_controller itself (an alias)",
    "warp_drive.managers.numba_services": "the module warp_drive.services.numba_services itself (an alias)",
    "warp_drive.managers.sampler": "the module warp_drive.services.sampler itself (an alias)",
    "warp_drive.utils.device": "the module warp_drive.cuda.device itself (an alias)",
    "warp_drive.utils.env_cpu_gpu_consistency_checker": "the module warp_drive.testing.consistency itself (an alias)",
    "warp_drive.utils.rollout_animation": "the module warp_drive.testing.rollout_animation itself (an alias)",
    "warp_drive.numba_backend.build": "the module warp_drive.testing.numba_build itself (an alias; runnable with python -m)",
}

#: this project's former module path -> the path of the same module now (importing either gives one module
#: object; no file stands at the former path)
MOVED_ALIASES: dict[str, str] = {
    "warp_drive.training.acting": "warp_drive.training.engine.acting",
    "warp_drive.training.counters": "warp_drive.training.engine.counters",
    "warp_drive.training.cpu_pipeline": "warp_drive.training.engine.cpu_pipeline",
    "warp_drive.training.cuda_graph": "warp_drive.training.engine.cuda_graph",
    "warp_drive.training.env_subset": "warp_drive.training.engine.env_subset",
    "warp_drive.training.phase_timer": "warp_drive.training.engine.phase_timer",
    "warp_drive.training.rollout": "warp_drive.training.engine.rollout",
    "warp_drive.training.update_memory": "warp_drive.training.engine.update_memory",
    "warp_drive.training.auto_scale": "warp_drive.training.run.auto_scale",
    "warp_drive.training.build": "warp_drive.training.run.build",
    "warp_drive.training.checkpoint": "warp_drive.training.run.checkpoint",
    "warp_drive.training.checkpoint_check": "warp_drive.training.run.checkpoint_check",
    "warp_drive.training.comparison": "warp_drive.training.run.comparison",
    "warp_drive.training.evaluation": "warp_drive.training.run.evaluation",
    "warp_drive.training.finite_checks": "warp_drive.training.run.finite_checks",
    "warp_drive.training.logging_utils": "warp_drive.training.run.logging_utils",
    "warp_drive.training.long_runs": "warp_drive.training.run.long_runs",
    "warp_drive.training.metrics": "warp_drive.training.run.metrics",
    "warp_drive.training.periodic_eval": "warp_drive.training.run.periodic_eval",
    "warp_drive.training.plot": "warp_drive.training.run.plot",
    "warp_drive.training.progress": "warp_drive.training.run.progress",
    "warp_drive.training.random_policy": "warp_drive.training.run.random_policy",
    "warp_drive.training.reporting": "warp_drive.training.run.reporting",
    "warp_drive.training.run_failures": "warp_drive.training.run.run_failures",
    "warp_drive.training.run_folder": "warp_drive.training.run.run_folder",
    "warp_drive.training.run_summary": "warp_drive.training.run.run_summary",
    "warp_drive.training.statistics": "warp_drive.training.run.statistics",
    "warp_drive.training.trainer_api271": "warp_drive.training.run.trainer271",
    "warp_drive.training.ddpg": "warp_drive.training.run.trainer271",
    "warp_drive.training.algorithms.distributions": "warp_drive.training.models.distributions",
    "warp_drive.training.algorithms.a2c": "warp_drive.training.algorithms.actor_critic.a2c",
    "warp_drive.training.algorithms.ppo": "warp_drive.training.algorithms.actor_critic.ppo",
    "warp_drive.training.algorithms.update": "warp_drive.training.algorithms.actor_critic.update",
    "warp_drive.training.algorithms.graphed_update": "warp_drive.training.algorithms.actor_critic.graphed_update",
    "warp_drive.training.algorithms.returns": "warp_drive.training.algorithms.actor_critic.returns",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the former paths of :data:`MOVED_ALIASES`; loading one imports the new path and binds the
    same module object under the old name (its ``__spec__`` stays the new path's)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_ALIASES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED_ALIASES[spec.name])
        spec.loader_state = module.__spec__  # the import machinery sets the alias's spec next; exec_module restores it
        return module

    def exec_module(self, module: ModuleType) -> None:
        own = module.__spec__.loader_state
        if own is not None:
            module.__spec__ = own


def install_moved_aliases() -> None:
    """Puts the finder of :data:`MOVED_ALIASES` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
