"""Damaged checkpoints are called corrupt (naming the file) and a run folder falls back to its
previous intact checkpoint; files holding code are called unsafe; every load is weights-only."""

from __future__ import annotations

import os
import random

import pytest
import torch

from tests.cpu.training.test_lightning import POLICY_MAP, _engine, _fit  # noqa: F401  (POLICY_MAP: its config)
from tests.cpu.training.test_nonfinite import _trainer
from warp_drive.errors import CheckpointError
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training.lightning import WarpDriveModule


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A run with checkpoints at iterations 1, 2 and 3 (checkpoint_latest.pt = 3)."""
    t = _trainer(tmp_path_factory.mktemp("integrity"), iters=3)
    t.train()
    return t.save_dir


def _copy(run_folder, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    for p in run_folder.iterdir():
        if p.is_file():
            (out / p.name).write_bytes(p.read_bytes())
    return out


def _damage_newest(run, damage):
    for name in (ckpt.LATEST, "checkpoint_00000003.pt"):
        (run / name).write_bytes(damage((run / name).read_bytes()))


def _flip_tensor_byte(data: bytes) -> bytes:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = next(i for i in z.infolist() if "/data/" in i.filename and i.file_size > 64)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)  # past the local header
    out = bytearray(data)
    out[start + info.file_size // 2] ^= 0x10
    return bytes(out)


@pytest.mark.parametrize("seed", range(12))
def test_random_bytes_are_corrupt_and_the_previous_checkpoint_is_used(run_folder, tmp_path, caplog, seed):
    rng = random.Random(seed)
    # seeds 0-3 start like a pickle (what made random bytes look "unsafe" before), the rest anything
    prefix = b"\x80\x02" if seed < 4 else b""
    run = _copy(run_folder, tmp_path)
    _damage_newest(run, lambda d: prefix + rng.randbytes(len(d)))
    path, state = ckpt.resolve_checkpoint(run)
    assert path.name == "checkpoint_00000002.pt" and state["iteration"] == 2
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "checkpoint_latest.pt' is corrupt or truncated: it is not a complete PyTorch archive" in warned
    assert "unsafe" not in warned and "refused" not in warned


def test_a_flipped_tensor_byte_is_detected_and_named(run_folder, tmp_path, caplog):
    run = _copy(run_folder, tmp_path)
    _damage_newest(run, _flip_tensor_byte)
    with pytest.raises(CheckpointError, match=r"checkpoint_00000003.pt' is corrupt or truncated: its record "
                                              r"'[^']+/data/\d+' does not match its CRC-32 checksum") as info:
        ckpt.resolve_checkpoint(run / "checkpoint_00000003.pt")  # named explicitly: no fallback
    assert info.value.reason == "corrupt"
    path, state = ckpt.resolve_checkpoint(run)
    assert path.name == "checkpoint_00000002.pt" and state["iteration"] == 2


def test_truncated_message_is_whole_sentences(run_folder, tmp_path):
    run = _copy(run_folder, tmp_path)
    data = (run / "checkpoint_00000003.pt").read_bytes()
    (run / "checkpoint_00000003.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError) as info:
        ckpt.resolve_checkpoint(run / "checkpoint_00000003.pt")
    text = str(info.value)
    assert text.endswith("(random bytes, a cut-off copy or another kind of file)") and "..." not in text


def test_checkpoints_written_with_checksums_off_still_carry_them(tmp_path):
    torch.serialization.set_crc32_options(False)
    try:
        ckpt.atomic_save({"w": torch.arange(100.0)}, tmp_path / "a.pt")
    finally:
        torch.serialization.set_crc32_options(True)
    assert torch.equal(ckpt.safe_load(tmp_path / "a.pt")["w"], torch.arange(100.0))
    (tmp_path / "a.pt").write_bytes(_flip_tensor_byte((tmp_path / "a.pt").read_bytes()))
    with pytest.raises(CheckpointError, match="CRC-32"):
        ckpt.safe_load(tmp_path / "a.pt")


def test_resume_mismatch_lists_only_a_bounded_number_of_differing_keys(tmp_path):
    saved = {"env": {f"key_{i}": list(range(500)) for i in range(20)}, "trainer": {"num_envs": 4}, "policy": {}}
    now = {"env": {f"key_{i}": i for i in range(20)}, "trainer": {"num_envs": 8}, "policy": {}}
    with pytest.raises(CheckpointError) as info:
        ckpt.check_resume_compatible({"config": saved}, now, tmp_path / "c.pt")
    text = str(info.value)
    assert "21 env, model or num_envs settings differ" in text and "; and 15 more." in text
    assert "env.key_0: checkpoint [0, 1, 2" in text and len(text) < 1200


def test_excerpt_cuts_at_a_word_boundary():
    assert ckpt.excerpt("short  text\n here") == "short text here"
    cut = ckpt.excerpt("word " * 100, 50)
    assert len(cut) <= 50 and cut.endswith("word ...")


class _RunsCode:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_lightning_resume_is_weights_only_even_when_the_environment_says_otherwise(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    marker = tmp_path / "code_ran"
    evil = tmp_path / "last.ckpt"
    torch.save({"state_dict": {}, "x": _RunsCode(marker)}, evil)
    ckpt.verify_archive(evil)  # an intact archive: what refuses it is the weights-only load
    module = WarpDriveModule(_engine(tmp_path / "a"), iterations_per_epoch=1)
    with pytest.raises(Exception, match="(?i)weights.only|unpickling them could run code"):
        _fit(module, tmp_path / "a", max_epochs=1, ckpt_path=str(evil), checkpoint=False)
    assert not marker.exists()


@pytest.mark.parametrize("distribution", ["lightning", "pytorch_lightning"])
def test_fit_with_ckpt_path_as_tutorial_7_writes_it_is_weights_only_when_the_environment_forces_unsafe_loads(
        tmp_path, monkeypatch, caplog, distribution):
    """Issue 39: ``Trainer.fit(ckpt_path=...)`` without ``weights_only`` (tutorial 7) unpickled anything once
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``; the module's ``setup`` now warns and keeps the load weights-only."""
    import importlib

    pl = pytest.importorskip(distribution)
    ns = importlib.import_module("warp_drive.training.lightning" if distribution == "lightning"
                                 else "warp_drive.training.pytorch_lightning")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    marker = tmp_path / "code_ran"
    evil = tmp_path / "last.ckpt"
    torch.save({"state_dict": {}, "x": _RunsCode(marker)}, evil)
    module = ns.WarpDriveModule(_engine(tmp_path / "a"), iterations_per_epoch=1)
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, default_root_dir=str(tmp_path / "a"), accelerator="cpu",
                         reload_dataloaders_every_n_epochs=1)
    with pytest.raises(CheckpointError, match="refused to load Lightning checkpoint .* unpickling them could run code"):
        trainer.fit(module, datamodule=ns.WarpDriveDataModule(module), ckpt_path=str(evil))
    assert not marker.exists()
    assert "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set" in caplog.text


