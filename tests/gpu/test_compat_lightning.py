"""WarpDrive 2.7.1's tutorial 7 (training with PyTorch Lightning) on the GPU, its cells as written.

Differences from the notebook: ``num_episodes`` is 150 (3 epochs instead of 10), results go to
pytest's tmp dir instead of /tmp, Lightning's logs to the tmp dir (cwd), and the animation cells
render the video only when ffmpeg is installed (the animation itself is always built).
"""

from __future__ import annotations

import logging
import re
import shutil

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning", reason="pytorch_lightning is not installed (wheel: shared/device/wheels)")


def _run_config(basedir: str) -> dict:
    return dict(
        name="tag_continuous",
        env=dict(
            num_taggers=5,
            num_runners=100,
            grid_length=20.0,
            episode_length=200,
            max_acceleration=0.1,
            min_acceleration=-0.1,
            max_turn=2.35,
            min_turn=-2.35,
            num_acceleration_levels=10,
            num_turn_levels=10,
            skill_level_tagger=1.0,
            skill_level_runner=1.0,
            use_full_observation=False,
            runner_exits_game_after_tagged=True,
            num_other_agents_observed=10,
            tag_reward_for_tagger=10.0,
            tag_penalty_for_runner=-10.0,
            end_of_game_reward_for_runner=1.0,
            tagging_distance=0.02,
        ),
        trainer=dict(num_envs=50, train_batch_size=10000, num_episodes=150),
        policy=dict(
            runner=dict(to_train=True, algorithm="A2C", gamma=0.98, lr=0.005,
                        model=dict(type="fully_connected", fc_dims=[256, 256], model_ckpt_filepath="")),
            tagger=dict(to_train=True, algorithm="A2C", gamma=0.98, lr=0.002,
                        model=dict(type="fully_connected", fc_dims=[256, 256], model_ckpt_filepath="")),
        ),
        saving=dict(metrics_log_freq=10, model_params_save_freq=5000, basedir=basedir, name="continuous_tag",
                    tag="example"),
    )


def _show(anim) -> None:
    """The notebook's ``HTML(anim.to_html5_video())``, where ffmpeg is present."""
    assert anim is not None
    if shutil.which("ffmpeg") is None:
        return  # rendering the video needs ffmpeg; the animation object was built
    html = anim.to_html5_video()
    assert "<video" in html


@pytest.fixture
def _restore_root_log_level():
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)


def test_tutorial_7_cells(tmp_path, monkeypatch, capsys, _restore_root_log_level):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    # --- imports cell
    from pytorch_lightning import Trainer

    from example_envs.tag_continuous.generate_rollout_animation import (
        generate_tag_env_rollout_animation,
    )
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.training.pytorch_lightning import (
        CUDACallback,
        PerfStatsCallback,
        WarpDriveModule,
    )

    import pytorch_lightning

    assert pytorch_lightning.__version__ >= "1.8.0"
    logging.getLogger().setLevel(logging.ERROR)
    # --- run config cell
    run_config = _run_config(str(tmp_path / "runs"))
    # --- module cell
    env_wrapper = EnvWrapper(
        TagContinuous(**run_config["env"]),
        num_envs=run_config["trainer"]["num_envs"],
        env_backend="pycuda",
    )
    policy_tag_to_agent_id_map = {
        "tagger": list(env_wrapper.env.taggers),
        "runner": list(env_wrapper.env.runners),
    }
    wd_module = WarpDriveModule(
        env_wrapper=env_wrapper,
        config=run_config,
        policy_tag_to_agent_id_map=policy_tag_to_agent_id_map,
        verbose=True,
    )
    # --- animation before training
    anim = generate_tag_env_rollout_animation(wd_module, fps=25)
    _show(anim)
    before = {k: v.detach().clone() for k, v in wd_module.state_dict().items()}
    # --- trainer cell
    log_freq = run_config["saving"]["metrics_log_freq"]
    cuda_callback = CUDACallback(module=wd_module)
    perf_stats_callback = PerfStatsCallback(
        batch_size=wd_module.training_batch_size,
        num_iters=wd_module.num_iters,
        log_freq=log_freq,
    )
    num_gpus = 1
    num_episodes = run_config["trainer"]["num_episodes"]
    episode_length = run_config["env"]["episode_length"]
    training_batch_size = run_config["trainer"]["train_batch_size"]
    num_epochs = int(num_episodes * episode_length / training_batch_size)
    trainer = Trainer(
        accelerator="gpu",
        devices=num_gpus,
        callbacks=[cuda_callback, perf_stats_callback],
        max_epochs=num_epochs,
        reload_dataloaders_every_n_epochs=1,
    )
    # --- fit cell
    capsys.readouterr()
    trainer.fit(wd_module)
    printed = capsys.readouterr().out
    # --- animation after training, then close
    anim = generate_tag_env_rollout_animation(wd_module, fps=25)
    _show(anim)
    wd_module.graceful_close()

    engine = wd_module.engine
    assert num_epochs == 3 == wd_module.num_iters and engine.iteration == 3 and trainer.current_epoch == 3
    assert trainer.strategy.root_device.type == "cuda"
    assert all(q.is_cuda for q in wd_module.parameters())
    after = wd_module.state_dict()
    for tag in ("tagger", "runner"):
        assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith(f"policy_models.{tag}.")), tag
    assert [int(m) for m in re.findall(r"iteration (\d+) / 3", printed)] == [3], printed
    stats = perf_stats_callback.printed[-1]
    assert stats["total_env_steps_per_s"] > 0 and stats["training_env_steps_per_s"] > stats["total_env_steps_per_s"]
    metrics = trainer.callback_metrics
    for key in ("tagger/loss", "runner/loss", "tagger/episode_return_mean", "runner/episode_return_mean"):
        assert torch.isfinite(metrics[key]).all(), key
    assert float(metrics["runner/episodes"]) >= 50  # every env ended its 200-step episode in each epoch
    assert {p.name.split("_")[0] for p in (tmp_path / "runs").rglob("*.state_dict")} == {"tagger", "runner"}
    assert (tmp_path / "lightning_logs").is_dir()


def test_lightning_distribution_runs_the_same_module_form(tmp_path, monkeypatch):
    """The 2.7.1 constructor with ``lightning.Trainer`` (warp_drive.training.lightning's classes)."""
    pytest.importorskip("lightning", reason="lightning is not installed")
    monkeypatch.chdir(tmp_path)
    import lightning

    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.training.lightning import CUDACallback, PerfStatsCallback, WarpDriveModule

    cfg = _run_config(str(tmp_path / "runs"))
    cfg["trainer"].update(num_envs=20, train_batch_size=2000, num_episodes=20)  # 100 steps per rollout: 2 per episode
    wrapper = EnvWrapper(TagContinuous(**cfg["env"]), num_envs=20, env_backend="pycuda")
    pmap = {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)}
    module = WarpDriveModule(env_wrapper=wrapper, config=cfg, policy_tag_to_agent_id_map=pmap, verbose=False)
    perf = PerfStatsCallback(batch_size=module.training_batch_size, num_iters=module.num_iters, log_freq=1)
    trainer = lightning.Trainer(accelerator="gpu", devices=1, max_epochs=module.num_iters, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False,
                                callbacks=[CUDACallback(module=module), perf], reload_dataloaders_every_n_epochs=1)
    trainer.fit(module)
    assert module.engine.iteration == module.num_iters == 2
    assert [int(r["iteration"]) for r in perf.printed] == [1, 2]
    assert float(module.episode_metrics["runner/episodes"]) >= 20  # reported after the 2-rollout episode window
    module.graceful_close()
