"""The classic-control CUDA kernels compile, and their device helpers match the NumPy steps.

1. Each ``<env>_step.cu`` is rendered exactly as the pycuda backend renders it (prelude with the
   env's ``cuda_constants()`` + ``core_service.cuh`` + the source) and compiled with
   ``nvcc -arch=sm_90 -cubin``: no errors, no warnings, the step kernel is in the cubin.
2. The transition helpers are ``__host__ __device__``: a host program compiled by nvcc (no GPU
   needed) runs them on random states and the results are compared with the env's NumPy
   ``transition``. Tolerance: termination flags, done flags and timesteps exact; next state,
   observation and reward within 1 float32 ulp (the C code squares with ``x * x`` where
   gymnasium's scalar ``x**2`` is C ``pow``), and at least 99% of them bit-identical.
   The float64 constants rebuilt from their float triples equal the Python values exactly.

Skipped when nvcc is not on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from example_envs.classic_control import CLASSIC_CONTROL_ENVS
from warp_drive.cuda.compiler import DEFAULT_OPTIONS, env_include_dirs, render_source

CORE_DIR = Path(__file__).resolve().parents[3] / "warp_drive" / "cuda" / "core"
NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")

NUM_CASES = 4000
NUM_ENVS = 8  # wkNumberEnvs of the rendered prelude

# env name -> (transition helper, C expression of the action from the float `a`)
HELPERS = {
    "ClassicControlCartPoleEnv": ("CartPoleTransition", "static_cast<int>(a)"),
    "ClassicControlAcrobotEnv": ("AcrobotTransition", "static_cast<int>(a)"),
    "ClassicControlMountainCarEnv": ("MountainCarTransition", "static_cast<int>(a)"),
    "ClassicControlContinuousMountainCarEnv": ("ContinuousMountainCarTransition", "a"),
    "ClassicControlPendulumEnv": ("PendulumTransition", "a"),
}

# Host driver. stdin: n, then n lines "state bits... action bits"; m, then m lines
# "timestep terminated episode_length". stdout: a line of the rebuilt float64 constants, n lines
# "next_state bits... obs bits... reward bits terminated", m lines "done timestep".
HOST_MAIN = r"""
#include <cstdio>
#include <cstring>

static float FromBits(unsigned int b) { float f; std::memcpy(&f, &b, 4); return f; }
static unsigned int ToBits(float f) { unsigned int b; std::memcpy(&b, &f, 4); return b; }

int main() {
  const double constants[] = {@CONSTANTS@};
  for (double c : constants) std::printf("%.17g ", c);
  std::printf("\n");
  int n = 0;
  if (std::scanf("%d", &n) != 1) return 1;
  for (int i = 0; i < n; ++i) {
    float state[kStateDim], next_state[kStateDim], obs[kObsDim], reward = 0.0f;
    unsigned int b;
    for (int k = 0; k < kStateDim; ++k) { std::scanf("%u", &b); state[k] = FromBits(b); }
    std::scanf("%u", &b);
    const float a = FromBits(b);
    const bool terminated = @HELPER@(state, @ACTION@, next_state, obs, &reward);
    for (int k = 0; k < kStateDim; ++k) std::printf("%u ", ToBits(next_state[k]));
    for (int k = 0; k < kObsDim; ++k) std::printf("%u ", ToBits(obs[k]));
    std::printf("%u %d\n", ToBits(reward), terminated ? 1 : 0);
  }
  int m = 0;
  if (std::scanf("%d", &m) != 1) return 1;
  for (int i = 0; i < m; ++i) {
    int t, terminated, episode_length, done = -1, truncated = -1;
    std::scanf("%d %d %d", &t, &terminated, &episode_length);
    ClassicControlEndStep(0, terminated != 0, &done, &truncated, &t, episode_length);
    std::printf("%d %d %d\n", done, t, truncated);
  }
  return 0;
}
"""


def _cases(name: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Random states over (and beyond) each env's reachable range, plus edge cases."""
    u = lambda lo, hi: rng.uniform(lo, hi, n)  # noqa: E731
    if name == "ClassicControlCartPoleEnv":
        states = np.stack([u(-2.6, 2.6), u(-3, 3), u(-0.25, 0.25), u(-4, 4)], 1)
        actions = rng.integers(-1, 3, n)
    elif name == "ClassicControlAcrobotEnv":
        states = np.stack(
            [u(-np.pi, np.pi), u(-np.pi, np.pi), u(-4 * np.pi, 4 * np.pi), u(-9 * np.pi, 9 * np.pi)], 1
        )
        actions = rng.integers(-1, 4, n)
    elif name == "ClassicControlMountainCarEnv":
        states = np.stack([u(-1.25, 0.6), u(-0.07, 0.07)], 1)
        states[:20] = [[-1.2, -0.05], [-1.19, -0.07], [0.49, 0.02], [0.5, 0.0]] * 5
        actions = rng.integers(0, 3, n)
    elif name == "ClassicControlContinuousMountainCarEnv":
        states = np.stack([u(-1.25, 0.6), u(-0.07, 0.07)], 1)
        states[:20] = [[-1.2, -0.05], [-1.19, -0.07], [0.44, 0.02], [0.45, 0.0]] * 5
        actions = u(-1.6, 1.6)
        actions[:6] = [-1.0, 1.0, -1.0000001, 1.0000001, 0.0, 2.0]
    else:  # Pendulum
        states = np.stack([u(-12, 12), u(-8, 8)], 1)
        actions = u(-3, 3)
        actions[:4] = [-2.0, 2.0, 2.5, -2.5]
    return states.astype(np.float32), actions.astype(np.float32)


