"""Checks the CUDA core headers against their NumPy twins on the host CPU.

The Philox, pool-row and per-row sampling helpers in ``warp_drive/cuda/core`` are
``__host__ __device__``; this test compiles a small host program with nvcc (no
GPU needed), feeds it random cases and compares its results with
``warp_drive.utils.philox`` and ``warp_drive.managers.cpu_kernels`` bit for bit
(Gaussian samples within float32 rounding). Skipped when nvcc is not on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from warp_drive.managers import cpu_kernels
from warp_drive.utils.philox import philox4x32_10, scale_bits_to_range

CORE_DIR = Path(__file__).resolve().parents[2] / "warp_drive" / "cuda" / "core"
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")

# Host driver: reads commands on stdin, prints results as decimal words.
#   philox N            then N lines "c0 c1 c2 c3 k0 k1"  -> N lines of 4 words
#   pool N              then N lines "seed env call size" -> N rows
#   cat R A seed stream argmax, counters (R), prob bits (R*A) -> R lines "action errors"
#   gauss R D seed stream det, counters (R), mean bits, std bits (R*D each)
#                                                        -> R lines "errors bits..."
HOST_PROGRAM = r"""
constexpr int wkNumberEnvs = 3;
constexpr int wkNumberAgents = 5;
constexpr int wkBlocksPerEnv = 1;
#include "core_service.cuh"

#include <cstdio>
#include <cstring>
#include <vector>

static float bits_to_float(unsigned int b) { float f; std::memcpy(&f, &b, 4); return f; }
static unsigned int float_to_bits(float f) { unsigned int b; std::memcpy(&b, &f, 4); return b; }

static std::vector<float> read_floats(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) { unsigned int b; std::scanf("%u", &b); v[i] = bits_to_float(b); }
  return v;
}

static std::vector<unsigned int> read_words(int n) {
  std::vector<unsigned int> v(n);
  for (int i = 0; i < n; ++i) std::scanf("%u", &v[i]);
  return v;
}

