"""WarpDrive 2.7.1's build helpers and device checks, over this package's build.

2.7.1 generated ``env_config.h`` and ``env_runner.cu`` inside the installed package from template
files and compiled them there. Here the prelude (``wkNumberEnvs``, ``wkNumberAgents``,
``wkBlocksPerEnv``, ...) is rendered in memory and binaries live in a content-addressed cache
(:mod:`warp_drive.cuda.compiler`), so the functions that wrote or read those generated files raise
:class:`~warp_drive.errors.ConfigError` naming the call to use instead, and
``compile_and_load_cuda`` refuses custom templates (:func:`check_templates`). The device checks and
look-ups work as in 2.7.1 (with the resident-block count rounded down, not up).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from warp_drive.cuda import project_root
from warp_drive.errors import ConfigError
from warp_drive.cuda.device import init_cuda

logger = logging.getLogger(__name__)

_BUILD_HELP = (
    "warp_drive renders the launch constants in memory and compiles into a content-addressed cache; "
    "nothing is generated inside the package. Use fm.compile_and_load_cuda(env_name=..., "
    "customized_env_registrar=...) (or env_source=path/to/step.cu), or, for a self-contained .cu file, "
    "fm._compile(main_file=..., cubin_file=...) then fm.load_cuda_from_binary_file(cubin_file)"
)

#: 2.7.1's default table: env name -> its CUDA step source, relative to the project root (nothing is imported).
_DEFAULT_ENV_SOURCES = {
    "TagGridWorld": "example_envs/tag_gridworld/tag_gridworld_step.cu",
    "TagContinuous": "example_envs/tag_continuous/tag_continuous_step.cu",
}

#: 2.7.1's template files (its EnvWrapper passed these names); nothing is generated from them here.
TEMPLATE_FILES = {"template_header_file": "template_env_config.h", "template_runner_file": "template_env_runner.cu"}


def check_templates(header: Any, runner: Any, path: Any) -> None:
    """Refuse custom 2.7.1 templates (``compile_and_load_cuda``'s ``template_*`` arguments): the
    prelude is rendered in memory, so they would be ignored. 2.7.1's default names pass.

    Raises:
        ConfigError: a template other than 2.7.1's default, or any ``template_path``.
    """
    for key, value in (("template_header_file", header), ("template_runner_file", runner)):
        if value is not None and str(value) != TEMPLATE_FILES[key]:
            raise ConfigError(f"{key}={value!r}: warp_drive renders the launch constants in memory and generates no "
                              f"files from templates; drop the argument (2.7.1's default {TEMPLATE_FILES[key]!r} is accepted)")
    if path is not None:
        raise ConfigError(f"template_path={path!r}: warp_drive generates no files from templates; drop the argument")


def get_default_env_directory(env_name: str) -> str | None:
    """Path of the CUDA step source of one of 2.7.1's built-in envs (``TagGridWorld``,
    ``TagContinuous``), or None for any other name (or when the example envs are not installed)."""
    relative = _DEFAULT_ENV_SOURCES.get(env_name)
    if relative is None:
        return None
    path = project_root() / relative
    return str(path) if path.is_file() else None


def update_env_header(template_header_file: Any = None, path: Any = None, num_envs: int = 1, num_agents: int = 1,
                      blocks_per_env: int = 1) -> None:
    """2.7.1 wrote ``env_config.h`` into the package: not done here (raises ConfigError)."""
    raise ConfigError(f"update_env_header() wrote env_config.h into the installed package; {_BUILD_HELP}")


def check_env_header(header_file: Any = "env_config.h", path: Any = None, num_envs: int = 1, num_agents: int = 1,
                     blocks_per_env: int = 1) -> None:
    """2.7.1 re-read the generated ``env_config.h``: there is none here (raises ConfigError)."""
    raise ConfigError(f"check_env_header() read a generated env_config.h, which does not exist here; {_BUILD_HELP}")


def update_env_runner(template_runner_file: Any = None, path: Any = None, env_name: str | None = None,
                      customized_env_registrar: Any = None) -> None:
    """2.7.1 wrote ``env_runner.cu`` into the package: not done here (raises ConfigError)."""
    raise ConfigError(f"update_env_runner() wrote env_runner.cu into the installed package; {_BUILD_HELP}")


# ----------------------------------------------------------------- device checks
class DeviceArchitectures:
    """Resident limits per SM by compute capability (CUDA C Programming Guide, "Compute
    Capabilities"), used when the driver does not report them."""

    MaxBlocksPerSM = {
        "sm_35": 16, "sm_37": 16, "sm_50": 32, "sm_52": 32, "sm_53": 32, "sm_60": 32, "sm_61": 32,
        "sm_62": 32, "sm_70": 32, "sm_72": 32, "sm_75": 16, "sm_80": 32, "sm_86": 16, "sm_87": 16,
        "sm_89": 24, "sm_90": 32,
    }
    MaxThreadsPerSM = {
        "sm_35": 2048, "sm_37": 2048, "sm_50": 2048, "sm_52": 2048, "sm_53": 2048, "sm_60": 2048,
        "sm_61": 2048, "sm_62": 2048, "sm_70": 2048, "sm_72": 2048, "sm_75": 1024, "sm_80": 2048,
        "sm_86": 1536, "sm_87": 1536, "sm_89": 1536, "sm_90": 2048,
    }


def _device_limits(arch: str | None) -> tuple[int, int, int, int]:
    """(max threads per block, max blocks per SM, max threads per SM, SM count) of the current device."""
    init_cuda()
    import pycuda.driver as cuda

    dev = cuda.Context.get_device()
    da = cuda.device_attribute
    cc = dev.compute_capability()
    arch = arch or f"sm_{cc[0]}{cc[1]}"
    try:
        blocks = dev.get_attribute(da.MAX_BLOCKS_PER_MULTIPROCESSOR)
    except (AttributeError, cuda.Error):
        blocks = DeviceArchitectures.MaxBlocksPerSM.get(arch)
    try:
        threads = dev.get_attribute(da.MAX_THREADS_PER_MULTIPROCESSOR)
    except (AttributeError, cuda.Error):
        threads = DeviceArchitectures.MaxThreadsPerSM.get(arch)
    if blocks is None or threads is None:
        raise ConfigError(f"resident limits of architecture {arch} are unknown; update the driver")
    return (dev.get_attribute(da.MAX_THREADS_PER_BLOCK), int(blocks), int(threads),
            dev.get_attribute(da.MULTIPROCESSOR_COUNT))


def calculate_blocks_per_env(num_agents: int) -> int:
    """Blocks one env needs: ceil(num_agents / the device's max threads per block)."""
    max_threads = _device_limits(None)[0]
    return -(-int(num_agents) // max_threads)


def resident_block_capacity(threads_per_block: int, max_blocks_per_sm: int, max_threads_per_sm: int,
                            num_sms: int) -> int:
    """Blocks of ``threads_per_block`` threads the device runs at once, by thread and block limits
    only (registers and shared memory can lower it: the function manager asks the driver's
    occupancy calculator for each kernel)."""
    return min(int(max_blocks_per_sm), int(max_threads_per_sm) // int(threads_per_block)) * int(num_sms)


def validate_device_setup(arch: str, num_blocks: int, threads_per_block: int, blocks_per_env: int) -> bool:
    """False when ``blocks_per_env > 1`` and the grid has more blocks than the device holds at
    once (an env barrier could then wait forever); True otherwise (with a warning when a one-block
    env grid simply runs in several waves)."""
    _, blocks, threads, sms = _device_limits(arch)
    capacity = resident_block_capacity(threads_per_block, blocks, threads, sms)
    if num_blocks <= capacity:
        return True
    if blocks_per_env <= 1:
        logger.warning("%d blocks requested, %d run at once on this device: the launch runs in waves",
                       num_blocks, capacity)
        return True
    logger.warning("%d blocks requested with blocks_per_env=%d, but only %d run at once on this device: "
                   "blocks waiting for each other could deadlock", num_blocks, blocks_per_env, capacity)
    return False


def make_current_context(device_id: int | None = None) -> Any:
    """Make a device's primary context (the one PyTorch uses) current for pycuda and return it.

    ``device_id`` defaults to ``$CUDA_DEVICE``, then torch's current device.
    """
    if device_id is None and os.environ.get("CUDA_DEVICE", "").strip():
        value = os.environ["CUDA_DEVICE"].strip()
        if not value.isdigit():
            raise ConfigError(f"CUDA_DEVICE={value!r} must be a device number")
        device_id = int(value)
    return init_cuda(device_id)
