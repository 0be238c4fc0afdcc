"""Rendering of the reset kernels that call an env's start-state hook.

An env's ``.cu`` file may define ``__device__ void <Name>StartState(WkStartKey start, ...)``
(see :mod:`warp_drive.vocab.start_state` for the contract). :func:`render_start_state_kernels`
writes, for each such hook, a kernel ``Cuda<Name>ResetWithStartState`` that the compiler appends
after the env's source: one block per env restores the saved copies and pool rows (as
``reset_when_done`` does), then every thread of the block calls the hook, then the done flag and
timestep are cleared, all in one launch.
"""

from __future__ import annotations

import re

from warp_drive.cuda.signature import parse_params, strip_comments
from warp_drive.errors import KernelSignatureError

#: Parameters of every rendered reset-with-start-state kernel before the hook's own (the reset
#: table and bookkeeping of ``reset_when_done``, in its order).
RESET_PARAMS = (
    "const unsigned long long* wk_dst", "const unsigned long long* wk_src", "const int* wk_sizes",
    "const int* wk_pool_sizes", "int wk_num_entries", "int* wk_done", "int* wk_timestep",
    "unsigned int* wk_pool_counters", "int wk_seed", "int wk_force_reset", "int wk_undo_done",
)
_HOOK = re.compile(
    r"__device__\s+(?:(?:__forceinline__|__noinline__|inline|static)\s+)*void\s+(\w+)StartState\s*"
    r"\(\s*(?:const\s+)?WkStartKey\s*&?\s*(\w+)\s*((?:,[^)]*)?)\)\s*\{",
    re.S,
)


def reset_kernel(env_name: str) -> str:
    """Name of the rendered reset kernel that calls an env's hook."""
    return f"Cuda{env_name}ResetWithStartState"


def find_start_state_hooks(source: str) -> dict[str, str]:
    """``{env name: parameter text after the key}`` for every start-state hook defined in ``source``."""
    return {m.group(1): m.group(3).lstrip(",").strip() for m in _HOOK.finditer(strip_comments(source))}


def render_start_state_kernels(source: str) -> str:
    """CUDA code of one ``Cuda<Name>ResetWithStartState`` kernel per hook defined in ``source`` ("" when none)."""
    parts = []
    for name, params in sorted(find_start_state_hooks(source).items()):
        names = [p.name for p in parse_params(params)]
        clash = [n for n in names if n.startswith("wk_")]
        if clash:
            raise KernelSignatureError(
                f"{name}StartState has parameters named {clash}; the wk_ prefix is reserved for the "
                f"framework: rename them"
            )
        signature = ",\n    ".join([*RESET_PARAMS, *([params] if params else [])])
        call_args = ", ".join(["wk_key", *names])
        parts.append(
            f'extern "C" __global__ void {reset_kernel(name)}(\n    {signature}) {{\n'
            "  const int wk_env = blockIdx.x;\n"
            "  if (wk_env >= wkNumberEnvs) return;  // whole block leaves: no barrier is skipped\n"
            "  const WkEnvReset wk_r = wkRestoreEnv(wk_env, wk_dst, wk_src, wk_sizes, wk_pool_sizes, "
            "wk_num_entries, wk_done, wk_pool_counters, wk_seed, wk_force_reset);\n"
            "  __syncthreads();  // the restored rows are visible to the hook\n"
            "  if (wk_r.reset) {  // the same for every thread of the block\n"
            "    const WkStartKey wk_key{static_cast<unsigned int>(wk_seed), "
            "static_cast<unsigned int>(wk_env), wk_r.episode};\n"
            f"    {name}StartState({call_args});\n"
            "  }\n"
            "  wkFinishReset(wk_env, wk_r, wk_done, wk_timestep, wk_pool_counters, wk_undo_done);\n"
            "}\n"
        )
    return "\n".join(parts)
