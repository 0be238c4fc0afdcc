"""``Rollout.sample`` draws each categorical policy's heads (and its copy into the joint
``sampled_actions`` placeholder) with one ``Sampler.sample_heads`` call per step; the trainer's
results must be those of the per-head path it replaces (one ``sample`` per head, then
``index_copy_``), bit for bit: rollout buffers, env state, sampler counters and trained weights.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cpu.training.test_rollout_order import _assert_same, _state, _train, _trainer
from warp_drive.services.sampler import Sampler


def _spy(monkeypatch: pytest.MonkeyPatch, fused: bool) -> dict[str, int]:
    """Count the sampler's calls; with ``fused`` False, make every policy take the per-head path."""
    calls = {"sample_heads": 0, "sample": 0}
    for name in calls:
        original = getattr(Sampler, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Sampler, name, counted)
    if not fused:
        monkeypatch.setattr(Sampler, "fits_heads", lambda *args, **kwargs: False)
    return calls


@pytest.mark.parametrize("name, own_placeholders", [("tag", True), ("pool", True), ("one_policy", False)])
def test_one_sampler_call_per_policy_and_step_gives_the_per_head_results(tmp_path: Path, monkeypatch, name,
                                                                         own_placeholders):
    results = {}
    for fused in (True, False):
        with monkeypatch.context() as m:
            calls = _spy(m, fused)
            t = _trainer(tmp_path / str(fused), name)
            lasts = _train(t, iterations=2)
            results[fused] = (lasts, _state(t), dict(calls), t)
    (lasts_f, state_f, calls_f, t), (lasts_p, state_p, calls_p, _) = results[True], results[False]
    for a, b in zip(lasts_f, lasts_p):
        _assert_same(a, b)
    _assert_same(state_f, state_p)
    steps = 2 * t.steps_per_iter
    heads = {tag: len(p.action_spec.categorical) for tag, p in t.policies.items()}
    assert calls_f == {"sample_heads": steps * len(t.policies), "sample": 0}
    assert calls_p == {"sample_heads": 0, "sample": steps * sum(heads.values())}
    assert all(p.action_name != "sampled_actions" for p in t.policies.values()) == own_placeholders
    assert t.rollout.shared.done.any()  # episodes ended inside the rollouts


def test_gaussian_policies_keep_their_sampler(tmp_path: Path, monkeypatch):
    with monkeypatch.context() as m:
        calls = _spy(m, fused=True)
        _train(_trainer(tmp_path, "gaussian"), iterations=1)
    assert calls == {"sample_heads": 0, "sample": 0}