# ----------------------------------------------------------------------------- issue 39: crafted checkpoints
def _set(state, dotted, value):
    *parents, last = dotted.split(".")
    node = state
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value(node[last]) if callable(value) else value


_DELETE = object()
#: field -> crafted value (a callable edits the saved one), and the words of the one-line error
CRAFTED = {
    "iteration=-1": ("iteration", -1, "`iteration`=-1 is out of range"),
    "iteration=2**70": ("iteration", 2**70, "out of range; expected 0 <= value <= 2147483647"),
    "iteration=True": ("iteration", True, "`iteration`=True must be an integer"),
    "iteration='3'": ("iteration", "3", "`iteration`='3' must be an integer"),
    "iteration=nan": ("iteration", float("nan"), "`iteration`=nan must be an integer"),
    "timestep<0": ("policies.a.timestep", -7, "`policies.a.timestep`=-7 is out of range"),
    "agent_ids": ("policies.a.agent_ids", ["x"], "`policies.a.agent_ids`=['x'] must be a non-empty list"),
    "world_size=0": ("world_size", 0, "`world_size`=0 is out of range"),
    "world_size=2**70": ("world_size", 2**70, "`world_size`"),
    "config missing": ("config", _DELETE, "`config`=(missing) is missing"),
    "config 1 MB": ("config.env", lambda env: {**env, "junk": "x" * (1 << 20)}, "characters> is too large; a run config is a few KB"),  # the count grows with the config's keys
    "config not a mapping": ("config", [1, 2], "`config`=[1, 2] must be a mapping"),
    "run_dir NUL": ("run_dir", "/tmp/a\0b", "`run_dir`"),
    "rng size": ("rng.torch", lambda t: t[:100], "`rng.torch`=(100,) is the wrong size"),
    "rng dtype": ("rng.generator", lambda t: t.float(), "`rng.generator`=torch.float32 is the wrong dtype"),
    "rank_state missing": ("rank_state", _DELETE, "`rank_state`=(missing) is missing"),
    "data_store not tensors": ("rank_state.data_store.x", [1.0], "`rank_state.data_store.x`=[1.0] must be a tensor"),
    "carry": ("rank_state.episode_carry.a", [], "`rank_state.episode_carry.a`=[] must be a list of 2 tensors"),
    "started": ("rank_state.started", "yes", "`rank_state.started`='yes' must be true or false"),
    "perf garbage": ("perf.total", "fast", "`perf.total`='fast' must be a finite number >= 0"),
    "perf nan": ("perf.steps", float("nan"), "`perf.steps`=nan must be a finite number"),
    "policies empty": ("policies", {}, "`policies`={} holds no policy"),
}


