"""The MPE CUDA sources against the NumPy twins, without a GPU.

1. The step kernels' and start-state hooks' parameters match ``step_kernel_args`` and
   ``start_state_args`` (names, in order).
2. The per-agent phase functions the step kernels run (``Mpe<Name>AgentPhase``, with the shared
   physics of ``mpe.cuh``) are ``__host__ __device__``: a host program compiled by nvcc (the
   backend's options; the device code is compiled too, for sm_90, and must give no warning) runs
   them phase by phase, agent by agent, for E envs over a full episode, and the results are
   compared with ``numpy_step`` from the same start state and actions. Tolerance: done, truncation
   and time step exact; positions, velocities, observations and rewards within 2e-7 (absolute) +
   2e-7 (relative), at least 99% bit-identical (the host's and NumPy's float64 ``exp`` / ``log1p``
   may differ in the last bit, which can flip a float32 rounding of the contact force).
3. The env refuses several blocks per env on the pycuda backend.

The kernels themselves (the barriers, the launch geometry, the reset kernel) are compared with the
NumPy twins on a GPU by ``tests/gpu/test_mpe_consistency.py``. Skipped when nvcc is not on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from example_envs import get_example_env_class
from warp_drive.cuda.compiler import DEFAULT_OPTIONS, env_include_dirs, render_source
from warp_drive.cuda.signature import parse_kernel_signatures, parse_params
from warp_drive.cuda.start_state_kernel import find_start_state_hooks
from warp_drive.env import Constants
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError

CORE_DIR = Path(__file__).resolve().parents[3] / "warp_drive" / "cuda" / "core"
NVCC = shutil.which("nvcc")
NAMES = ("mpe_simple_spread", "mpe_simple_speaker_listener")
NUM_ENVS = 6
TOL = 2e-7
MIN_BIT_IDENTICAL = 0.99

# stdin: the float bits of agent_pos, agent_vel, landmark_pos, speaker_comm (E rows each), the
# goals, then one line of E * N actions per step. stdout per step: the bits of observations,
# rewards, agent_pos, agent_vel, the state rows (simple_spread's; zeros for the other env), then done,
# truncated and timestep of every env.
HOST_MAIN = r"""
#include <cstdio>
#include <cstring>

static float FromBits(unsigned int b) { float f; std::memcpy(&f, &b, 4); return f; }
static unsigned int ToBits(float f) { unsigned int b; std::memcpy(&b, &f, 4); return b; }
static void ReadFloats(float* x, int n) { for (int i = 0; i < n; ++i) { unsigned int b; std::scanf("%u", &b); x[i] = FromBits(b); } }
static void WriteFloats(const float* x, int n) { for (int i = 0; i < n; ++i) std::printf("%u ", ToBits(x[i])); }

constexpr int E = wkNumberEnvs, N = wkNumberAgents, L = kNumLandmarks;
static float pos[E * N * 2], vel[E * N * 2], lm[E * L * 2], comm[E * 3], obs[E * N * kObsDim], rew[E * N];
static float state[E * STATE_DIM];
static int goal[E], actions[E * N], done[E], truncated[E], timestep[E];
static float force[E * N][2];