def _double_names(constants: dict) -> list[str]:
    return sorted(k[:-2] for k in constants if k.endswith("Hi"))


def _compile_jobs(tmp: Path) -> dict[str, dict]:
    """Start every nvcc job (cubin + host driver per env) concurrently; returns the jobs."""
    jobs: dict[str, dict] = {}
    for name, cls in CLASSIC_CONTROL_ENVS.items():
        env = cls()
        constants = env.cuda_constants()
        source = render_source(NUM_ENVS, 1, 1, env_source=cls.cuda_source, constants=constants)
        helper, action_expr = HELPERS[name]
        names = _double_names(constants)
        main = (
            HOST_MAIN.replace("@CONSTANTS@", ", ".join(f"CC_DOUBLE({n})" for n in names))
            .replace("@HELPER@", helper)
            .replace("@ACTION@", action_expr)
        )
        cu = tmp / f"{name}.cu"
        cu.write_text(source)
        host_cu = tmp / f"{name}_host.cu"
        host_cu.write_text(source + main)
        # the backend's options and include directories (the env's folder, the shared header's)
        common = [NVCC, "-arch=sm_90", *DEFAULT_OPTIONS, f"-I{CORE_DIR}",
                  *(f"-I{d}" for d in env_include_dirs(cls.cuda_source))]
        jobs[name] = {
            "env": env,
            "double_names": names,
            "constants": constants,
            "cubin": tmp / f"{name}.cubin",
            "exe": tmp / f"{name}_host",
            "procs": [
                subprocess.Popen(
                    [*common, "-cubin", "-o", str(tmp / f"{name}.cubin"), str(cu)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
                subprocess.Popen(
                    [*common, "-o", str(tmp / f"{name}_host"), str(host_cu)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            ],
        }
    for job in jobs.values():
        job["results"] = [(p.wait(), *p.communicate()) for p in job["procs"]]
    return jobs


@pytest.fixture(scope="module")
def built():
    if not (CORE_DIR / "core_service.cuh").is_file():
        pytest.fail(f"{CORE_DIR / 'core_service.cuh'} is missing")
    with tempfile.TemporaryDirectory(prefix="classic_control_nvcc_") as tmp:
        yield _compile_jobs(Path(tmp))


@pytest.mark.parametrize("name", sorted(CLASSIC_CONTROL_ENVS))
def test_classic_kernel_compiles_to_sm90_cubin(built, name):
    job = built[name]
    rc, _, err = job["results"][0]
    assert rc == 0, f"nvcc failed for {name}:\n{err[-4000:]}"
    assert "warning" not in err.lower(), f"nvcc warnings for {name}:\n{err[-4000:]}"
    kernel = CLASSIC_CONTROL_ENVS[name]().step_function_name
    assert kernel.encode() in job["cubin"].read_bytes(), f"{kernel} is not in the cubin"


@pytest.mark.parametrize("name", sorted(CLASSIC_CONTROL_ENVS))
def test_classic_device_helpers_match_numpy_step(built, name):
    job = built[name]
    rc, _, err = job["results"][1]
    assert rc == 0, f"nvcc (host driver) failed for {name}:\n{err[-4000:]}"
    env = job["env"]
    states, actions = _cases(name, np.random.default_rng(2024), NUM_CASES)
    T = 50
    bookkeeping = [(t, term, T) for t in (0, T - 2, T - 1, T, T + 3) for term in (0, 1)]
    lines = [str(NUM_CASES)]
    lines += [
        " ".join(
            str(int(b)) for b in np.append(states[i].view(np.uint32), actions[i : i + 1].view(np.uint32))
        )
        for i in range(NUM_CASES)
    ]
    lines += [str(len(bookkeeping))] + [f"{t} {term} {T}" for t, term, T in bookkeeping]
    proc = subprocess.run(
        [str(job["exe"])], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()

    # float64 constants rebuilt on the C side equal the Python values exactly
    rebuilt = [float(v) for v in out[0].split()]
    constants = job["constants"]
    expected = [constants[n + "Hi"] + constants[n + "Mid"] + constants[n + "Lo"] for n in job["double_names"]]
    assert rebuilt == expected
    for key, p in env.PHYSICS.items():
        if p.cuda_name and isinstance(env.params[key], float):
            assert rebuilt[job["double_names"].index(p.cuda_name)] == env.params[key], key

    rows = np.array([[int(v) for v in line.split()] for line in out[1 : 1 + NUM_CASES]], dtype=np.int64)
    d, o = env.STATE_DIM, env.OBS_DIM
    c_floats = rows[:, : d + o + 1].astype(np.uint32).view(np.float32)
    c_terminated = rows[:, -1].astype(bool)
    discrete = HELPERS[name][1] != "a"
    ref = env.transition(states, actions.astype(np.int32) if discrete else actions)
    ref_floats = np.concatenate([ref.state, ref.obs, ref.reward[:, None]], axis=1)
    np.testing.assert_array_equal(c_terminated, ref.terminated)
    np.testing.assert_array_max_ulp(c_floats, ref_floats, maxulp=1)
    exact = np.mean(c_floats.view(np.uint32) == ref_floats.view(np.uint32))
    assert exact >= 0.99, f"only {exact:.4f} of the values are bit-identical"

    done_value = env.TERMINAL_DONE_VALUE
    for line, (t, term, T) in zip(out[1 + NUM_CASES :], bookkeeping, strict=True):
        done, t_next, truncated = (int(v) for v in line.split())
        assert t_next == t + 1
        assert done == (done_value if term else int(t + 1 >= T))
        assert truncated == int(t + 1 >= T and not term)  # the time limit, unless the episode terminated
