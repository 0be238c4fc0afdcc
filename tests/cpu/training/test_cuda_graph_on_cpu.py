"""``trainer.use_cuda_graph`` on the cpu backend (issue 26, item 6c): no effect and no warning.

The key is ``true`` by default, so a warning on the cpu backend would greet every CPU run of every
config; docs/config_reference.md says the rollout runs eagerly without one, and this pins both."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.training.trainer import Trainer

ROOT = Path(__file__).resolve().parents[3]


def _trainer(tmp_path: Path, **trainer) -> Trainer:
    pol = {"to_train": True, "algorithm": "A2C", "lr": 0.01, "model": {"fc_dims": [8]}}
    cfg = {"name": "toy", "trainer": {"num_envs": 2, "train_batch_size": 2 * 5, "num_episodes": 4, "env_backend": "cpu",
                                      "seed": 1, **trainer},
           "policy": {"a": pol}, "saving": {"basedir": str(tmp_path)}}
    wrapper = EnvWrapper(ToyLine(num_agents=2, episode_length=5, goal=3.0), num_envs=2, env_backend="cpu")
    return Trainer(wrapper, cfg, {"a": [0, 1]}, verbose=False, results_dir=str(tmp_path / "run"))


@pytest.mark.parametrize("trainer", [{}, {"use_cuda_graph": True}], ids=["default", "explicit"])
def test_cuda_graph_is_ignored_on_cpu_without_a_warning(trainer, tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="warp_drive")
    t = _trainer(tmp_path, **trainer)
    assert t.config.trainer.use_cuda_graph is True
    t.train(1)
    assert t.graphed_rollout is None and t.iteration == 1  # ran eagerly
    assert all(p.graphed is None for p in t.policies.values())  # and so did the update
    mentions = [r for r in caplog.records if "use_cuda_graph" in r.getMessage()]
    assert mentions and all(r.levelno == logging.DEBUG for r in mentions)
    assert "running eagerly" in mentions[0].getMessage()


def test_the_config_reference_says_so():
    row = next(line for line in (ROOT / "docs" / "config_reference.md").read_text().splitlines()
               if line.startswith("| `use_cuda_graph` |"))
    assert "runs eagerly, with no warning" in row and "logs a warning" not in row