int main() {
  int steps = 0;
  if (std::scanf("%d", &steps) != 1) return 1;
  ReadFloats(pos, E * N * 2); ReadFloats(vel, E * N * 2); ReadFloats(lm, E * L * 2); ReadFloats(comm, E * 3);
  for (int e = 0; e < E; ++e) std::scanf("%d", &goal[e]);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < E * N; ++i) std::scanf("%d", &actions[i]);
    for (int phase = 0; phase < kMpeNumPhases; ++phase)
      for (int e = 0; e < E; ++e)
        for (int a = 0; a < N; ++a) {
          float* f = force[e * N + a];
          @CALL@;
        }
    WriteFloats(obs, E * N * kObsDim); WriteFloats(rew, E * N); WriteFloats(pos, E * N * 2); WriteFloats(vel, E * N * 2);
    WriteFloats(state, E * STATE_DIM);
    for (int e = 0; e < E; ++e) std::printf("%d %d %d ", done[e], truncated[e], timestep[e]);
    std::printf("\n");
  }
  return 0;
}
"""

CALLS = {
    "mpe_simple_spread": "MpeSimpleSpreadAgentPhase(phase, e, a, f, pos, vel, lm, actions, obs, rew, state, done, "
                         "truncated, timestep, local_ratio, episode_length)",
    "mpe_simple_speaker_listener": "MpeSimpleSpeakerListenerAgentPhase(phase, e, a, f, pos, vel, lm, goal, comm, "
                                   "actions, obs, rew, done, truncated, timestep, episode_length)",
}
CONFIGS = {"mpe_simple_spread": {"num_agents": 4, "local_ratio": 0.25}, "mpe_simple_speaker_listener": {}}


def _normalize(name: str) -> str:
    return name.removesuffix("_arr").strip("_").lower()


def _names(specs) -> list[str]:
    return [_normalize(a if isinstance(a, str) else a[0]) for a in specs]


@pytest.mark.parametrize("name", NAMES)
def test_kernel_and_hook_parameters_match_their_argument_lists(name):
    cls = get_example_env_class(name)
    source = cls.cuda_source.read_text()
    step = parse_kernel_signatures(source)[f"Cuda{cls.name}Step"]
    assert [_normalize(p.name) for p in step] == _names(cls.step_kernel_args)
    hook = parse_params(find_start_state_hooks(source)[cls.name])
    assert [_normalize(p.name) for p in hook] == _names(cls.start_state_args)


@pytest.mark.parametrize("name", NAMES)
def test_env_refuses_several_blocks_per_env(name):
    from warp_drive.env.env_wrapper import EnvWrapper

    assert get_example_env_class(name).max_blocks_per_env == 1
    with pytest.raises(ConfigError, match="max_blocks_per_env = 1"):
        EnvWrapper(get_example_env_class(name)(), num_envs=2, env_backend="cpu", blocks_per_env=2)


def _state_dim(env) -> int:
    """Values of the env's ``state`` row (simple_spread's), 1 for an env without one."""
    return int(env.cuda_constants().get("kStateDim", 1))


def _compile(name: str, env, tmp: Path) -> tuple[Path, str]:
    source = render_source(NUM_ENVS, env.num_agents, 1, env_source=env.cuda_source, constants=env.cuda_constants())
    if name == "mpe_simple_spread":  # the scalar argument of the call, as the kernel receives it
        source += f"\nconstexpr float local_ratio = {float(np.float32(env.local_ratio))!r}f;\n"
    source += f"constexpr int episode_length = {env.episode_length};\n"
    source += f"#define STATE_DIM {_state_dim(env)}\n"
    program = tmp / f"{name}_host.cu"
    program.write_text(source + HOST_MAIN.replace("@CALL@", CALLS[name]))
    exe = tmp / f"{name}_host"
    cmd = [NVCC, "-arch=sm_90", *DEFAULT_OPTIONS, f"-I{CORE_DIR}", *(f"-I{d}" for d in env_include_dirs(env.cuda_source)),
           "-o", str(exe), str(program)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"nvcc failed for {name}:\n{proc.stderr[-4000:]}"
    return exe, proc.stderr


def _bits(x: np.ndarray) -> str:
    return " ".join(str(int(b)) for b in np.ascontiguousarray(x, np.float32).ravel().view(np.uint32))


def _floats(words: list[str]) -> np.ndarray:
    return np.array([int(w) for w in words], np.uint32).view(np.float32)


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", NAMES)
def test_host_run_phase_functions_match_numpy_step(name, tmp_path):
    env = get_example_env_class(name)(seed=5, **CONFIGS[name])
    exe, warnings = _compile(name, env, tmp_path)
    assert "warning" not in warnings.lower(), warnings[-4000:]
    wrapper = EnvWrapper(env, num_envs=NUM_ENVS, env_backend="cpu")
    wrapper.reset_all_envs()
    data = wrapper.cuda_data_manager.host_view()
    n, t_max = env.num_agents, env.episode_length
    rng = np.random.default_rng(0)
    nvec = np.array([env.action_space[a].n for a in range(n)])
    actions = (rng.random((t_max, NUM_ENVS, n)) * nvec).astype(np.int32)
    start = [data["agent_pos"], data["agent_vel"], data["landmark_pos"]]
    comm = data.get("speaker_comm", np.zeros((NUM_ENVS, 3), np.float32))
    goal = data["goal"][:, 0] if "goal" in data else np.zeros(NUM_ENVS, np.int32)
    lines = [str(t_max), *(_bits(x) for x in start), _bits(comm), " ".join(map(str, goal))]
    lines += [" ".join(map(str, a.ravel())) for a in actions]
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = out.stdout.split("\n")
    sizes = [NUM_ENVS * n * env.obs_dim, NUM_ENVS * n, NUM_ENVS * n * 2, NUM_ENVS * n * 2, NUM_ENVS * _state_dim(env)]
    names = (Constants.OBSERVATIONS, Constants.REWARDS, "agent_pos", "agent_vel", "state")
    same = total = contacts = 0
    for t in range(t_max):
        env.step(actions[t][..., None])
        pos = data["agent_pos"]
        gaps = np.linalg.norm(pos[:, :, None] - pos[:, None], axis=-1) + np.eye(n) * 1e9
        contacts += int(np.sum(gaps < env.contact_distance))
        words = rows[t].split()
        for what, size in zip(names, sizes):
            host, words = _floats(words[:size]), words[size:]
            if what not in data:  # the other env keeps no state: the host program's rows stay zero
                continue
            ours = data[what].ravel()
            np.testing.assert_allclose(host, ours, rtol=TOL, atol=TOL, err_msg=f"{name} step {t + 1}: {what}")
            same += int(np.sum(host.view(np.uint32) == ours.view(np.uint32)))
            total += size
        flags = np.array(words, np.int64).reshape(NUM_ENVS, 3)
        expected = np.stack([data[Constants.DONE], data[Constants.TRUNCATED], data[Constants.TIMESTEP]], axis=1)
        np.testing.assert_array_equal(flags, expected, err_msg=f"{name} step {t + 1}: done, truncated, timestep")
    assert same / total >= MIN_BIT_IDENTICAL, f"only {same / total:.4f} of the values are bit-identical"
    assert contacts > 0 or not env.agents_collide, "no contact: the contact force went untested"
    print(f"{name}: {same}/{total} values bit-identical over {t_max} steps of {NUM_ENVS} envs")
