"""Issue 40, item 4: an env that lives in the user's own package (tests/helpers/out_of_tree.py writes one
into tmp_path) trains from the command line, named by import path, by a module of ``--import`` that
registers it, by an entry point of the group ``warp_drive.envs``, or as a run config's ``name``; its
CPU-sized settings come from its own ``cpu_sized.yaml``; an unknown env creates and prints no results folder."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.out_of_tree import write_env_package
from warp_drive.cli import envs
from warp_drive.env import env_registrar
from warp_drive.errors import ConfigError, EnvLoadError, UnknownEnvError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "oot_gather_pkg"
QUICK = ["--backend", "cpu", "--quiet", "--eval_episodes", "0"]


@pytest.fixture(scope="module")
def ext(tmp_path_factory) -> Path:
    """A folder outside the repository holding the user's package (and its entry point's dist-info)."""
    root = tmp_path_factory.mktemp("ext")
    write_env_package(root, PACKAGE, entry_point=True)
    return root


@pytest.fixture
def on_path(ext, monkeypatch):
    """The package importable in this process; warp_drive's env registrar restored afterwards."""
    monkeypatch.syspath_prepend(str(ext))
    saved = copy.deepcopy((env_registrar._classes, env_registrar._run_configs))
    yield ext
    env_registrar._classes, env_registrar._run_configs = saved
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _subprocess(argv: list[str], cwd: Path, ext: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ext), str(ROOT)]), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_training_script_trains_an_env_named_by_import_path(ext, tmp_path):
    """The documented form, as a user runs it: a subprocess, the cpu backend, the env's CPU-sized settings."""
    res = _subprocess(["warp_drive.training.example_training_script", "--env", f"{PACKAGE}.gather:Gather",
                       "--backend", "cpu", "--eval_episodes", "0", "--results_dir", "run"], tmp_path, ext)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    assert f"CPU-sized settings for {PACKAGE}.gather:Gather (8 agents, 4 envs, 3 iterations)" in res.stdout
    assert "iteration 3/3" in res.stdout
    assert (tmp_path / "run" / "checkpoint_latest.pt").is_file()


def test_lightning_cli_trains_an_env_named_by_import_path(ext, tmp_path):
    pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")
    res = _subprocess(["warp_drive.training.lightning.train", "--env", f"{PACKAGE}.gather:Gather", "--backend", "cpu",
                       "--quiet", "--max_epochs", "1", "--iterations_per_epoch", "2", "--results_dir", "lrun",
                       "trainer.num_envs=4", "trainer.train_batch_size=160"], tmp_path, ext)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    assert list((tmp_path / "lrun").rglob("last.ckpt"))


