"""Single-agent classic-control envs with gymnasium's dynamics, on the CPU (NumPy) and the GPU (CUDA).

Each env lives in its own folder: ``constants.py`` (gymnasium's constants, the single source for
Python and CUDA), ``<env>.py`` (the env class and its vectorised NumPy step, the spec),
``<env>_step.cu`` (the CUDA step kernel mirroring it), ``run_config.yaml`` and ``README.md``.
"""

from example_envs.classic_control.acrobot.acrobot import ClassicControlAcrobotEnv
from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
from example_envs.classic_control.continuous_mountain_car.continuous_mountain_car import (
    ClassicControlContinuousMountainCarEnv,
)
from example_envs.classic_control.mountain_car.mountain_car import ClassicControlMountainCarEnv
from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv

#: Every classic-control env class, by its ``name``.
CLASSIC_CONTROL_ENVS = {
    cls.name: cls
    for cls in (
        ClassicControlCartPoleEnv,
        ClassicControlAcrobotEnv,
        ClassicControlMountainCarEnv,
        ClassicControlContinuousMountainCarEnv,
        ClassicControlPendulumEnv,
    )
}

__all__ = [
    "CLASSIC_CONTROL_ENVS",
    "ClassicControlAcrobotEnv",
    "ClassicControlCartPoleEnv",
    "ClassicControlContinuousMountainCarEnv",
    "ClassicControlMountainCarEnv",
    "ClassicControlPendulumEnv",
]
