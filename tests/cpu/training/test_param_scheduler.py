"""ParamScheduler and LRScheduler."""

from __future__ import annotations

import pytest
import torch

from warp_drive.errors import ConfigError
from warp_drive.training.utils import (
    LRScheduler,
    ParamScheduler,
    iterate_minibatches,
    set_optimizer_lr,
)


def test_constant():
    s = ParamScheduler(0.3)
    assert s.get_param_value(0) == 0.3 and s(10**9) == 0.3 and s.is_constant


def test_piecewise_linear():
    s = ParamScheduler([[100, 1.0], [200, 0.0], [400, 0.5]])
    assert s(0) == 1.0 and s(100) == 1.0
    assert s(150) == pytest.approx(0.5)
    assert s(200) == 0.0
    assert s(300) == pytest.approx(0.25)
    assert s(10**6) == 0.5
    assert not s.is_constant


def test_step_with_repeated_timestep():
    s = ParamScheduler([[0, 1.0], [10, 1.0], [10, 2.0]])
    assert s(5) == 1.0 and s(11) == 2.0


@pytest.mark.parametrize("bad", [[], [[10, 1.0], [5, 2.0]], [[1, 2, 3]], "abc", True])
def test_malformed_schedules(bad):
    with pytest.raises(ConfigError):
        ParamScheduler(bad, name="policy.x.lr")


def test_negative_timestep():
    with pytest.raises(ValueError):
        ParamScheduler(1.0)(-1)


def test_lr_scheduler_follows_schedule_and_reaches_zero():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=123.0)
    sched = LRScheduler(
        [[0, 1e-3], [1000, 0.0]], opt, init_timestep=250, timesteps_per_iteration=250
    )
    assert opt.param_groups[0]["lr"] == pytest.approx(7.5e-4)
    lrs = []
    for _ in range(4):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == pytest.approx([5e-4, 2.5e-4, 0.0, 0.0])
    assert sched.timestep() == 1250
    set_optimizer_lr(opt, 0.1)
    assert opt.param_groups[0]["lr"] == 0.1


def test_iterate_minibatches_covers_every_sample_once():
    b, e, a = 4, 3, 2
    ids = torch.arange(b * e).reshape(b, e, 1).expand(b, e, a).float()
    batch = {
        "obs": {"x": ids.unsqueeze(-1)},
        "advantages": ids,
        "actions": ids.unsqueeze(-1).long(),
    }
    g = torch.Generator().manual_seed(0)
    seen = []
    for mb in iterate_minibatches(batch, 3, generator=g):
        assert mb["advantages"].shape == (4, a) and mb["obs"]["x"].shape == (4, a, 1)
        torch.testing.assert_close(mb["obs"]["x"].squeeze(-1), mb["advantages"])
        seen += mb["advantages"][:, 0].tolist()
    assert sorted(seen) == list(range(b * e))
    with pytest.raises(Exception, match="divide"):
        list(iterate_minibatches(batch, 5))