def _crafted(run_folder, tmp_path, dotted, value):
    tmp_path.mkdir(parents=True, exist_ok=True)
    run = _copy(run_folder, tmp_path)
    state = torch.load(run / ckpt.LATEST, weights_only=True)
    _set(state, dotted, value)
    for name in (ckpt.LATEST, "checkpoint_00000003.pt"):
        torch.save(state, run / name)
    return run


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_checkpoint_field_is_named_on_one_line(run_folder, tmp_path, case, caplog):
    dotted, value, words = CRAFTED[case]
    run = _crafted(run_folder, tmp_path, dotted, value)
    with pytest.raises(CheckpointError) as info:
        ckpt.resolve_checkpoint(run / "checkpoint_00000003.pt")
    message = str(info.value)
    assert words in message and "tampered or foreign" in message and "\n" not in message, message
    assert len(message) < 600 and info.value.reason == "corrupt"  # exit 4
    path, state = ckpt.resolve_checkpoint(run)  # the run folder: the previous intact checkpoint, with a warning
    assert path.name == "checkpoint_00000002.pt" and state["iteration"] == 2 and words in caplog.text


def test_crafted_checkpoints_that_fit_no_run_are_named_on_load(run_folder, tmp_path, caplog):
    cases = {"rank_state.data_store.x": (lambda t: t.double(), "does not fit this run's array", "corrupt"),
             "rank_state.data_store._timestep_": (_DELETE, "`rank_state.data_store._timestep_`=(missing)", "corrupt"),
             "rank_state.data_store.foreign": (torch.zeros(3), "is not an array of this run's env", "corrupt"),
             "policies.a.agent_ids": ([3, 2], "differs from this run's agents", "mismatch")}
    for i, (dotted, (value, words, reason)) in enumerate(cases.items()):
        if dotted.endswith(".foreign"):
            dotted, value = "rank_state.data_store", (lambda store, extra=value: {**store, "foreign": extra})
        run = _crafted(run_folder, tmp_path / str(i), dotted, value)
        with pytest.raises(CheckpointError) as info:
            _trainer(tmp_path / f"t{i}", iters=3).load_checkpoint(run / "checkpoint_00000003.pt")
        assert words in str(info.value) and info.value.reason == reason, str(info.value)
    run = _crafted(run_folder, tmp_path / "w", "world_size", 2)
    t = _trainer(tmp_path / "tw", iters=4)
    t.load_checkpoint(run / "checkpoint_00000003.pt")
    assert t.iteration == 3 and "written by 2 process(es), this run has 1" in caplog.text


def test_a_crafted_checkpoint_ends_the_cli_with_exit_4_and_one_error_line(tmp_path, capsys):
    from warp_drive.cli import train

    tiny = ["--env", "cartpole", "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
            "env.episode_length=50", "--eval_episodes", "0"]
    assert train.main(tiny + ["trainer.num_episodes=8", "--results_dir", str(tmp_path / "run")]) == 0
    latest = tmp_path / "run" / "checkpoint_00000002.pt"  # a file named explicitly: no fallback
    state = torch.load(latest, weights_only=True)
    state["iteration"] = -3
    torch.save(state, latest)
    capsys.readouterr()
    assert train.main(tiny + ["--resume", str(latest)]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: checkpoint") and "`iteration`=-3 is out of range" in err[0], err