int main() {
  char cmd[16];
  while (std::scanf("%15s", cmd) == 1) {
    if (std::strcmp(cmd, "philox") == 0) {
      int n; std::scanf("%d", &n);
      for (int i = 0; i < n; ++i) {
        std::vector<unsigned int> w = read_words(6);
        uint4 out = wkPhilox4x32_10(make_uint4(w[0], w[1], w[2], w[3]), make_uint2(w[4], w[5]));
        std::printf("%u %u %u %u\n", out.x, out.y, out.z, out.w);
      }
    } else if (std::strcmp(cmd, "pool") == 0) {
      int n; std::scanf("%d", &n);
      for (int i = 0; i < n; ++i) {
        std::vector<unsigned int> w = read_words(4);
        std::printf("%u\n", wkPoolRow(w[0], w[1], w[2], w[3]));
      }
    } else if (std::strcmp(cmd, "cat") == 0) {
      int rows, actions, argmax; unsigned int seed, stream;
      std::scanf("%d %d %u %u %d", &rows, &actions, &seed, &stream, &argmax);
      std::vector<unsigned int> counters = read_words(rows);
      std::vector<float> probs = read_floats(rows * actions);
      for (int r = 0; r < rows; ++r) {
        int errors = 0;
        int a = wkSampleCategoricalRow(probs.data() + static_cast<long>(r) * actions, actions,
                                       r, counters[r], seed, stream, argmax, &errors);
        std::printf("%d %d\n", a, errors);
      }
    } else if (std::strcmp(cmd, "gauss") == 0) {
      int rows, dim, det; unsigned int seed, stream;
      std::scanf("%d %d %u %u %d", &rows, &dim, &seed, &stream, &det);
      std::vector<unsigned int> counters = read_words(rows);
      std::vector<float> mean = read_floats(rows * dim);
      std::vector<float> stdev = read_floats(rows * dim);
      std::vector<float> out(dim > 0 ? dim : 1);
      for (int r = 0; r < rows; ++r) {
        int errors = wkSampleGaussianRow(mean.data() + static_cast<long>(r) * dim,
                                         stdev.data() + static_cast<long>(r) * dim, out.data(),
                                         dim, r, counters[r], seed, stream, det);
        std::printf("%d", errors);
        for (int j = 0; j < dim; ++j) std::printf(" %u", float_to_bits(out[j]));
        std::printf("\n");
      }
    } else {
      std::fprintf(stderr, "unknown command %s\n", cmd);
      return 2;
    }
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def host_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Compiles the host driver with nvcc (FMA contraction off on the host side)."""
    workdir = tmp_path_factory.mktemp("wk_host")
    source = workdir / "host_check.cu"
    source.write_text(HOST_PROGRAM)
    binary = workdir / "host_check"
    cmd = [
        NVCC, "-x", "cu", "-std=c++17", "-arch=sm_90", "-Xcompiler", "-ffp-contract=off",
        "-I", str(CORE_DIR), "-o", str(binary), str(source),
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"nvcc failed:\n{result.stderr}"
    return binary


def _run(binary: Path, text: str) -> list[list[int]]:
    """Runs the driver on ``text`` and returns its output lines as int lists."""
    result = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [[int(v) for v in line.split()] for line in result.stdout.splitlines()]


def _words_text(values: np.ndarray) -> str:
    """Decimal words of a float32 / uint32 array, one line."""
    arr = np.ascontiguousarray(values)
    if arr.dtype == np.float32:
        arr = arr.view(np.uint32)
    return " ".join(str(int(v)) for v in arr.reshape(-1))


def test_philox_host_matches_numpy(host_binary: Path) -> None:
    rng = np.random.default_rng(11)
    ctr = rng.integers(0, 2**32, size=(500, 4), dtype=np.uint64).astype(np.uint32)
    key = rng.integers(0, 2**32, size=(500, 2), dtype=np.uint64).astype(np.uint32)
    ctr[0], key[0] = 0, 0
    ctr[1], key[1] = 0xFFFFFFFF, 0xFFFFFFFF
    lines = [f"philox {len(ctr)}"]
    lines += [_words_text(np.concatenate([c, k])) for c, k in zip(ctr, key)]
    got = np.array(_run(host_binary, "\n".join(lines) + "\n"), dtype=np.uint64).astype(np.uint32)
    np.testing.assert_array_equal(got, philox4x32_10(ctr, key))
    assert [hex(v) for v in got[0]] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]


def test_pool_row_host_matches_numpy(host_binary: Path) -> None:
    rng = np.random.default_rng(12)
    n = 400
    seed = rng.integers(0, 2**32, size=n, dtype=np.uint64)
    env = rng.integers(0, 5000, size=n)
    call = rng.integers(0, 2**32, size=n, dtype=np.uint64)
    size = rng.integers(1, 2**31, size=n)
    size[:100] = rng.integers(1, 10, size=100)
    lines = [f"pool {n}"] + [f"{s} {e} {c} {p}" for s, e, c, p in zip(seed, env, call, size)]
    got = np.array(_run(host_binary, "\n".join(lines) + "\n"), dtype=np.int64).reshape(-1)
    ctr = np.stack([env, call, np.zeros(n), np.zeros(n)], axis=-1).astype(np.uint32)
    key = np.stack([seed, np.full(n, cpu_kernels.POOL_STREAM)], axis=-1).astype(np.uint32)
    want = scale_bits_to_range(philox4x32_10(ctr, key)[:, 0], size)
    np.testing.assert_array_equal(got, want)
    assert np.all((got >= 0) & (got < size))


def _categorical_case(
    probs: np.ndarray, seed: int, stream: int, argmax: int
) -> tuple[str, np.ndarray]:
    """Driver input for one categorical batch, with per-row call counters."""
    rows, actions = probs.shape
    counters = np.arange(rows, dtype=np.uint32) * np.uint32(2654435761)
    text = "\n".join(
        [
            f"cat {rows} {actions} {seed} {stream} {argmax}",
            _words_text(counters),
            _words_text(probs),
        ]
    )
    return text, counters


def _numpy_categorical(
    probs: np.ndarray, counters: np.ndarray, seed: int, stream: int, argmax: int
) -> tuple[np.ndarray, int]:
    """Actions and error flag from the NumPy twin (inputs left untouched)."""
    rows, actions = probs.shape
    out = np.full(rows, -1, dtype=np.int32)
    flag = np.zeros(1, dtype=np.int32)
    cnt = counters.copy()
    cpu_kernels.sample_actions(
        probs.copy(), out, cnt, flag, None, rows, actions, 1, 0, seed, stream, argmax
    )
    return out, int(flag[0])


@pytest.mark.parametrize("argmax", [0, 1])
def test_categorical_host_matches_numpy(host_binary: Path, argmax: int) -> None:
    rng = np.random.default_rng(13 + argmax)
    rows, actions = 3000, 7
    probs = rng.dirichlet(np.full(actions, 0.5), size=rows).astype(np.float32)
    probs[rng.random((rows, actions)) < 0.2] = 0.0  # zeros and unnormalised rows
    probs[:50] = 0.0  # degenerate rows
    probs[50:60, 3] = np.nan
    probs[60:70, 2] = -0.1
    probs[70:80] = rng.random((10, actions)).astype(np.float32) * 5
    probs[80:90] = np.float32(1.0 / actions)  # sums that round near 1
    probs[90:100, 0] = np.inf
    seed, stream = 0xDEADBEEF, 3
    text, counters = _categorical_case(probs, seed, stream, argmax)
    got = np.array(_run(host_binary, text + "\n"), dtype=np.int64)
    want_actions, want_flag = _numpy_categorical(probs, counters, seed, stream, argmax)
    np.testing.assert_array_equal(got[:, 0], want_actions)
    host_flag = int(np.bitwise_or.reduce(got[:, 1]))
    assert host_flag == want_flag == 3


def test_categorical_host_rows_flags_individually(host_binary: Path) -> None:
    """Per-row error bits of the host function equal the twin's flag on that row alone."""
    probs = np.array(
        [[0.2, 0.3, 0.5], [np.nan, 0.5, 0.5], [0.2, 0.2, 0.2], [-0.5, 1.0, 0.5], [0.0, 0.0, 0.0]],
        dtype=np.float32,
    )
    text, counters = _categorical_case(probs, 5, 9, 0)
    got = np.array(_run(host_binary, text + "\n"), dtype=np.int64)
    for r in range(len(probs)):
        _, flag = _numpy_categorical(probs[r : r + 1], counters[r : r + 1], 5, 9, 0)
        assert got[r, 1] == flag, r
    assert got[:, 1].tolist() == [0, 1, 2, 1, 2]


@pytest.mark.parametrize("dim, det", [(1, 0), (4, 0), (5, 0), (3, 1)])
def test_gaussian_host_matches_numpy(host_binary: Path, dim: int, det: int) -> None:
    rng = np.random.default_rng(100 + dim)
    rows = 500
    mean = rng.normal(size=(rows, dim)).astype(np.float32)
    std = rng.uniform(0.0, 2.0, size=(rows, dim)).astype(np.float32)
    std[0, 0] = -1.0
    counters = rng.integers(0, 2**32, size=rows, dtype=np.uint64).astype(np.uint32)
    seed, stream = 1234, 77
    text = "\n".join(
        [
            f"gauss {rows} {dim} {seed} {stream} {det}",
            _words_text(counters),
            _words_text(mean),
            _words_text(std),
        ]
    )
    got = np.array(_run(host_binary, text + "\n"), dtype=np.int64)
    host = got[:, 1:].astype(np.uint32).view(np.float32)
    out = np.zeros((rows, dim), dtype=np.float32)
    flag = np.zeros(1, dtype=np.int32)
    cpu_kernels.sample_gaussian_actions(
        mean, std, out, counters.copy(), flag, None, rows, dim, seed, stream, det
    )
    np.testing.assert_allclose(host, out, rtol=1e-6, atol=1e-6)
    assert got[0, 0] == 1 and np.all(got[1:, 0] == 0) and flag[0] == 1
    if det:
        np.testing.assert_array_equal(host, mean)