@pytest.mark.parametrize("form", ["import", "entry point", "config name"])
def test_training_script_finds_the_env_in_every_form(form, on_path, tmp_path):
    from warp_drive.cli.train import main

    argv = {"import": ["--import", PACKAGE, "--env", f"{PACKAGE}_gather"],
            "entry point": ["--env", f"{PACKAGE}_ep"],
            "config name": ["--config", str(on_path / PACKAGE / "run_config.yaml"), "trainer.num_envs=4",
                            "trainer.train_batch_size=160", "trainer.num_episodes=8"]}[form]
    assert main([*argv, *QUICK, "--results_dir", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "checkpoint_latest.pt").is_file()


def test_resolve_env_reports_origin_config_and_cpu_sized_settings(on_path):
    folder = on_path / PACKAGE
    by_path = envs.resolve_env(f"{PACKAGE}.gather:Gather")
    by_import = envs.resolve_env(f"{PACKAGE}_gather", [PACKAGE])
    by_entry_point = envs.resolve_env(f"{PACKAGE}_ep")
    assert by_path.env_class is by_import.env_class is by_entry_point.env_class
    assert [by_path.origin, by_import.origin, by_entry_point.origin] == [
        "import path", "registered env", f"entry point of package {PACKAGE}"]
    for found in (by_path, by_import, by_entry_point):
        assert found.run_config_path() == folder / "run_config.yaml"
        assert found.cpu_sized.overrides[0] == "trainer.num_envs=4"
    assert envs.resolve_env("single_cartpole").example_name == "cartpole"  # the bundled names still resolve
    name, registrar = by_path.registrar()  # what the Lightning engine factory gets
    assert registrar.get(name) is by_path.env_class


def test_unknown_env_creates_and_prints_no_results_folder(on_path, tmp_path, capsys, monkeypatch):
    from warp_drive.cli.train import main

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "my.yaml"
    config.write_text((on_path / PACKAGE / "run_config.yaml").read_text().replace(f"{PACKAGE}.gather:Gather", "ring_forage"))
    assert main(["--config", str(config), *QUICK, f"saving.basedir={tmp_path / 'runs'}"]) == 2
    out, err = capsys.readouterr()
    assert "results:" not in out and "unknown env 'ring_forage'" in err and "--import" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my.yaml"]  # no folder, no empty parents


@pytest.mark.parametrize("name, error, words", [
    (f"{PACKAGE}.gather:Nope", EnvLoadError, "has no Nope"),
    ("no_such_pkg.mod:Env", EnvLoadError, "importing no_such_pkg.mod failed"),
    (f"{PACKAGE}.gather:np", EnvLoadError, "not an env class"),
    (f"{PACKAGE}_gather", UnknownEnvError, "did you mean"),  # registered only on --import
])
def test_bad_names_are_typed_errors_naming_the_value_and_the_fix(name, error, words, on_path):
    with pytest.raises(error, match=words):
        envs.resolve_env(name)


def test_import_of_a_missing_module_and_a_bad_cpu_sized_file(on_path):
    with pytest.raises(EnvLoadError, match="--import no_such_module: importing it failed"):
        envs.resolve_env("cartpole", ["no_such_module"])
    bad = on_path / "bad_cpu"
    bad.mkdir()
    (bad / "cpu_sized.yaml").write_text("summary: x\noverrides: trainer.num_envs=4\n")
    with pytest.raises(ConfigError, match="must be a list of dotted key=value strings"):
        envs.read_cpu_sized(bad)


# ----------------------------------------------------------------------------- check_build and one-block envs
def test_check_build_reports_a_package_that_registers_no_env(tmp_path):
    (tmp_path / "empty_pkg").mkdir()
    (tmp_path / "empty_pkg" / "__init__.py").write_text("")
    res = _subprocess(["warp_drive.cuda.check_build", "--envs", "empty_pkg"], tmp_path, tmp_path)
    assert res.returncode == 1
    assert "no env registered by empty_pkg" in res.stderr and "all CUDA sources compile" not in res.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="check_build compiles with nvcc")
def test_check_build_builds_a_one_block_env_for_one_block_only(ext, tmp_path):
    """The fixture's kernel holds static_assert(wkBlocksPerEnv == 1): max_blocks_per_env = 1 keeps BPE=3 out."""
    res = _subprocess(["warp_drive.cuda.check_build", "--envs", PACKAGE], tmp_path, ext)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    lines = [line for line in res.stdout.splitlines() if line.startswith(f"{PACKAGE}_gather ")]
    assert len(lines) == 1 and "BPE=1" in lines[0] and "ok" in lines[0]
    assert "max_blocks_per_env = 1, built for one block per env only" in res.stdout


def test_build_geometries_honour_max_blocks_per_env():
    from warp_drive.cuda.check_build import BuildCase

    case = BuildCase("env", None, {}, 8, [])
    assert case.blocks_per_env() == [1, 3]
    assert case._replace(max_blocks_per_env=1).blocks_per_env() == [1]
    assert case._replace(max_blocks_per_env=2).blocks_per_env() == [1, 2]
    assert case._replace(num_agents=1).blocks_per_env() == [1]


def test_wrapper_refuses_more_blocks_than_a_one_block_env_declares(on_path):
    from warp_drive.env.env_wrapper import EnvWrapper

    gather = envs.resolve_env(f"{PACKAGE}.gather:Gather").env_class
    with pytest.raises(ConfigError, match="declares max_blocks_per_env = 1, but this wrapper needs blocks_per_env=2"):
        EnvWrapper(gather(num_agents=4), num_envs=2, env_backend="cpu", blocks_per_env=2)
    assert EnvWrapper(gather(num_agents=4), num_envs=2, env_backend="cpu").blocks_per_env == 1
