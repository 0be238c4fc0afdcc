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
from warp_drive.training import checkpoint as ckpt
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
    with pytest.raises(Exception, match="(?i)weights.only"):
        _fit(module, tmp_path / "a", max_epochs=1, ckpt_path=str(evil), checkpoint=False)
    assert not marker.exists()
