"""``trainer.compile`` and ``trainer.rollout_precision: bf16`` on the GPU: the compiled, CUDA-graph-captured
minibatch step trains the weights the plain eager step trains (fp32: to float rounding, Inductor's fusions
reorder sums), and a Trainer with both options trains with a captured rollout and update."""

from __future__ import annotations

import copy

import pytest

from tests.gpu.test_graphed_update_gpu import _setup

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def assert_graphed_step_trains_the_eager_weights(model, algorithm, batch, dtype, **loss_options):
    """A captured minibatch step whose forward + loss is ``LossFunction(**loss_options)`` trains a copy of
    ``model`` to the weights (and metrics) the plain eager step trains (``dtype``: None or "bf16" autocast);
    returns that LossFunction."""
    from warp_drive.training.algorithms.actor_critic.graphed_update import GraphedUpdate, match_device_form
    from warp_drive.training.algorithms.actor_critic.update import update_policy
    from warp_drive.training.algorithms.compiled import LossFunction

    autocast = torch.bfloat16 if dtype else None
    twin, twin_algorithm = copy.deepcopy(model), copy.deepcopy(algorithm)
    before = [p.detach().clone() for p in model.parameters()]
    opt, twin_opt = (torch.optim.Adam(m.parameters(), lr=1e-3) for m in (model, twin))
    match_device_form(opt)
    loss_fn = LossFunction(twin, twin_algorithm, autocast, **loss_options)
    graphed = GraphedUpdate(twin, twin_opt, twin_algorithm, batch, num_minibatches=4, max_grad_norm=0.5,
                            autocast_dtype=autocast, loss_fn=loss_fn)
    eager = update_policy(model, opt, algorithm, batch, timestep=0, num_epochs=2, num_minibatches=4, max_grad_norm=0.5,
                          generator=torch.Generator("cuda").manual_seed(3), autocast_dtype=autocast)
    replayed = graphed.run(timestep=0, num_epochs=2, generator=torch.Generator("cuda").manual_seed(3))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is None else dict(rtol=0.05, atol=2e-3)
    moved = 0.0
    for (name, a), b, start in zip(model.named_parameters(), twin.parameters(), before):
        torch.testing.assert_close(b, a, **tol, msg=name)
        moved = max(moved, float((a - start).abs().max()))
    assert moved > 1e-4  # the weights did move
    for key in eager:
        torch.testing.assert_close(replayed[key], eager[key].float(), rtol=0.05, atol=0.02, msg=key)
    return loss_fn


@pytest.mark.parametrize("dtype", [None, "bf16"])
def test_compiled_graphed_step_trains_the_eager_weights(no_tf32, dtype):
    model, algorithm, batch = _setup()
    loss_fn = assert_graphed_step_trains_the_eager_weights(model, algorithm, batch, dtype, compile=True)
    assert loss_fn.compiled


def test_trainer_trains_compiled_with_a_bf16_rollout(tmp_path):
    t = _tag_trainer(tmp_path, ["trainer.compile=true", "trainer.rollout_precision=bf16", "trainer.update_precision=bf16"])
    before = {tag: [q.detach().clone() for q in p.model.parameters()] for tag, p in t.policies.items()}
    t.train(4)
    assert t.graphed_rollout is not None and t.graphed_rollout.captured
    for tag, p in t.policies.items():
        assert p.loss_fn is not None and p.loss_fn.compiled and p.graphed is not None, tag
        after = list(p.model.parameters())
        assert all(torch.isfinite(q).all() for q in after), tag
        assert max(float((a - b).abs().max()) for a, b in zip(after, before[tag])) > 0, tag
    assert t.perf["steps"] == 4 * 2000


def _tag_trainer(tmp_path, overrides):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    cfg = load_run_config(get_default_config_path("tag_continuous"), [
        "env.num_taggers=2", "env.num_runners=10", "trainer.num_envs=50", "trainer.train_batch_size=2000",
        "trainer.num_episodes=1000", "trainer.seed=7", "saving.metrics_log_freq=1000", *overrides])
    env = get_example_env_class("tag_continuous")(**cfg.env)
    wrapper = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend="pycuda")
    return Trainer(wrapper, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, results_dir=str(tmp_path))
