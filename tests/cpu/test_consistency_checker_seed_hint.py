"""The consistency checker names unseeded configs as the cause when every value differs at the first
reset (issue 26, item 6d). The "GPU" side runs on ``gpu_env_backend="cpu"``, as in
test_compat_env_checker.py: two independently built env instances, like the two backends."""

from __future__ import annotations

import numpy as np
import pytest

from example_envs import get_example_env_class
from example_envs.tag_continuous.tag_continuous import TagContinuous
from warp_drive.env_cpu_gpu_consistency_checker import EnvironmentCPUvsGPU
from warp_drive.errors import ConsistencyError
from warp_drive.testing.consistency import SEED_HINT, _first_mismatch

TAG = dict(num_taggers=1, num_runners=2, episode_length=4)

#: Both sides run NumPy here on purpose (the module docstring): the checker's warning that says so is expected.
pytestmark = pytest.mark.filterwarnings("ignore:EnvironmentCPUvsGPU\\(gpu_env_backend='cpu'\\):UserWarning")


def check(cls, config, **kwargs):
    return EnvironmentCPUvsGPU(dual_mode_env_class=cls, env_configs={"c": config}, num_envs=3, gpu_env_backend="cpu",
                               **kwargs).test_env_reset_and_step(seed=0)


def test_the_hint_reads_as_the_issue_asks():
    assert SEED_HINT == "every value differs at the first reset: seed both sides alike (env config `seed`)"


@pytest.mark.parametrize("cls,config,array,size", [(TagContinuous, TAG, "loc_x", 9),
                                                   (get_example_env_class("pendulum"), dict(episode_length=5), "state", 6)])
def test_an_unseeded_config_is_named_as_the_cause(cls, config, array, size):
    with pytest.raises(ConsistencyError) as err:
        check(cls, config)
    msg = str(err.value)
    assert msg.startswith(f"[c, seed 0] step reset: '{array}' differs at env 0, agent 0")  # the usual message...
    assert msg.endswith(f"({size} of {size} values differ); {SEED_HINT}")  # ...and the cause
    report = check(cls, {**config, "seed": 7})  # the fix it names works
    assert report.steps > 0


def test_other_mismatches_keep_their_message():
    class Drifting(TagContinuous):
        def numpy_step(self, data):
            super().numpy_step(data)
            data["loc_x"][...] += np.float32(1.0)  # every value, but after a step

    with pytest.raises(ConsistencyError) as err:
        EnvironmentCPUvsGPU(cpu_env_class=TagContinuous, cuda_env_class=Drifting, env_configs={"c": {**TAG, "seed": 1}},
                            gpu_env_backend="cpu").test_env_reset_and_step(seed=0)
    assert "step 0: 'loc_x'" in str(err.value) and "seed both sides" not in str(err.value)


@pytest.mark.parametrize("step,unseeded,everywhere,hinted", [
    ("reset", True, True, True),
    ("reset", False, True, False),   # the config has a seed: something else differs
    ("reset", True, False, False),   # only some values differ
    (3, True, True, False),          # not the first reset
    ("3 (after reset)", True, True, False),
])
def test_the_hint_needs_all_three_conditions(step, unseeded, everywhere, hinted):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = a + 1
    bad = np.ones_like(a, bool) if everywhere else np.eye(2, 3, dtype=bool)
    msg = str(_first_mismatch(bad, a, b, "c", 0, step, "state", unseeded))
    assert msg.endswith(f"; {SEED_HINT}") is hinted
    assert f"({int(bad.sum())} of 6 values differ)" in msg
