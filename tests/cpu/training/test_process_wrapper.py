"""2.7.1's ``ProcessWrapper`` (``warp_drive.training.utils.device_child_process.child_process_base``):
a spawned process whose target's exception comes back to the parent as ``.exception``; 2.7.1's
training test runs ``setup_trainer_and_train`` through it. CPU only (spawned children, gloo-free)."""

from __future__ import annotations

import pickle

import yaml

from warp_drive.errors import ConfigError
from warp_drive.training import distributed
from warp_drive.training.distributed import ProcessWrapper, _transportable


def _raise_config_error(value):
    raise ConfigError(f"lr={value} is not a number")


class _Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("cannot pickle this one")


def test_the_2_7_1_import_paths_lead_to_this_implementation():
    from warp_drive.training.scripts.example_training_script_pycuda import setup_trainer_and_train
    from warp_drive.training.setup_and_train import setup_trainer_and_train as ours
    from warp_drive.training.utils.device_child_process import child_process_base
    from warp_drive.training.utils.distributed_train import distributed_trainer_pycuda

    assert child_process_base.ProcessWrapper is ProcessWrapper
    assert distributed_trainer_pycuda.perform_distributed_training is distributed.perform_distributed_training
    assert setup_trainer_and_train is ours


def test_the_target_s_exception_comes_back_typed():
    p = ProcessWrapper(target=_raise_config_error, args=("abc",))
    assert p.exception is None  # not started: nothing to report
    p.start()
    p.join(timeout=120)
    assert p.exitcode == 1
    err = p.exception
    assert isinstance(err, ConfigError) and str(err) == "lr=abc is not a number"
    assert p.exception is err  # read once, kept


def test_exceptions_that_cannot_travel_become_a_bounded_child_process_error():
    try:
        raise _Unpicklable("boom")
    except _Unpicklable as err:
        sent = _transportable(err)
    assert isinstance(sent, ChildProcessError) and "_Unpicklable in the child process" in str(sent)
    assert "boom" in str(sent) and "test_process_wrapper.py" in str(sent)  # the traceback's head
    huge = ConfigError("x" * 200_000)
    sent = _transportable(huge)
    assert isinstance(sent, ChildProcessError) and len(pickle.dumps(sent)) < 8_000
    small = ConfigError("fine")
    assert _transportable(small) is small


def test_2_7_1_style_training_in_a_wrapped_process(tmp_path):
    """As 2.7.1's training test: a run config dict, ``setup_trainer_and_train`` in a ProcessWrapper."""
    from warp_drive.training.setup_and_train import run_config_path, setup_trainer_and_train

    config = yaml.safe_load(run_config_path("tag_gridworld").read_text())
    config["env"].update(num_taggers=2, grid_length=5, episode_length=5)
    config["trainer"].update(num_envs=2, num_episodes=4, train_batch_size=10, env_backend="cpu")
    config["policy"]["shared"]["model"]["fc_dims"] = [8, 8]
    config["saving"].update(basedir=str(tmp_path), metrics_log_freq=1)
    p = ProcessWrapper(target=setup_trainer_and_train,
                       kwargs={"run_configuration": config, "verbose": False,
                               "results_directory": str(tmp_path / "run")})
    p.start()
    p.join(timeout=300)
    assert p.exception is None and p.exitcode == 0
    run = tmp_path / "run"
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 2  # 4 episodes x 5 steps / batch 10 = 2 iterations, each logged
    assert list(run.glob("shared_*.state_dict")), "no policy saved"
