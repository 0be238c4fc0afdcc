"""Config fuzz: a few hundred seeded malformed configs, overrides and command lines through the config
loader and the training CLI's validation (``plan_run``, nothing is built or trained). Each case must
end in a value or a typed warp_drive error (argparse: exit 2), within seconds, with a one-line message;
the bad values of issue 26 item 8 must all be refused."""

from __future__ import annotations

import json
import random
import signal
from contextlib import contextmanager

import pytest
import yaml

from warp_drive.config import load_run_config
from warp_drive.errors import WarpDriveError
from warp_drive.training import example_training_script as script

GOOD = {"name": "dummy_env", "env": {"episode_length": 10},
        "trainer": {"num_envs": 2, "train_batch_size": 20, "num_episodes": 4},
        "policy": {"shared": {"to_train": True}}}
#: Bad values that must each be refused (issue 26 item 8).
MUST_FAIL = ["policy.shared.lr=1e308", "policy.shared.model.fc_dims=[1000000000]", "env.seed=-5",
             "trainer.num_episodes=1e18", "trainer.env_backend=numpy", "policy.shared.model.kwargs=[1]",
             "trainer.num_envs=-1", "trainer.seed=1e40", "policy.shared.gamma=nan", "trainer=[1, 2]",
             "trainer=null", "env=~", "saving=null", "sampler.params=null", "policy.shared=null",
             "policy.shared.model=null", "policy.shared.model.kwargs=null"]
#: Internal errors and silent accepts of issue 39's adversarial re-run: each now a typed one-line error naming the key.
MUST_FAIL_39 = {"policy.shared.num_epochs=1e6": "num_epochs`=1000000 is too large",
                "policy.shared.num_epochs=1e9": "num_epochs`=1000000000 is too large",
                "policy.shared.num_minibatches=2000": "num_minibatches`=2000 is too large",
                "policy.shared.num_epochs=100": "gradient steps per iteration",  # with num_minibatches=200 below
                "policy.shared.model.fc_dims=[65536, 65536]": "4,294,967,296 weights between its hidden layers",
                "env.num_runners=" + "9" * 4000: "`env.num_runners`=<int of",
                "env.a={b: [1, 99999999999999999999999]}": "`env.a.b[1]`=99999999999999999999999 is too large",
                "policy.shared.model.kwargs={1: 2}": "key 1 is not a string (int)",
                "env={7: 1}": "`env` key 7 is not a string",
                'saving.basedir="/tmp/a\\0b"': "holds a NUL byte",
                "saving.basedir=/" + "x" * 5000: "a path may be at most 4096 bytes",
                "saving.basedir=/tmp/" + "x" * 300: "a file or folder name may be at most 255 bytes",
                "saving.name=../../..": "would put the run outside `saving.basedir`",
                "saving.name=/etc": "would put the run outside `saving.basedir`",
                "saving.tag=a/../../b": "would put the run outside `saving.basedir`",
                "saving.tag=" + "t" * 300: "may be at most 255 bytes",
                'saving.tag="\\ud800"': "lone surrogate"}
#: Null sections in a file: each an error naming the section and the fix (no 2.7.1 config writes one).
NULL_SECTIONS = {"trainer:\n": "`trainer` is null", "trainer: null\n": "write `trainer: {}` or remove the line",
                 "env:\n": "`env` is null", "saving: ~\n": "`saving` is null", "policy:\n": "`policy` is null",
                 "policy:\n  shared:\n": "`policy.shared` is null",
                 "policy:\n  shared:\n    model:\n": "`policy.shared.model` is null"}
VALUES = ["", "null", "-3", "0", "1e308", "-1e308", "1e18", "10**9", "[1000000000]", "[]", "{}", "nan", ".inf",
          "'x'", "[[1, 2], [3]]", "true", "{a: 1}", "~", "&a [1, *a]", "'" + "é" * 300 + "'", "1" * 5000,
          "1e3", "2.0", "2.5e0", "1e-3", "-1e3", "1e400"]
