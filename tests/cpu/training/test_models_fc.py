"""FullyConnected actor-critic, action specs from gymnasium spaces, and the model factory."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from warp_drive.config import ModelConfig
from warp_drive.errors import ConfigError, DataShapeError, DataTypeError
from warp_drive.training.algorithms import log_prob_and_entropy
from warp_drive.training.models import (
    ActionSpec,
    FullyConnected,
    ModelFactory,
    action_heads_from_space,
    obs_dims_from_space,
)


@pytest.mark.parametrize("lead", [(5, 3), (4, 5, 3), (7,)])
def test_categorical_output_shapes_and_probabilities(lead):
    torch.manual_seed(0)
    model = FullyConnected(6, ActionSpec(categorical=(4, 2, 3)), (16, 8))
    heads, values = model(torch.randn(*lead, 6))
    assert [h.shape for h in heads] == [(*lead, 4), (*lead, 2), (*lead, 3)]
    assert values.shape == lead
    for h in heads:
        torch.testing.assert_close(h.sum(-1), torch.ones(lead))
        assert torch.all(h >= 0)


def test_list_of_sizes_is_accepted_as_categorical_spec():
    model = FullyConnected(3, [5], ())
    heads, values = model(torch.randn(2, 3))
    assert heads[0].shape == (2, 5) and values.shape == (2,)
    assert len(list(model.trunk)) == 0  # empty fc_dims -> linear heads


def test_multi_dim_box_obs_is_flattened():
    model = FullyConnected((2, 3), [4], (8,))
    heads, values = model(torch.randn(5, 2, 3))
    assert heads[0].shape == (5, 4) and values.shape == (5,)
    with pytest.raises(DataShapeError):
        model(torch.randn(5, 6))


def test_dict_obs_concatenates_sorted_keys():
    torch.manual_seed(0)
    model = FullyConnected({"b": 3, "a": (2, 2)}, [4], (8,))
    assert model.obs_keys == ("a", "b") and model.obs_size == 7
    obs = {"b": torch.randn(5, 3), "a": torch.randn(5, 2, 2)}
    heads, values = model(obs)
    flat = torch.cat([obs["a"].reshape(5, 4), obs["b"]], -1)
    h = model.trunk(flat)
    torch.testing.assert_close(values, model.value_head(h).squeeze(-1))
    torch.testing.assert_close(heads[0], torch.softmax(model.policy_heads[0](h), -1))


def test_action_mask_key_masks_logits():
    torch.manual_seed(0)
    model = FullyConnected({"obs": 4, "action_mask": 5}, [3, 2], (8,))
    mask = torch.tensor([[1, 0, 1, 0, 1], [0, 0, 1, 1, 1]])
    heads, _ = model({"obs": torch.randn(2, 4), "action_mask": mask})
    assert heads[0][0, 1].item() == 0.0 and heads[0][1, :2].sum().item() == 0.0
    assert heads[1][0, 0].item() == 0.0
    for h in heads:
        torch.testing.assert_close(h.sum(-1), torch.ones(2))
    lp, ent = log_prob_and_entropy(heads, torch.tensor([[0, 1], [2, 0]]))
    assert torch.isfinite(lp).all() and torch.isfinite(ent).all()


def test_action_mask_argument_and_all_masked_head_stays_finite():
    model = FullyConnected(4, [3], (8,))
    heads, _ = model(torch.randn(2, 4), action_mask=torch.tensor([[1, 1, 0], [0, 0, 0]]))
    assert heads[0][0, 2].item() == 0.0
    assert torch.isfinite(heads[0]).all()
    with pytest.raises(DataShapeError):
        model(torch.randn(2, 4), action_mask=torch.ones(2, 4))


def test_mask_width_must_match_heads():
    with pytest.raises(DataShapeError, match="action_mask"):
        FullyConnected({"obs": 4, "action_mask": 6}, [3, 2], (8,))


def test_fused_heads_equal_each_linear_and_train_each_module():
    """The heads run as one matrix product; outputs and gradients are those of the separate modules."""
    torch.manual_seed(1)
    model = FullyConnected(6, ActionSpec(categorical=(4, 3)), (16,))
    x = torch.randn(10, 6)
    heads, values = model(x)
    h = model.trunk(x)
    for head, module in zip(heads, model.policy_heads):
        torch.testing.assert_close(head, torch.softmax(module(h), dim=-1))
    torch.testing.assert_close(values, model.value_head(h).squeeze(-1))
    (values.sum() + heads[1][:, 0].sum()).backward()
    assert model.value_head.weight.grad.abs().sum() > 0 and model.policy_heads[1].weight.grad.abs().sum() > 0
    assert model.policy_heads[0].weight.grad.abs().sum() == 0  # head 0 is not in the loss


def test_gaussian_head():
    model = FullyConnected(5, ActionSpec(gaussian_dim=2), (8,), log_std_init=-0.5)
    heads, values = model(torch.randn(4, 3, 5))
    assert len(heads) == 1
    mean, std = heads[0]
    assert mean.shape == std.shape == (4, 3, 2) and values.shape == (4, 3)
    torch.testing.assert_close(std, torch.full((4, 3, 2), float(np.exp(-0.5))))
    lp, ent = log_prob_and_entropy(heads, torch.randn(4, 3, 2))
    (lp.mean() - ent.mean()).backward()
    assert model.log_std.grad is not None and torch.all(model.log_std.grad != 0)


@pytest.mark.parametrize("init", ["default", "xavier", "orthogonal"])
def test_init_methods(init):
    torch.manual_seed(0)
    model = FullyConnected(4, [3], (8, 8), init_method=init)
    heads, values = model(torch.randn(10, 4))
    assert torch.isfinite(values).all()
    if init == "orthogonal":
        assert torch.all(model.value_head.bias == 0)
        w = model.trunk[0].weight
        torch.testing.assert_close(w.T @ w, 2.0 * torch.eye(4), atol=1e-5, rtol=1e-5)


def test_unknown_init_method():
    with pytest.raises(ConfigError):
        FullyConnected(4, [3], (8,), init_method="kaiming")


def test_tanh_activation_from_config_kwargs_and_its_forward():
    """``model.kwargs.activation: tanh`` (stable-baselines3's MlpPolicy default): Tanh after each
    hidden layer, the same parameter names (2.7.1's saved policies still map), the heads on tanh features."""
    torch.manual_seed(0)
    cfg = ModelConfig.from_dict({"fc_dims": [8, 8], "init_method": "orthogonal", "kwargs": {"activation": "tanh"}})
    model = ModelFactory().build(cfg, (4,), ActionSpec(categorical=(3,)))
    assert [type(m) for m in model.trunk] == [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh]
    assert set(model.state_dict()) == set(FullyConnected(4, [3], (8, 8)).state_dict())
    x = torch.randn(5, 4) * 3
    h = torch.tanh(model.trunk[2](torch.tanh(model.trunk[0](x))))
    heads, values = model(x)
    torch.testing.assert_close(values, model.value_head(h).squeeze(-1))
    torch.testing.assert_close(heads[0], torch.softmax(model.policy_heads[0](h), -1))
    relu = FullyConnected(4, [3], (8, 8))
    relu.load_state_dict(model.state_dict())
    assert not torch.allclose(relu(x)[1], values)  # the activation is what differs


def test_unknown_activation_names_the_value_and_the_choices():
    with pytest.raises(ConfigError, match=r"activation='gelu' \(model.kwargs.activation\).*relu, tanh"):
        FullyConnected(4, [3], (8,), activation="gelu")


def test_action_heads_from_space():
    assert action_heads_from_space(spaces.Discrete(5)) == ActionSpec(categorical=(5,))
    spec = action_heads_from_space(spaces.MultiDiscrete([11, 21]))
    assert spec.categorical == (11, 21) and spec.num_columns == 2 and spec.num_logits == 32
    box = action_heads_from_space(spaces.Box(-1, 1, shape=(3,)))
    assert box.is_gaussian and box.gaussian_dim == 3 and box.num_heads == 1 and box.num_columns == 3
    with pytest.raises(DataTypeError):
        action_heads_from_space(spaces.MultiBinary(3))
    with pytest.raises(DataShapeError):
        action_heads_from_space(spaces.MultiDiscrete(np.array([[2, 3], [4, 5]])))


def test_obs_dims_from_space():
    assert obs_dims_from_space(spaces.Box(0, 1, shape=(71,))) == (71,)
    dims = obs_dims_from_space(
        spaces.Dict({"obs": spaces.Box(0, 1, shape=(2, 3)), "action_mask": spaces.MultiBinary(4)})
    )
    assert dims == {"obs": (2, 3), "action_mask": (4,)}
    model = FullyConnected(dims, [4], (8,))
    assert model.obs_size == 6


def test_action_spec_validation():
    with pytest.raises(DataShapeError):
        ActionSpec()
    with pytest.raises(DataShapeError):
        ActionSpec(categorical=(2,), gaussian_dim=2)
    with pytest.raises(DataShapeError):
        ActionSpec(categorical=(0,))


class TinyModel(nn.Module):
    def __init__(self, obs_dims, action_spec, width=4):
        super().__init__()
        self.action_spec = action_spec
        self.width = width
        self.net = nn.Linear(obs_dims[0], action_spec.num_logits + 1)

    def forward(self, obs):
        out = self.net(obs)
        return [torch.softmax(out[..., :-1], -1)], out[..., -1]


def test_factory_builtin_add_create_build():
    factory = ModelFactory()
    assert factory.create("fully_connected") is FullyConnected
    cfg = ModelConfig.from_dict({"fc_dims": [32, 32]})
    model = factory.build(cfg, (6,), ActionSpec(categorical=(3,)))
    assert isinstance(model, FullyConnected) and model.trunk[0].out_features == 32

    factory.add("tiny", TinyModel)
    tiny = factory.build(
        ModelConfig.from_dict({"type": "tiny", "kwargs": {"width": 7}}),
        (6,),
        ActionSpec(categorical=(3,)),
    )
    assert isinstance(tiny, TinyModel) and tiny.width == 7
    factory.add("lazy", "warp_drive.training.models.fully_connected:FullyConnected")
    assert factory.create("lazy") is FullyConnected
    assert "tiny" not in ModelFactory().names()  # no class-level shared state


def test_factory_errors():
    factory = ModelFactory()
    with pytest.raises(ConfigError, match="already registered"):
        factory.add("fully_connected", TinyModel)
    with pytest.raises(ConfigError, match="did you mean 'fully_connected'"):
        factory.create("fully_conected")
    factory.add("broken", "no_such_module_xyz:Model")
    with pytest.raises(ConfigError, match="cannot import"):
        factory.create("broken")
    with pytest.raises(ConfigError):
        factory.add("bad", "no_colon_path")


def test_cached_head_weights_give_the_same_outputs_and_only_without_grad():
    from warp_drive.training.engine.acting import cached_head_weights

    torch.manual_seed(3)
    model = FullyConnected(6, [3, 4], fc_dims=(8,))
    x = torch.randn(5, 6)
    with torch.no_grad():
        want_probs, want_values = model(x)
    with cached_head_weights([model]):
        assert model._head_weights is not None and model._head_weights[0].grad_fn is None
        with torch.no_grad():
            probs, values = model(x)
        _, graded = model(x)  # with grad: the live weights, so gradients reach the heads
        graded.sum().backward()
    assert model._head_weights is None
    assert torch.equal(values, want_values) and all(torch.equal(a, b) for a, b in zip(probs, want_probs))
    assert model.value_head.weight.grad is not None
    with pytest.raises(RuntimeError), cached_head_weights([model]):
        raise RuntimeError("the cache is dropped on errors too")
    assert model._head_weights is None
