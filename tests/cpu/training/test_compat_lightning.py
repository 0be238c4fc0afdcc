"""WarpDrive 2.7.1's Lightning API (tutorial 7) on the cpu backend.

The tutorial's code path -- ``WarpDriveModule(env_wrapper=, config=, policy_tag_to_agent_id_map=)``,
``CUDACallback``, ``PerfStatsCallback(batch_size, num_iters, log_freq)``, a Trainer with
``max_epochs = num_episodes * episode_length / train_batch_size`` and
``reload_dataloaders_every_n_epochs=1`` -- with ``pytorch_lightning.Trainer`` (2.7.1's import
path :mod:`warp_drive.training.pytorch_lightning`) and with ``lightning.Trainer``
(:mod:`warp_drive.training.lightning`), on a small Tag config.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pl = pytest.importorskip("pytorch_lightning", reason="not installed: pip install -e '.[lightning]'")
lightning = pytest.importorskip("lightning", reason="not installed: pip install -e '.[lightning]'")

from example_envs.tag_continuous.tag_continuous import TagContinuous  # noqa: E402
from tests.helpers.threads import torch_threads  # noqa: E402
from tests.helpers.toy_env import ToyLine  # noqa: E402
from warp_drive.env_wrapper import EnvWrapper  # noqa: E402
from warp_drive.errors import ConfigError  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

#: Tutorial 7's run config, shrunk: 2 taggers, 5 runners, episodes of 20 steps, 4 envs, fc [16, 16].
RUN_CONFIG = dict(
    name="tag_continuous",
    env=dict(
        num_taggers=2,
        num_runners=5,
        grid_length=20.0,
        episode_length=20,
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
        num_other_agents_observed=3,
        tag_reward_for_tagger=10.0,
        tag_penalty_for_runner=-10.0,
        end_of_game_reward_for_runner=1.0,
        tagging_distance=0.02,
    ),
    trainer=dict(num_envs=4, train_batch_size=80, num_episodes=20),
    policy=dict(
        runner=dict(to_train=True, algorithm="A2C", gamma=0.98, lr=0.005,
                    model=dict(type="fully_connected", fc_dims=[16, 16], model_ckpt_filepath="")),
        tagger=dict(to_train=True, algorithm="A2C", gamma=0.98, lr=0.002,
                    model=dict(type="fully_connected", fc_dims=[16, 16], model_ckpt_filepath="")),
    ),
    saving=dict(metrics_log_freq=2, model_params_save_freq=5000, basedir="/tmp", name="continuous_tag", tag="example"),
)


@pytest.fixture(autouse=True)
def _one_thread():
    with torch_threads(1):
        yield


def _run_config(tmp_path: Path, **trainer) -> dict:
    cfg = copy.deepcopy(RUN_CONFIG)
    cfg["saving"]["basedir"] = str(tmp_path / "runs")
    cfg["trainer"].update(trainer)
    return cfg


def _weights(module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _tutorial_7(ns, trainer_cls, tmp_path: Path, run_config: dict, capsys, animate: bool = False) -> tuple:
    """Tutorial 7's cells with ``accelerator="cpu"`` and the cpu backend; the animation cells
    (written to a GIF instead of an HTML video, which needs ffmpeg) when ``animate``."""
    env_wrapper = EnvWrapper(TagContinuous(**run_config["env"]), num_envs=run_config["trainer"]["num_envs"],
                             env_backend="cpu")
    policy_tag_to_agent_id_map = {
        "tagger": list(env_wrapper.env.taggers),
        "runner": list(env_wrapper.env.runners),
    }
    wd_module = ns.WarpDriveModule(
        env_wrapper=env_wrapper,
        config=run_config,
        policy_tag_to_agent_id_map=policy_tag_to_agent_id_map,
        verbose=True,
    )
    if animate:
        from example_envs.tag_continuous.generate_rollout_animation import generate_tag_env_rollout_animation

        anim = generate_tag_env_rollout_animation(wd_module, fps=25)  # rendered once, after training
        assert anim is not None
    before = _weights(wd_module)
    log_freq = run_config["saving"]["metrics_log_freq"]
    cuda_callback = ns.CUDACallback(module=wd_module)
    perf_stats_callback = ns.PerfStatsCallback(
        batch_size=wd_module.training_batch_size,
        num_iters=wd_module.num_iters,
        log_freq=log_freq,
    )
    num_episodes = run_config["trainer"]["num_episodes"]
    episode_length = run_config["env"]["episode_length"]
    training_batch_size = run_config["trainer"]["train_batch_size"]
    num_epochs = int(num_episodes * episode_length / training_batch_size)
    trainer = trainer_cls(
        accelerator="cpu",
        devices=1,
        callbacks=[cuda_callback, perf_stats_callback],
        max_epochs=num_epochs,
        reload_dataloaders_every_n_epochs=1,
        enable_progress_bar=False,
    )
    capsys.readouterr()
    trainer.fit(wd_module)
    printed = capsys.readouterr().out
    if animate:
        anim = generate_tag_env_rollout_animation(wd_module, fps=25)
        anim.save(str(tmp_path / "after.gif"), writer="pillow")
        assert (tmp_path / "after.gif").stat().st_size > 0
        import matplotlib.pyplot as plt

        plt.close("all")
    wd_module.graceful_close()
    return wd_module, trainer, perf_stats_callback, before, printed, num_epochs


def _check_tutorial_run(wd_module, trainer, perf, before, printed, num_epochs, tmp_path) -> None:
    engine = wd_module.engine
    assert num_epochs == wd_module.num_iters
    assert engine.iteration == num_epochs and trainer.current_epoch == num_epochs  # one epoch = one iteration
    assert {t: p.timestep for t, p in engine.policies.items()} == {
        "tagger": num_epochs * wd_module.training_batch_size, "runner": num_epochs * wd_module.training_batch_size}
    after = _weights(wd_module)
    for tag in ("tagger", "runner"):
        changed = [k for k in before if k.startswith(f"policy_models.{tag}.") and not torch.equal(before[k], after[k])]
        assert changed, f"the {tag} policy was not trained"
    # printed throughput every log_freq iterations and after the last one
    shown = [int(m) for m in re.findall(r"iteration (\d+) / %d" % num_epochs, printed)]
    log_freq = perf.log_freq
    assert shown == sorted({*range(log_freq, num_epochs + 1, log_freq), num_epochs}), printed
    assert "env steps per second (total)" in printed and "Training finished after" in printed
    assert [int(r["iteration"]) for r in perf.printed] == shown
    assert all(r["total_env_steps_per_s"] > 0 and r["training_env_steps_per_s"] > 0 for r in perf.printed)
    # epoch metrics through Lightning's default logger
    metrics = trainer.callback_metrics
    for key in ("tagger/loss", "runner/loss", "runner/episode_return_mean", "perf/epoch_env_steps_per_s"):
        assert key in metrics and torch.isfinite(metrics[key]).all(), key
    # 2.7.1 form: the policy weights are written to the run folder after the last iteration
    saved = {p.name.split("_")[0] for p in (tmp_path / "runs").rglob("*.state_dict")}
    assert saved == {"tagger", "runner"}, sorted((tmp_path / "runs").rglob("*"))


def test_tutorial_7_with_pytorch_lightning_trainer(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("PIL")
    monkeypatch.chdir(tmp_path)  # Lightning's default logger writes lightning_logs/ here
    import warp_drive.training.pytorch_lightning as ns

    run_config = _run_config(tmp_path)
    run_config["env"]["seed"] = 7  # the same taggers in the env rebuilt below
    run = _tutorial_7(ns, pl.Trainer, tmp_path, copy.deepcopy(run_config), capsys, animate=True)
    _check_tutorial_run(*run, tmp_path)
    module = run[0]
    assert isinstance(module, pl.LightningModule) and not isinstance(module, lightning.LightningModule)
    # Lightning's default checkpoint (every epoch) reloads into a module built from 2.7.1's arguments
    (ckpt,) = (tmp_path / "lightning_logs").rglob("*.ckpt")
    wrapper = EnvWrapper(TagContinuous(**run_config["env"]), num_envs=4, env_backend="cpu")
    pmap = {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)}
    reloaded = ns.WarpDriveModule.load_from_checkpoint(ckpt, env_wrapper=wrapper, config=run_config,
                                                       policy_tag_to_agent_id_map=pmap, verbose=False)
    assert reloaded.engine.iteration == module.engine.iteration and reloaded.iterations_per_epoch == 1
    for key, value in module.state_dict().items():
        torch.testing.assert_close(reloaded.state_dict()[key], value, rtol=0, atol=0)


def test_tutorial_7_code_path_with_lightning_trainer(tmp_path, monkeypatch, capsys):
    """Same cells against warp_drive.training.lightning; 10 steps per rollout, episodes of 20:
    episode statistics come every second epoch, always over whole episodes."""
    monkeypatch.chdir(tmp_path)
    import warp_drive.training.lightning as ns

    run = _tutorial_7(ns, lightning.Trainer, tmp_path, _run_config(tmp_path, train_batch_size=40), capsys)
    _check_tutorial_run(*run, tmp_path)
    module = run[0]
    assert run[-1] == 10 and isinstance(module, lightning.LightningModule)
    assert float(module.episode_metrics["runner/episodes"]) >= 4  # every env ended its episode


def test_training_batch_size_num_iters_and_env_aliases(tmp_path):
    from warp_drive.training.pytorch_lightning import WarpDriveModule

    cfg = _run_config(tmp_path, train_batch_size=40)
    wrapper = EnvWrapper(TagContinuous(**cfg["env"]), num_envs=4, env_backend="cpu")
    module = WarpDriveModule(wrapper, cfg, {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)},
                             verbose=False)  # 2.7.1's positional order
    assert module.training_batch_size == 40 and module.num_iters == 20 * 20 // 40
    assert module.iterations_per_epoch == 1 and module.saves_policy_weights
    assert module.env_wrapper is wrapper and module.cuda_envs is wrapper
    assert set(module.policy_models) == {"tagger", "runner"}


def test_fetch_episode_states_and_policy_files_delegate_to_the_engine(tmp_path):
    from warp_drive.training.pytorch_lightning import WarpDriveModule

    cfg = _run_config(tmp_path)
    wrapper = EnvWrapper(TagContinuous(**cfg["env"]), num_envs=4, env_backend="cpu")
    pmap = {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)}
    module = WarpDriveModule(env_wrapper=wrapper, config=cfg, policy_tag_to_agent_id_map=pmap, verbose=False)
    states = module.fetch_episode_states(["loc_x", "loc_y"])
    assert set(states) >= {"loc_x", "loc_y"}
    assert states["loc_x"].shape == (cfg["env"]["episode_length"] + 1, 7)
    module.save_model_checkpoint(0)
    files = {p.name.split("_")[0]: p for p in (tmp_path / "runs").rglob("*.state_dict")}
    assert set(files) == {"tagger", "runner"}
    tagger = module.engine.policies["tagger"].model
    saved = [q.detach().clone() for q in tagger.parameters()]
    with torch.no_grad():
        for q in tagger.parameters():
            q.add_(1.0)
    module.load_model_checkpoint({"tagger": str(files["tagger"])})
    for a, b in zip(saved, tagger.parameters()):
        torch.testing.assert_close(a, b)


def test_constructor_errors(tmp_path):
    from warp_drive.training.lightning import WarpDriveModule
    from warp_drive.training.trainer import Trainer

    cfg = _run_config(tmp_path)
    wrapper = EnvWrapper(TagContinuous(**cfg["env"]), num_envs=4, env_backend="cpu")
    with pytest.raises(ConfigError, match="exactly one"):
        WarpDriveModule()
    with pytest.raises(ConfigError, match="needs both env_wrapper"):
        WarpDriveModule(env_wrapper=wrapper)
    with pytest.raises(ConfigError, match="needs both env_wrapper"):
        WarpDriveModule(config=cfg)
    with pytest.raises(ConfigError, match="iterations_per_epoch"):
        WarpDriveModule(env_wrapper=wrapper, config=cfg, iterations_per_epoch=0)
    toy = EnvWrapper(ToyLine(num_agents=2, episode_length=10, goal=3.0), num_envs=2, env_backend="cpu")
    engine = Trainer(toy, {"name": "toy", "trainer": {"num_envs": 2, "train_batch_size": 20, "num_episodes": 4,
                                                      "env_backend": "cpu"},
                           "policy": {"shared": {"to_train": True, "model": {"fc_dims": [8]}}},
                           "saving": {"basedir": str(tmp_path)}}, None, verbose=False)
    with pytest.raises(ConfigError, match="exactly one"):
        WarpDriveModule(env_wrapper=wrapper, config=cfg, engine=engine)
    with pytest.raises(ConfigError, match="both positionally and as engine="):
        WarpDriveModule(engine, engine=engine)
    module = WarpDriveModule(engine)  # our positional form still works
    assert module.engine is engine.engine and module.run_trainer is engine and not module.saves_policy_weights and module.iterations_per_epoch == 10


def test_perf_stats_callback_arguments_and_our_trainer_builder(tmp_path, capsys):
    """2.7.1's PerfStatsCallback next to our own callbacks, through build_lightning_trainer for
    both distributions (the builder picks the module's distribution)."""
    import warp_drive.training.lightning as wl
    import warp_drive.training.pytorch_lightning as wpl

    for name, value in (("batch_size", 0), ("num_iters", -1), ("log_freq", 0)):
        with pytest.raises(ConfigError, match=name):
            wpl.PerfStatsCallback(**{"batch_size": 10, "num_iters": 10, name: value})
    assert not wl.PerfStatsCallback().print_stats and wl.PerfStatsCallback(batch_size=5).print_stats
    for ns, trainer_cls in ((wpl, pl.Trainer), (wl, lightning.Trainer)):
        cfg = _run_config(tmp_path / ns.__name__)
        wrapper = EnvWrapper(TagContinuous(**cfg["env"]), num_envs=4, env_backend="cpu")
        pmap = {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)}
        module = ns.WarpDriveModule(env_wrapper=wrapper, config=cfg, policy_tag_to_agent_id_map=pmap, verbose=False,
                                    iterations_per_epoch=2)
        perf = ns.PerfStatsCallback(log_freq=3, print_stats=True)
        returns = ns.EpisodeReturnLogger()
        trainer = wl.build_lightning_trainer(module, max_epochs=2, loggers=False, checkpoint=False,
                                             enable_progress_bar=False, enable_model_summary=False,
                                             default_root_dir=str(tmp_path), callbacks=[perf, returns])
        assert isinstance(trainer, trainer_cls)
        assert [type(c).__name__ for c in trainer.callbacks].count("PerfStatsCallback") == 1  # no default one added
        trainer.fit(module, datamodule=ns.WarpDriveDataModule(module))
        out = capsys.readouterr().out
        assert module.engine.iteration == 4
        assert [int(r["iteration"]) for r in perf.printed] == [3, 4], out  # every 3 and at the end
        assert "iteration 3 / 5" in out and len(perf.history) == 2 and len(returns.history) == 2


def test_warp_drive_dataset():
    from warp_drive.training.pytorch_lightning import WarpDriveDataset

    ds = WarpDriveDataset(lambda batch_index=0: {"step": batch_index}, batch_size=3)
    assert len(ds) == 3 and [ds[i]["step"] for i in range(3)] == [0, 1, 2] and ds.data_dict == {"step": 2}
    with pytest.raises(ConfigError, match="batch_size"):
        WarpDriveDataset(lambda batch_index=0: None, batch_size=0)
    with pytest.raises(ConfigError, match="callable"):
        WarpDriveDataset(None, batch_size=2)


def test_imports_load_only_the_distribution_used():
    """2.7.1's path needs pytorch_lightning only; importing our package loads no Lightning at all."""
    code = ("import sys; import warp_drive.training.lightning; assert 'lightning' not in sys.modules; "
            "assert 'pytorch_lightning' not in sys.modules; "
            "import warp_drive.training.pytorch_lightning as m; assert 'lightning' not in sys.modules; "
            "assert issubclass(m.WarpDriveModule, sys.modules['pytorch_lightning'].LightningModule)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