#: Integer keys written in scientific or float notation (issue 39's appendix: `trainer.num_envs=1e3` ended in an
#: IndexError): an integral value is that integer, any other a typed error naming the key, the value and the fix.
INT_KEYS = ["trainer.num_envs", "trainer.train_batch_size", "trainer.num_episodes", "trainer.seed", "env.seed",
            "trainer.eval_episodes", "policy.shared.num_epochs", "policy.shared.num_minibatches",
            "saving.metrics_log_freq", "saving.model_params_save_freq"]
WHOLE = {"1e1": 10, "1.0e1": 10, "10.0": 10, "1E1": 10, "+1e1": 10}
NOT_WHOLE = {"1.55e1": "15.5", "2.5": "2.5", "1e-3": "0.001", "1e400": "inf", ".nan": "nan", "'1e1'": "'1e1'"}
KEYS = ["trainer.num_envs", "trainer.train_batch_size", "trainer.num_episodes", "trainer.seed", "trainer.num_gpus",
        "trainer.env_backend", "env.seed", "env.episode_length", "policy.shared.lr", "policy.shared.gamma",
        "policy.shared.model.fc_dims", "policy.shared.model.kwargs", "policy.shared.model.kwargs.x",
        "policy.shared.entropy_coeff", "saving.basedir", "saving.metrics_log_freq", "sampler", "trainer", "policy",
        "nosuch.key", "trainer.nosuch", "policy.other.lr", "name"]


@contextmanager
def deadline(seconds: int):
    def fail(*_):
        raise TimeoutError(f"no answer within {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def outcome(call) -> str:
    """'ok', 'error' (typed, one short line) or 'exit2'; anything else fails the test."""
    with deadline(10):
        try:
            call()
        except WarpDriveError as err:
            assert "\n" not in str(err).strip() and len(str(err)) < 1500, str(err)[:3000]
            return "error"
        except SystemExit as exit_:
            assert exit_.code == 2
            return "exit2"
    return "ok"


def cases(rng: random.Random, n: int) -> list[list[str]]:
    return [[f"{rng.choice(KEYS)}={rng.choice(VALUES)}" for _ in range(rng.randint(1, 3))] for _ in range(n)]


@pytest.mark.parametrize("override", MUST_FAIL)
def test_each_bad_value_of_the_issue_is_refused(override):
    assert outcome(lambda: load_run_config(GOOD, [override])) == "error"


@pytest.mark.parametrize("override,message", list(MUST_FAIL_39.items()))
def test_each_failure_of_issue_39_is_a_typed_error_naming_the_key(override, message):
    extra = ["policy.shared.num_minibatches=200", "trainer.train_batch_size=200"] if "num_epochs=100" in override else []
    with pytest.raises(WarpDriveError, match=None) as info:
        load_run_config(GOOD, [*extra, override])
    assert message in str(info.value) and outcome(lambda: load_run_config(GOOD, [*extra, override])) == "error", str(info.value)


def _value(config, key):
    node = config.to_dict()
    for part in key.split("."):
        node = node[part]
    return node


@pytest.mark.parametrize("key", INT_KEYS)
def test_an_integer_key_takes_an_integral_float_as_that_integer_and_refuses_others(key, tmp_path):
    extra = ["trainer.num_episodes=100"] if key == "trainer.train_batch_size" else []  # 10 steps, 10 episodes of 10
    for text, whole in WHOLE.items():
        overrides = [*extra, f"{key}={text}"] + (["trainer.train_batch_size=20"] if key == "trainer.num_envs" else [])
        value = _value(load_run_config(GOOD, overrides), key)
        assert value == whole and type(value) is int, (text, value)
    for text, shown in NOT_WHOLE.items():
        with pytest.raises(WarpDriveError) as info:
            load_run_config(GOOD, [f"{key}={text}"])
        message = str(info.value)
        assert f"`{key}`={shown}" in message and "whole number" in message, message
        assert outcome(lambda t=text: load_run_config(GOOD, [f"{key}={t}"])) == "error"
    # the same in a YAML file: `key: 1e1` (PyYAML alone reads 1e1 as a string; warp_drive's loader as a number)
    raw = json.loads(json.dumps(GOOD))
    node = raw
    *parents, last = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = "@@"
    if key == "trainer.num_envs":
        raw["trainer"]["train_batch_size"] = 20
    if key == "trainer.train_batch_size":
        raw["trainer"]["num_episodes"] = 100
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(raw).replace("'@@'", "1e1"))
    value = _value(load_run_config(path), key)
    assert value == 10 and type(value) is int, value


