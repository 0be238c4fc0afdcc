"""A CPU run of the command line does not load Triton (issue 39: the first run's memory). ``torch.optim``
imports ``torch._dynamo``, whose import loads Triton where it is installed: 73 MB of resident memory on a
2-core CPU box (torch 2.13, Triton 3.9) for kernels that need a GPU. Subprocesses: the modules a process
imported are the point."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed here")


def _python(code: str, cwd: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    res = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res.stdout.splitlines()


@needs_triton
def test_dynamo_without_triton_leaves_triton_importable(tmp_path):
    out = _python("import sys\n"
                  "from warp_drive.utils.lean_imports import import_dynamo_without_triton as lean\n"
                  "first = lean()\n"
                  "print(first, 'torch._dynamo' in sys.modules, 'triton' in sys.modules, lean())\n"
                  "import triton\n"
                  "print(triton.__name__)\n", tmp_path)
    assert out == ["True True False False", "triton"]


@needs_triton
def test_a_cpu_run_of_the_command_line_trains_without_loading_triton(tmp_path):
    argv = ["--env", "cartpole", "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
            "env.episode_length=50", "trainer.num_episodes=8", "--eval_episodes", "4", "--results_dir", "run"]
    out = _python("import sys\n"
                  "from warp_drive.cli.train import main\n"
                  f"code = main({argv!r})\n"
                  "print('modules', code, 'torch._dynamo' in sys.modules, 'triton' in sys.modules)\n", tmp_path)
    assert out[-1] == "modules 0 True False", out[-5:]  # trained (the optimizers imported Dynamo), no Triton


def test_nothing_happens_where_triton_is_interpreted_or_dynamo_is_loaded(monkeypatch):
    from warp_drive.utils import lean_imports

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert lean_imports.import_dynamo_without_triton() is False
    monkeypatch.delenv("TRITON_INTERPRET")
    import torch._dynamo  # noqa: F401  (this test process may have it already: then nothing to do either way)

    assert lean_imports.import_dynamo_without_triton() is False
