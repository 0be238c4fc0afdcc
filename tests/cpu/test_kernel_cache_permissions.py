"""The kernel cache is private: created 0700, and an entry the user does not own, or that others
can write, or that is not a regular file, or whose bytes do not match the digest recorded when it was
written, is not loaded but rebuilt (with a warning). A stand-in
nvcc (a shell script) makes these tests fast and independent of the CUDA toolkit."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from warp_drive.compat271 import main_files
from warp_drive.cuda import compiler

SOURCE = "__global__ void k() {}\n"


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """$WARP_DRIVE_NVCC -> a script writing a fake cubin; returns a function giving its call count."""
    calls = tmp_path / "calls"
    script = tmp_path / "nvcc"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 12.4, V12.4.0"; exit 0; fi\n'
        'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done\n'
        f'echo call >> "{calls}"\n'
        'printf "FAKE-CUBIN" > "$out"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("WARP_DRIVE_NVCC", str(script))
    monkeypatch.delenv("WARP_DRIVE_NVCC_OPTIONS", raising=False)
    monkeypatch.setattr(compiler, "_FALLBACK_CACHE", None)
    compiler.nvcc_version.cache_clear()
    yield lambda: len(calls.read_text().splitlines()) if calls.exists() else 0
    compiler.nvcc_version.cache_clear()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_cache_directory_is_created_private(tmp_path, monkeypatch, fake_nvcc):
    cache = tmp_path / "a" / "b" / "kernels"
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(cache))
    cubin = compiler.compile_cubin(SOURCE, "sm_90")
    assert cubin.parent == cache and cubin.read_bytes() == b"FAKE-CUBIN" and fake_nvcc() == 1
    for d in (cache, cache.parent, cache.parent.parent):  # every directory it created
        assert mode(d) == 0o700, d
    assert mode(cubin) & 0o077 == 0  # the entry is not readable or writable by others
    assert compiler.compile_cubin(SOURCE, "sm_90") == cubin and fake_nvcc() == 1  # a trusted hit


def test_an_existing_cache_directory_of_the_user_is_made_private(tmp_path, monkeypatch, fake_nvcc):
    cache = tmp_path / "kernels"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(cache))
    compiler.compile_cubin(SOURCE, "sm_90")
    assert mode(cache) == 0o700


def test_a_group_or_world_writable_entry_is_rebuilt(tmp_path, monkeypatch, fake_nvcc, caplog):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    cubin = compiler.compile_cubin(SOURCE, "sm_90")
    cubin.write_bytes(b"TAMPERED")
    cubin.chmod(0o666)
    with caplog.at_level(logging.WARNING, logger="warp_drive.cuda.compiler"):
        again = compiler.compile_cubin(SOURCE, "sm_90")
    assert again == cubin and again.read_bytes() == b"FAKE-CUBIN" and fake_nvcc() == 2
    assert compiler.last_build_compiled
    assert "group- or world-writable" in caplog.text and "not loading it" in caplog.text
    assert mode(cubin) & 0o022 == 0


def test_an_entry_owned_by_another_user_is_rebuilt(tmp_path, monkeypatch, fake_nvcc, caplog):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    cubin = compiler.compile_cubin(SOURCE, "sm_90")
    owner = os.stat(cubin).st_uid
    # the entry now looks foreign: this process runs as another uid (the directory is checked first,
    # so it is re-owned in the same way)
    monkeypatch.setattr(compiler, "ensure_cache_dir", lambda: cubin.parent)
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with caplog.at_level(logging.WARNING, logger="warp_drive.cuda.compiler"):
        assert not compiler.trusted_cache_entry(cubin)
        compiler.compile_cubin(SOURCE, "sm_90")
    assert fake_nvcc() == 2 and f"belongs to another user (uid {owner})" in caplog.text


def test_a_symlinked_entry_is_rebuilt(tmp_path, monkeypatch, fake_nvcc, caplog):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    cubin = compiler.compile_cubin(SOURCE, "sm_90")
    elsewhere = tmp_path / "planted.cubin"
    elsewhere.write_bytes(b"PLANTED")
    elsewhere.chmod(0o600)
    cubin.unlink()
    cubin.symlink_to(elsewhere)
    with caplog.at_level(logging.WARNING, logger="warp_drive.cuda.compiler"):
        again = compiler.compile_cubin(SOURCE, "sm_90")
    assert fake_nvcc() == 2 and "is not a regular file" in caplog.text
    assert not again.is_symlink() and again.read_bytes() == b"FAKE-CUBIN"
    assert elsewhere.read_bytes() == b"PLANTED"  # the link's target was not written through


def test_a_cache_directory_of_another_user_is_not_used(tmp_path, monkeypatch, fake_nvcc, caplog):
    cache = tmp_path / "shared"
    cache.mkdir()
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(cache))
    monkeypatch.setattr(os, "getuid", lambda: os.stat(cache).st_uid + 1)
    with caplog.at_level(logging.WARNING, logger="warp_drive.cuda.compiler"):
        cubin = compiler.compile_cubin(SOURCE, "sm_90")
    try:
        assert cubin.parent != cache and not any(cache.iterdir())
        assert "belongs to another user" in caplog.text and "WARP_DRIVE_CACHE_DIR" in caplog.text
        assert mode(cubin.parent) == 0o700
    finally:
        import shutil

        shutil.rmtree(cubin.parent, ignore_errors=True)


def test_binary_source_ignores_an_untrusted_source_entry(tmp_path, monkeypatch, fake_nvcc):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    main = tmp_path / "main.cu"
    main.write_text(SOURCE)
    built = main_files.compile_main_file(main, None, "sm_90")
    assert main_files.binary_source(built.binary) == built.source
    index = next((tmp_path / "cache" / "sources").iterdir())
    assert mode(index.parent) == 0o700
    index.chmod(0o646)
    assert main_files.binary_source(built.binary) is None


@pytest.mark.parametrize("damage", ["tampered", "zero bytes", "no digest"])
def test_an_entry_not_matching_its_recorded_digest_is_rebuilt(tmp_path, monkeypatch, fake_nvcc, caplog, damage):
    from warp_drive.cuda.cache_digest import digest_path

    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    cubin = compiler.compile_cubin(SOURCE, "sm_90")
    assert digest_path(cubin).is_file() and mode(digest_path(cubin)) & 0o077 == 0
    if damage == "no digest":
        digest_path(cubin).unlink()
    else:
        cubin.write_bytes(b"" if damage == "zero bytes" else b"FAKE-CUBIM")  # same owner and mode
    with caplog.at_level(logging.WARNING):
        again = compiler.compile_cubin(SOURCE, "sm_90")
    assert again == cubin and again.read_bytes() == b"FAKE-CUBIN" and fake_nvcc() == 2 and compiler.last_build_compiled
    expected = "no readable digest record" if damage == "no digest" else "does not match the SHA-256 recorded"
    assert expected in caplog.text and "it is rebuilt" in caplog.text
    assert compiler.compile_cubin(SOURCE, "sm_90") == cubin and fake_nvcc() == 2  # the rebuilt entry is a hit