def test_num_envs_1e3_through_the_command_line_builds_and_trains(tmp_path):
    """The appendix's `trainer.num_envs=1e3` (an IndexError at aeeede7), at a CPU-friendly 1e1: the command line
    plans, builds and trains an iteration with 10 env replicas."""
    argv = ["--env", "dummy_env", "--backend", "cpu", "--quiet", "trainer.num_envs=1e1", "trainer.train_batch_size=1e2",
            "env.episode_length=1e1", "trainer.num_episodes=1e1", "--results_dir", str(tmp_path / "run")]
    args = script.parse_args(argv)
    plan = script.plan_run(args, announce=False)
    assert plan.config.trainer.num_envs == 10 and type(plan.config.trainer.num_envs) is int
    trainer = script.build(args, plan)
    assert trainer.engine.env_wrapper.n_envs == 10
    trainer.train(1)
    assert trainer.engine.iteration == 1
    trainer.graceful_close()


@pytest.mark.parametrize("text,ok", [("1e1", 10), ("10.0", 10), ("1.55e1", None), ("1e400", None), ("'10'", None)])
def test_an_example_env_takes_an_integral_float_for_an_integer_argument(text, ok):
    from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv as CartPole
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.config.load import yaml_loads

    value = yaml_loads(f"v: {text}")["v"]
    for make in (lambda v: TagContinuous(num_runners=v).num_runners, lambda v: CartPole(episode_length=v).episode_length):
        if ok is None:
            with pytest.raises(WarpDriveError, match="must be an integer"):
                make(value)
        else:
            got = make(value)
            assert got == ok and type(got) is int


def test_a_missing_trainer_section_is_a_notice_with_the_defaults(caplog):
    caplog.set_level("INFO", logger="warp_drive.config.schema")
    load_run_config({k: v for k, v in GOOD.items() if k != "trainer"} | {"env": {"episode_length": 1000}})
    assert "no `trainer` section: defaults.yaml's are used (num_envs=" in caplog.text
    caplog.clear()
    load_run_config(GOOD)
    assert "no `trainer` section" not in caplog.text


def test_unknown_model_kwargs_name_the_key_and_the_allowed_ones():
    from warp_drive.errors import ConfigError
    from warp_drive.training.models import ModelFactory
    from warp_drive.training.models.action_spec import ActionSpec

    def build(kwargs):
        model = load_run_config(GOOD, [f"policy.shared.model.kwargs={kwargs}"]).policy["shared"].model
        return ModelFactory().build(model, 4, ActionSpec(categorical=(2,)), "policy.shared.model")

    for kwargs, message in [("{foo: 1}", "unknown key `policy.shared.model.kwargs.foo`"),
                            ("{a: {b: {c: 1}}}", "takes no argument `a`"),
                            ("{activaton: tanh}", "did you mean `policy.shared.model.kwargs.activation`?"),
                            ("{fc_dims: [3]}", "write `policy.shared.model.fc_dims` instead")]:
        with pytest.raises(ConfigError) as info:
            build(kwargs)
        assert message in str(info.value), str(info.value)
        assert "fc_dims" in str(info.value) or "It takes: log_std_init, normalize_obs, activation" in str(info.value)
    assert build("{activation: tanh}") is not None


def test_random_overrides_give_values_or_typed_errors():
    results = [outcome(lambda c=c: load_run_config(GOOD, c)) for c in cases(random.Random(26), 300)]
    assert results.count("error") > 150


@pytest.mark.parametrize("data", [b"\xff\xfe\x00\xd8", "name: x\n".encode("utf-16"), b"name: caf\xe9", b"",
                                  b"\x00\x01", b"- 1\n- 2", b"a: &a [*a]", b"trainer: null\npolicy: null",
                                  b"{" * 5000, b"policy: {shared: {model: {kwargs: {a: 1}, nope: 2}}}"])
def test_files_in_odd_encodings_and_shapes(tmp_path, data):
    path = tmp_path / "run.yaml"
    path.write_bytes(data)
    assert outcome(lambda: load_run_config(path)) == "error"


