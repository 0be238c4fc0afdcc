"""Config errors stay one short line: alias bombs and self-references are refused before anything
is expanded, values are shown as bounded excerpts, and files in other encodings get a typed error."""

from __future__ import annotations

import time

import pytest

from warp_drive.config import load_run_config
from warp_drive.config._yaml import MAX_NODES
from warp_drive.errors import ConfigError
from warp_drive.utils.excerpt import brief, excerpt

#: Ten anchors, each a list of nine aliases of the one before: about 9**10 values from ~2 KB.
ALIAS_BOMB = "a0: &a0 [" + ", ".join(["lol"] * 9) + "]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)
) + "trainer: {num_envs: *a9}\n"


def _message(call) -> str:
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        call()
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert "\n" not in message and len(message) < 500, message
    return message


def test_alias_bomb_file_fails_fast_with_one_line(tmp_path):
    assert len(ALIAS_BOMB) < 2048
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    message = _message(lambda: load_run_config(path))
    assert f"more than {MAX_NODES} values (an alias bomb?)" in message and "bomb.yaml" in message


def test_alias_bomb_override_and_self_reference():
    assert "alias bomb" in _message(lambda: load_run_config({}, ["env.x=" + ALIAS_BOMB.replace("\n", ", ")
                                                                 .join("{}")]))
    assert "refers to itself" in _message(lambda: load_run_config({}, ["env.x=&a [1, *a]"]))


def test_shared_aliases_within_the_limit_still_load():
    cfg = load_run_config({"policy": {"shared": {}}, "env": {"episode_length": 10}},
                          ["env.grid=&g {size: 4, walls: [1, 2]}"])
    assert cfg.env["grid"] == {"size": 4, "walls": [1, 2]}


def test_huge_values_are_shown_as_bounded_excerpts():
    huge = list(range(10**6))
    message = _message(lambda: load_run_config({"policy": {"shared": {"model": {"fc_dims": {"a": huge}}}}}))
    assert "fc_dims" in message and "..." in message
    nested: list = []
    for _ in range(60):
        nested = [nested, nested]  # shared: 2**60 leaves if expanded
    assert len(_message(lambda: load_run_config({"trainer": {"num_envs": nested}}))) < 300
    assert "bits>" in brief(10**5000) and len(brief("x" * 10**6)) <= 80
    assert excerpt("a  b\n c") == "a b c"


def test_utf16_file_loads_and_non_utf8_file_is_a_typed_error(tmp_path):
    utf16 = tmp_path / "utf16.yaml"
    utf16.write_text("policy: {shared: {}}\ntrainer: {num_envs: 2, train_batch_size: 20}\n", encoding="utf-16")
    assert load_run_config(utf16).trainer.num_envs == 2
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    message = _message(lambda: load_run_config(latin))
    assert "not UTF-8 text" in message and "save it as UTF-8" in message


# ----------------------------------------------------------------------------- issue 39's appendix: reading
@pytest.mark.parametrize("source", ["fifo", "/dev/zero", "/dev/urandom", "folder"])
def test_a_config_that_is_not_a_regular_file_is_refused_at_once(tmp_path, source):
    import os

    path = {"fifo": tmp_path / "fifo", "folder": tmp_path}.get(source, source)
    if source == "fifo":
        os.mkfifo(path)  # no writer: opening it would block
    assert "is not a regular file" in _message(lambda: load_run_config(path))


def test_a_config_file_over_the_size_cap_is_refused_with_a_bounded_read(tmp_path, monkeypatch):
    from warp_drive.config import load

    path = tmp_path / "big.yaml"
    path.write_text("#" * load.MAX_CONFIG_BYTES + "\n")  # 1 MiB of comments (the probe used 50 MB)
    assert "is larger than 1,048,576 bytes" in _message(lambda: load_run_config(path))
    reads = []
    real_open = open

    class Spy:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n=-1):
            reads.append(n)
            return self.f.read(n)

    monkeypatch.setattr("builtins.open", lambda *a, **k: Spy(real_open(*a, **k)))
    _message(lambda: load_run_config(path))
    assert reads == [load.MAX_CONFIG_BYTES + 1]


def test_one_long_string_named_by_many_aliases_is_refused():
    text = "s: &s " + "x" * 100_000 + "\nenv: {grid_length: [" + ", ".join(["*s"] * 99) + "]}\n"
    message = _message(lambda: load_run_config({}, ["env.grid_length={" + text.replace("\n", ", ") + "}"]))
    assert "more than 4,000,000 characters (an alias bomb?)" in message


def test_a_key_given_twice_is_refused_and_merge_keys_may_still_be_overridden(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("policy:\n  shared: {lr: 0.1}\n  other: {}\n  shared: {lr: 0.2}\n")
    message = _message(lambda: load_run_config(path))
    assert "key 'shared' is given twice in one mapping (lines 2 and 4)" in message and "dup.yaml" in message
    cfg = load_run_config({"policy": {"shared": {}}}, ["policy.shared={<<: {lr: 0.1, gamma: 0.9}, lr: 0.2}"])
    assert cfg.policy["shared"].lr == 0.2 and cfg.policy["shared"].gamma == 0.9
