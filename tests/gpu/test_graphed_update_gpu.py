"""The CUDA-graph-captured minibatch step (warp_drive.training.algorithms.actor_critic.graphed_update) against
the eager update it replaces: same weights, same metrics, schedules and reloads honoured."""

from __future__ import annotations

import copy

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _setup(seed=0, steps=8, envs=16, agents=5, obs=23, heads=(4, 3), activation="relu", model_class=None):
    """``model_class`` FullyConnectedSeparateCritic: a critic input of 3 * obs values ({"actor", "critic"} obs)."""
    from warp_drive.training.algorithms.actor_critic.ppo import PPO
    from warp_drive.training.buffers import RolloutBatch
    from warp_drive.training.models.fully_connected import FullyConnected

    g = torch.Generator().manual_seed(seed)
    separate = model_class is not None
    extra = {"critic_dims": (3 * obs,)} if separate else {}
    model = (model_class or FullyConnected)(obs, list(heads), fc_dims=(64, 64), normalize_obs=True, activation=activation,
                                            **extra).cuda()
    cols = [torch.randint(0, n, (steps, envs, agents, 1), generator=g) for n in heads]
    own = torch.randn(steps, envs, agents, obs, generator=g).cuda()
    batch = RolloutBatch(
        obs={"actor": own, "critic": torch.randn(steps, envs, agents, 3 * obs, generator=g).cuda()} if separate else own,
        actions=torch.cat(cols, -1).int().cuda(),
        advantages=torch.randn(steps, envs, agents, generator=g).cuda(),
        returns=torch.randn(steps, envs, agents, generator=g).cuda(),
        old_log_probs=(-torch.rand(steps, envs, agents, generator=g) * 2).cuda(),
        old_values=torch.randn(steps, envs, agents, generator=g).cuda(),
    )
    algorithm = PPO(clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=[[0, 0.05], [1000, 0.0]],
                    normalize_advantage=True, normalize_return=True).to("cuda")
    return model, algorithm, batch


def _eager_and_graphed(autocast_dtype=None, epochs=3, minibatches=4, activation="relu", model_class=None):
    from warp_drive.training.algorithms.actor_critic.graphed_update import GraphedUpdate, match_device_form
    from warp_drive.training.algorithms.actor_critic.update import update_policy
    from warp_drive.training.utils.param_scheduler import set_optimizer_lr

    model, algorithm, batch = _setup(activation=activation, model_class=model_class)
    twin, twin_algorithm = copy.deepcopy(model), copy.deepcopy(algorithm)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    twin_opt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    match_device_form(opt)  # the same Adam arithmetic on both sides
    gen_a = torch.Generator("cuda").manual_seed(3)
    gen_b = torch.Generator("cuda").manual_seed(3)
    graphed = None
    metrics = []
    for it, (lr, timestep) in enumerate([(1e-3, 0), (5e-4, 500), (2e-4, 1000)]):
        set_optimizer_lr(opt, lr)
        eager = update_policy(model, opt, algorithm, batch, timestep=timestep, num_epochs=epochs,
                              num_minibatches=minibatches, max_grad_norm=0.5, generator=gen_a,
                              autocast_dtype=autocast_dtype)
        if graphed is None:
            graphed = GraphedUpdate(twin, twin_opt, twin_algorithm, batch, num_minibatches=minibatches,
                                    max_grad_norm=0.5, autocast_dtype=autocast_dtype)
        set_optimizer_lr(twin_opt, lr)
        replayed = graphed.run(timestep=timestep, num_epochs=epochs, generator=gen_b)
        metrics.append((eager, replayed))
        batch.advantages.mul_(1.1)  # the buffers change in place between updates, as a rollout writes them
    return model, twin, metrics


@pytest.mark.parametrize("activation", ["relu", "tanh"])  # relu: fused GEMM on CUDA; tanh: the plain trunk
def test_graphed_step_trains_the_eager_weights_fp32(no_tf32, activation):
    model, twin, metrics = _eager_and_graphed(activation=activation)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(model.buffers(), twin.buffers()):  # observation statistics, merged after the steps
        torch.testing.assert_close(a, b)
    for eager, replayed in metrics:
        assert list(replayed) == list(eager)
        for key in eager:
            torch.testing.assert_close(replayed[key], eager[key].float(), rtol=1e-5, atol=1e-6, msg=key)
    # the schedules reached the graph: the entropy coefficient decayed 0.05 -> 0.025 -> 0
    assert [round(float(r["entropy_coeff"]), 6) for _, r in metrics] == [0.05, 0.025, 0.0]


def test_graphed_step_trains_the_eager_weights_bf16(no_tf32):
    model, twin, metrics = _eager_and_graphed(autocast_dtype=torch.bfloat16)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    for eager, replayed in metrics:
        torch.testing.assert_close(replayed["loss"], eager["loss"], rtol=1e-4, atol=1e-5)


def test_graphed_step_with_a_separate_critic_trains_the_eager_weights(no_tf32):
    """A two-network input ({"actor", "critic"}: critic_input other than the actor's) through the captured step."""
    from warp_drive.training.models.separate_critic import FullyConnectedSeparateCritic

    model, twin, metrics = _eager_and_graphed(model_class=FullyConnectedSeparateCritic)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(model.buffers(), twin.buffers()):  # both inputs' statistics
        torch.testing.assert_close(a, b)
    for eager, replayed in metrics:
        torch.testing.assert_close(replayed["loss"], eager["loss"].float(), rtol=1e-5, atol=1e-6)


