"""The README's quick start runs as written (on the cpu backend here) and prints what it did; its
"Add an algorithm" block names the real API."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_quick_start_runs(capsys):
    quick = [b for b in _python_blocks() if "EnvWrapper" in b and "step_all_envs" in b]
    assert quick, "the README lost its quick start"
    namespace: dict = {}
    exec(compile(quick[0], "README quick start", "exec"), namespace)
    dm = namespace["dm"]
    assert dm.get_shape("observations") == (1000, 105, 71)
    assert int(dm.pull_data_from_device("_timestep_").max()) == 10
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"(cpu|pycuda|numba): observations \(1000, 105, 71\); 10 steps x 1,000 envs in ([\d.]+) s = "
                     r"([\d,]+) env steps/s; tagger reward per step (-?[\d.]+)", printed)
    assert m, printed
    assert float(m.group(2)) > 0 and int(m.group(3).replace(",", "")) > 0
    # the README shows a line of the same form
    assert re.search(r"`cpu: observations \(1000, 105, 71\); 10 steps x 1,000 envs in [\d.]+ s = [\d,]+\s+env steps/s; "
                     r"tagger reward per step -?[\d.]+`", README.read_text())


def _stand_in_algorithm_module(monkeypatch):
    """``my_pkg.my_algo`` with a section class and a Policy subclass that meet the contract."""
    import sys
    import types

    from warp_drive.training.algorithms import Policy

    class MyPolicy(Policy):
        act = update = state_dict = load_state_dict = lambda self, *a: None

    module = types.ModuleType("my_pkg.my_algo")
    module.MyAlgoConfig = type("MyAlgoConfig", (), {"from_dict": classmethod(lambda cls, section, prefix: cls())})
    module.MyPolicy = MyPolicy
    monkeypatch.setitem(sys.modules, "my_pkg", types.ModuleType("my_pkg"))
    monkeypatch.setitem(sys.modules, "my_pkg.my_algo", module)


def test_readme_add_an_algorithm_names_the_real_api(monkeypatch):
    """The block runs against the real registry (restored afterwards), and its load_run_config and
    build_trainer calls bind to the real signatures (stand-ins return a config and a trainer)."""
    import warp_drive.config
    import warp_drive.training.run.build as build
    from warp_drive.config import algorithms
    from warp_drive.training.trainer import Trainer

    (block,) = [b for b in _python_blocks() if "register_algorithm" in b]
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms._REGISTRY))
    _stand_in_algorithm_module(monkeypatch)  # register_algorithm imports and checks the entry
    calls = {}

    def bound(fn, result):
        def stand_in(*args, **kwargs):
            inspect.signature(fn).bind(*args, **kwargs)
            calls[fn.__name__] = (args, kwargs)
            return result
        return stand_in

    class StandInTrainer:
        train = evaluate = staticmethod(lambda *a, **k: {})

    assert callable(Trainer.train) and callable(Trainer.evaluate)
    monkeypatch.setattr(warp_drive.config, "load_run_config", bound(warp_drive.config.load_run_config, "config"))
    monkeypatch.setattr(build, "build_trainer", bound(build.build_trainer, StandInTrainer()))
    exec(compile(block, "README add an algorithm", "exec"), {"MyEnv": object})
    entry = algorithms.algorithm_entry("myalgo")
    assert (entry.section, entry.policy) == ("my_pkg.my_algo:MyAlgoConfig", "my_pkg.my_algo:MyPolicy")
    assert set(calls) == {"load_run_config", "build_trainer"}
    assert calls["build_trainer"][0] == ("config", object)


def test_readme_names_the_commands_ci_runs():
    text = README.read_text()
    assert 'python -m pytest -m "not gpu" -n auto --maxprocesses 4 --dist loadfile' in text
    assert "python -m warp_drive.training.example_training_script --env tag_continuous" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pytest -m "not gpu" -n auto --maxprocesses 4 --dist loadfile' in ci and 'pip install -q ".[dev]"' in ci


def test_readme_describes_the_cpu_sized_main_job():
    """What README says of the main command without a GPU is what the script does."""
    from example_envs import get_default_config_path
    from warp_drive.config import load_run_config
    from warp_drive.training.example_training_script import CPU_SIZED_OVERRIDES, CPU_SIZED_SUMMARY

    cfg = load_run_config(get_default_config_path("tag_continuous"), CPU_SIZED_OVERRIDES["tag_continuous"])
    iters = cfg.trainer.num_iterations(cfg.env["episode_length"])
    text = " ".join(README.read_text().split())
    assert f"{cfg.env['num_taggers']} taggers and {cfg.env['num_runners']} runners" in text
    assert f"{iters} iterations" in text and f"{iters} iterations" in CPU_SIZED_SUMMARY["tag_continuous"]
    assert "--full_size" in text
