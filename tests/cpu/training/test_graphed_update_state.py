"""The optimizer-state helpers of the CUDA-graph-captured update, on the CPU: a checkpoint of a
graphed run holds the eager optimizer form, and learning-rate schedules write a tensor rate in place."""

from __future__ import annotations

import copy

import torch

from warp_drive.training.algorithms.actor_critic.graphed_update import match_device_form, portable_optimizer_state
from warp_drive.training.utils.param_scheduler import set_optimizer_lr


def _stepped_adam():
    params = [torch.nn.Parameter(torch.randn(3, 2)), torch.nn.Parameter(torch.randn(2))]
    opt = torch.optim.Adam(params, lr=0.01)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    return params, opt


def _graph_form(opt):
    """The form a captured step's optimizer has on CUDA (match_device_form there), built on CPU tensors."""
    for group in opt.param_groups:
        group["capturable"] = True
        group["lr"] = torch.tensor(float(group["lr"]))


def test_schedules_write_a_tensor_rate_in_place():
    _, opt = _stepped_adam()
    _graph_form(opt)
    rate = opt.param_groups[0]["lr"]
    set_optimizer_lr(opt, 0.003)
    assert opt.param_groups[0]["lr"] is rate and abs(float(rate) - 0.003) < 1e-9


def test_match_device_form_gives_cpu_parameters_the_eager_form():
    """A state saved in the graph form (e.g. a Lightning checkpoint of a GPU run) steps on the CPU."""
    params, opt = _stepped_adam()
    _graph_form(opt)
    match_device_form(opt)
    group = opt.param_groups[0]
    assert group["capturable"] is False and isinstance(group["lr"], float) and abs(group["lr"] - 0.01) < 1e-9
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    assert float(opt.state[params[0]]["step"]) == 2.0


def test_set_optimizer_lr_assigns_a_float_rate():
    _, opt = _stepped_adam()
    set_optimizer_lr(opt, 0.2)
    assert opt.param_groups[0]["lr"] == 0.2


def test_portable_state_loads_into_an_eager_adam_and_leaves_the_live_state_alone():
    params, opt = _stepped_adam()
    _graph_form(opt)
    live = opt.state_dict()
    before = copy.deepcopy(live)
    portable = portable_optimizer_state(live)
    group = portable["param_groups"][0]
    assert group["capturable"] is False and abs(group["lr"] - 0.01) < 1e-9 and isinstance(group["lr"], float)
    assert all(s["step"].device.type == "cpu" and float(s["step"]) == 1.0 for s in portable["state"].values())
    assert opt.param_groups[0]["capturable"] is True and isinstance(opt.param_groups[0]["lr"], torch.Tensor)
    assert live["param_groups"][0]["capturable"] is before["param_groups"][0]["capturable"]
    fresh_params = [torch.nn.Parameter(p.detach().clone()) for p in params]
    fresh = torch.optim.Adam(fresh_params, lr=0.5)
    fresh.load_state_dict(portable)
    assert abs(fresh.param_groups[0]["lr"] - 0.01) < 1e-9 and fresh.param_groups[0]["capturable"] is False
    for p in fresh_params:
        p.grad = torch.ones_like(p)
    fresh.step()  # an eager CPU step on the loaded state
    torch.testing.assert_close(fresh.state[fresh_params[0]]["exp_avg"], 0.19 * torch.ones(3, 2))


def test_portable_state_of_an_eager_optimizer_is_the_same_state():
    _, opt = _stepped_adam()
    live = opt.state_dict()
    portable = portable_optimizer_state(live)
    assert portable["param_groups"] == live["param_groups"]
    assert all(portable["state"][k]["step"] is live["state"][k]["step"] for k in live["state"])