def test_graphed_step_one_minibatch_a2c(no_tf32):
    """One minibatch per pass (no gather) and A2C's loss."""
    from warp_drive.training.algorithms.actor_critic.a2c import A2C
    from warp_drive.training.algorithms.actor_critic.graphed_update import GraphedUpdate, match_device_form
    from warp_drive.training.algorithms.actor_critic.update import update_policy

    model, _, batch = _setup(seed=1)
    algorithm = A2C(vf_loss_coeff=1.0, entropy_coeff=0.01)
    twin = copy.deepcopy(model)
    opt, twin_opt = torch.optim.Adam(model.parameters(), lr=3e-3), torch.optim.Adam(twin.parameters(), lr=3e-3)
    match_device_form(opt)
    graphed = GraphedUpdate(twin, twin_opt, algorithm, batch, num_minibatches=1, max_grad_norm=None, autocast_dtype=None)
    for _ in range(3):
        eager = update_policy(model, opt, algorithm, batch, timestep=0)
        replayed = graphed.run(timestep=0, num_epochs=1, generator=None)
    torch.testing.assert_close(replayed["loss"], eager["loss"], rtol=1e-5, atol=1e-6)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def _tag_trainer(tmp_path, graph, extra=()):
    from tests.gpu.test_gpu_training import _trainer

    return _trainer("tag_continuous", ["trainer.num_envs=8", "trainer.train_batch_size=400", "trainer.seed=4",
                                       "env.num_runners=20", "env.episode_length=100", f"trainer.use_cuda_graph={graph}",
                                       "policy.runner.num_epochs=2",
                                       "policy.runner.num_minibatches=4", *extra], tmp_path)


def test_trainer_replays_graphed_updates_and_checkpoints_load_on_cpu(tmp_path):
    """Trainer.train with use_cuda_graph: every trained policy replays a captured step; its
    checkpoint holds the eager optimizer form (loads on the CPU); a reload recaptures and the
    run goes on."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    t = _tag_trainer(tmp_path / "a", True)
    t.train(3)
    assert all(p.graphed is not None for p in t.policies.values() if p.to_train)
    state = {tag: p.state_dict() for tag, p in t.policies.items()}
    for tag, s in state.items():
        for group in s["optimizer"]["param_groups"]:
            assert group.get("capturable") is False and isinstance(group["lr"], float)
        steps = [v["step"] for v in s["optimizer"]["state"].values()]
        assert steps and all(step.device.type == "cpu" for step in steps)
        cpu_params = [torch.nn.Parameter(torch.zeros_like(p, device="cpu")) for p in t.policies[tag].model.parameters()]
        cpu_opt = torch.optim.Adam(cpu_params, lr=1e-3)
        cpu_opt.load_state_dict(copy.deepcopy(s["optimizer"]))
        for p in cpu_params:
            p.grad = torch.ones_like(p)
        cpu_opt.step()  # an eager CPU Adam takes the graphed run's state
    runner = t.policies["runner"]
    runner.load_state_dict(state["runner"])
    assert runner.graphed is None
    t.train(2)
    assert runner.graphed is not None and t.iteration == 5
    assert all(torch.isfinite(p).all() for p in runner.model.parameters())


def test_graphed_step_of_a_recurrent_policy_trains_the_eager_weights(no_tf32):
    """A GRU policy's minibatch step over env x agent sequences (training/carried_state.py), its start states and
    episode starts views of the batch, captured once and replayed: the eager update's weights, also after the
    buffers (advantages, start states) changed in place."""
    from warp_drive.training.algorithms.actor_critic.graphed_update import GraphedUpdate, match_device_form
    from warp_drive.training.algorithms.actor_critic.ppo import PPO
    from warp_drive.training.algorithms.actor_critic.update import update_policy
    from warp_drive.training.buffers import RolloutBatch
    from warp_drive.training.models.gru import GRUActorCritic

    steps, envs, agents, obs = 8, 16, 5, 23
    g = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).cuda()

    model = GRUActorCritic(obs, [4, 3], (32,), hidden_size=16, critic_dims=(3 * obs,), activation="tanh").cuda()
    batch = RolloutBatch(
        obs={"actor": rand(steps, envs, agents, obs), "critic": rand(steps, envs, agents, 3 * obs)},
        actions=torch.cat([torch.randint(0, n, (steps, envs, agents, 1), generator=g) for n in (4, 3)], -1).int().cuda(),
        advantages=rand(steps, envs, agents), returns=rand(steps, envs, agents),
        old_log_probs=(-torch.rand(steps, envs, agents, generator=g) * 2).cuda(), old_values=rand(steps, envs, agents),
        start_state=rand(envs, agents, model.state_size),
        episode_starts=(torch.rand(steps, envs, agents, generator=g) < 0.2).cuda())
    algorithm = PPO(clip_param=0.2, vf_loss_coeff=0.5, entropy_coeff=0.01, normalize_advantage=True).to("cuda")
    twin, twin_algorithm = copy.deepcopy(model), copy.deepcopy(algorithm)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    twin_opt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    match_device_form(opt)
    gen_a = torch.Generator("cuda").manual_seed(3)
    gen_b = torch.Generator("cuda").manual_seed(3)
    graphed = None
    for timestep in (0, 500):
        update_policy(model, opt, algorithm, batch, timestep=timestep, num_epochs=2, num_minibatches=4, max_grad_norm=0.5,
                      generator=gen_a)
        if graphed is None:
            graphed = GraphedUpdate(twin, twin_opt, twin_algorithm, batch, num_minibatches=4, max_grad_norm=0.5,
                                    autocast_dtype=None)
        graphed.run(timestep=timestep, num_epochs=2, generator=gen_b)
        batch.advantages.mul_(1.1)
        batch.start_state.mul_(0.9)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