@pytest.mark.parametrize("text,message", list(NULL_SECTIONS.items()))
def test_a_null_section_in_a_file_is_an_error_naming_it(tmp_path, text, message):
    path = tmp_path / "run.yaml"
    good = {"name: dummy_env\n": "name", "env: {episode_length: 10}\n": "env", "policy: {shared: {to_train: true}}\n":
            "policy", "trainer: {num_envs: 2, train_batch_size: 20, num_episodes: 4}\n": "trainer"}
    path.write_text("".join(line for line, key in good.items() if not text.startswith(key + ":")) + text)
    with pytest.raises(WarpDriveError, match=message.replace("{", "\\{").replace("}", "\\}")) as info:
        load_run_config(path)
    assert outcome(lambda: load_run_config(path)) == "error"
    assert "remove the line" in str(info.value) or "give it a policy tag" in str(info.value)


@pytest.mark.parametrize("value", ["numpy", "cuad", "5", "[cpu]", "null"])
@pytest.mark.parametrize("where", ["file", "override"])
def test_a_bad_env_backend_in_the_config_is_not_replaced_by_the_cli_backend(tmp_path, value, where):
    config = tmp_path / "run.yaml"
    trainer = "num_envs: 2, train_batch_size: 20, num_episodes: 4" + (f", env_backend: {value}" if where == "file" else "")
    config.write_text(f"name: dummy_env\nenv: {{episode_length: 10}}\npolicy: {{shared: {{to_train: true}}}}\n"
                      f"trainer: {{{trainer}}}\n")
    argv = ["--config", str(config), "--backend", "cpu", "--results_dir", str(tmp_path / "run")]
    argv += [f"trainer.env_backend={value}"] if where == "override" else []
    with pytest.raises(WarpDriveError, match="trainer.env_backend") as info:
        script.plan_run(script.parse_args(argv), announce=False)
    shown = {"null": "None", "5": "5", "[cpu]": "['cpu']"}.get(value, value)
    assert shown in str(info.value) and "'cpu'" in str(info.value) and not (tmp_path / "run").exists()
    config.write_text(config.read_text().replace(f", env_backend: {value}", ", env_backend: pycuda"))
    if where == "file":  # a valid value is still replaced by --backend
        assert script.plan_run(script.parse_args(argv), announce=False).config.trainer.env_backend == "cpu"


@pytest.mark.parametrize("argv", [["--num_gpus", "0"], ["--num_gpus", "-3"], ["--results_dir", ""],
                                  ["--results_dir", " "], ["--num_gpus", "x"], ["--eval_episodes", "-1"], [],
                                  ["trainer.num_envs=0"], ["policy.shared.lr=1e308"], ["--backend", "numbaa"],
                                  ["--eval_episodes", "1000000000"], ["--results_dir", "/tmp/" + "y" * 5000],
                                  ["--results_dir", "a\0b"], ["--resume", "r\0"], ["--resume", "/" + "r" * 5000],
                                  ["saving.name=../../.."], ["saving.basedir=/" + "b" * 5000]])
def test_cli_validation_refuses_bad_arguments(tmp_path, argv):
    config = tmp_path / "run.yaml"
    config.write_text("name: dummy_env\nenv: {episode_length: 10}\npolicy: {shared: {to_train: true}}\n"
                      "trainer: {num_envs: 2, train_batch_size: 20, num_episodes: 4}\n")
    full = ["--config", str(config), "--backend", "cpu", *argv] if argv else []
    assert outcome(lambda: script.plan_run(script.parse_args(full), announce=False)) in ("error", "exit2")
    assert list(tmp_path.iterdir()) == [config]  # no run folder


def test_random_command_lines_through_plan_run(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("name: dummy_env\nenv: {episode_length: 10}\npolicy: {shared: {to_train: true}}\n"
                      "trainer: {num_envs: 2, train_batch_size: 20, num_episodes: 4}\n")
    rng = random.Random(8)
    for i, overrides in enumerate(cases(rng, 60)):
        argv = ["--config", str(config), "--backend", "cpu", "--results_dir", str(tmp_path / f"run{i}"), *overrides]
        outcome(lambda a=argv: script.plan_run(script.parse_args(a), announce=False))
