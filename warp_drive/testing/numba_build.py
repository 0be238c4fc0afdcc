"""Compile every registered env's Numba step for a target architecture, without a GPU.

Usage: ``python -m warp_drive.testing.numba_build [--arch sm_90] [--envs example_envs ...]`` (also run
by ``python -m warp_drive.cuda.check_build --numba``). For each env registered in warp_drive's env
registrar that has a Numba step (``numba_source``), the env is built on the cpu backend to learn the
kernel's argument types (the same arrays and scalars the numba backend hands it), its module is
loaded with that configuration's ``env_config``, and ``numba.cuda.compile_ptx`` compiles
``Numba<name>Step`` for the architecture. That needs numba-cuda and NVIDIA's NVVM/NVRTC libraries
(the CUDA toolkit, or the ``nvidia-cuda-nvrtc`` wheels), not a GPU; where they are missing every
env is reported as not checked and the exit status is 1.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import Any, Iterator

from warp_drive.errors import ConfigError, DeviceUnavailableError


def kernel_types(env: Any, num_envs: int = 4) -> tuple:
    """Numba types of the env's step arguments on a store of ``num_envs`` replicas (cpu backend)."""
    import numba
    import torch

    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.managers.function_manager import FunctionFeed

    wrapper = EnvWrapper(env, num_envs=num_envs, env_backend="cpu")
    wrapper.reset_all_envs()
    values = FunctionFeed(wrapper.cuda_data_manager)(env.step_kernel_args)
    return tuple(numba.typeof(v.numpy() if isinstance(v, torch.Tensor) else v) for v in values)


@contextlib.contextmanager
def target_device(cc: tuple[int, int]) -> Iterator[None]:
    """numba-cuda compiles the device functions a kernel calls (``@cuda.jit(device=True)``) for the
    current GPU's compute capability; where no GPU (or driver) answers, it is told ``cc`` instead."""
    from numba.cuda import dispatcher

    real = dispatcher.get_current_device

    class _Target:
        compute_capability = cc

    def current() -> Any:
        try:
            return real()
        except Exception:  # noqa: BLE001 - CudaSupportError and driver errors: no device here
            return _Target()

    dispatcher.get_current_device = current
    try:
        yield
    finally:
        dispatcher.get_current_device = real


def compile_step(env: Any, arch: str, num_envs: int = 4) -> str:
    """PTX of ``Numba<name>Step`` for ``arch`` (e.g. ``sm_90``)."""
    from warp_drive.numba_backend import modules
    from warp_drive.numba_backend.runtime import numba_cuda

    cuda = numba_cuda()
    types = kernel_types(env, num_envs)
    values = modules.launch_constants(num_envs, int(env.num_agents), 1, env.cuda_constants())
    module = modules.load_env_module(env.numba_source, values)
    kernel = getattr(module, f"Numba{env.name}Step", None)
    if kernel is None:
        raise ConfigError(f"{env.numba_source} defines no kernel Numba{env.name}Step")
    digits = arch.removeprefix("sm_").removeprefix("compute_")
    cc = (int(digits[:-1]), int(digits[-1]))
    with target_device(cc):
        ptx, _ = cuda.compile_ptx(kernel.py_func, types, cc=cc)
    return ptx


def main(argv: list[str] | None = None) -> int:
    from warp_drive.cuda.check_build import register_env_packages
    from warp_drive.vocab.registrar import env_registrar

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--envs", nargs="*", default=[], help="packages whose import registers envs")
    args = parser.parse_args(argv)
    register_env_packages(args.envs)
    envs = [env_registrar.get(n, "pycuda")() for n in env_registrar.env_names("pycuda")]
    envs = [e for e in envs if getattr(e, "numba_source", None)]
    if not envs:
        print(f"no registered env has a Numba step (numba_source){'' if args.envs else '; pass --envs my_pkg'}")
        return 1 if args.envs else 0
    failures = 0
    for env in envs:
        start = time.perf_counter()
        try:
            status = f"ok ({len(compile_step(env, args.arch))} bytes of PTX)"
        except DeviceUnavailableError as err:
            status = f"NOT CHECKED: {err}"
        except Exception as err:  # noqa: BLE001 - numba's typing, lowering and library errors alike
            missing_library = any(k in type(err).__name__ for k in ("NotFound", "SupportError"))
            status = (f"NOT CHECKED: numba-cuda cannot compile here without NVIDIA's NVVM/NVRTC libraries "
                      f"(the CUDA toolkit, or pip install nvidia-cuda-nvrtc): {err}" if missing_library
                      else f"FAILED: {type(err).__name__}: {err}")
        failures += not status.startswith("ok")
        print(f"Numba{env.name}Step -> {env.numba_source} {args.arch}: {status} ({time.perf_counter() - start:.1f} s)")
    print("all Numba steps compile" if not failures else f"{failures} Numba step(s) not compiled")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
