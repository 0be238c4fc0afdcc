"""Tag continuous, CUDA neighbour search: exactly the NumPy reference's neighbours and tags.

The grid search (cells sorted every step, rings searched until no farther agent can matter) and
the brute-force scan must select the same K nearest agents as ``nearest_agents`` (ties by lower
id) and the same tagger as ``find_tags``. The states here are built to break a careless grid:
agents on a lattice of cell corners (exact distance ties, agents on cell boundaries, stacked
agents), a crowd inside one cell, agents on the walls, fewer agents in the game than K, and a
uniform field. Actions are no-ops, so the kernel searches exactly these positions, and every
array must match the NumPy step bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from example_envs.tag_continuous.tag_continuous import TagContinuous
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.utils.constants import Constants

pytestmark = pytest.mark.gpu

BASE = dict(grid_length=60.0, episode_length=50, seed=11, use_full_observation=False,
            num_other_agents_observed=10, tagging_distance=0.02)
CONFIGS = {
    # 1000 agents: grid search, neighbour table staged in shared memory (coalesced writes)
    "1000 agents K=10 grid staged": dict(BASE, num_taggers=90, num_runners=910),
    # the neighbour table (1000 x 40 ids) does not fit: one row per thread
    "1000 agents K=40 grid unstaged": dict(BASE, num_taggers=90, num_runners=910, num_other_agents_observed=40),
    "1024 agents K=10 grid": dict(BASE, num_taggers=24, num_runners=1000),
    "300 agents K=10 scan": dict(BASE, num_taggers=30, num_runners=270, neighbour_search="scan"),
    "33 agents K=10 forced grid": dict(BASE, grid_length=10.0, num_taggers=3, num_runners=30, neighbour_search="grid"),
    "40 agents full obs forced grid": dict(BASE, grid_length=10.0, num_taggers=4, num_runners=36,
                                           use_full_observation=True, neighbour_search="grid"),
}
COMPARED = ("observations", "rewards", "tag_counts", "still_in_the_game", "num_runners", Constants.DONE)
NUM_ENVS = 6


def _adversarial_state(env: TagContinuous, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One hard layout per env (E = NUM_ENVS): positions, directions and in-game flags."""
    n, length = env.num_agents, env.grid_length
    side = max(env.neighbour_grid_side, 4)
    cell = length / side
    x = np.empty((NUM_ENVS, n), np.float32)
    y = np.empty((NUM_ENVS, n), np.float32)
    # 0: corners of the cell lattice (boundaries, exact ties, stacked agents)
    x[0] = rng.integers(0, side + 1, n) * cell
    y[0] = rng.integers(0, side + 1, n) * cell
    # 1: a crowd inside one cell, on a 4 x 4 sub-lattice (many ties)
    x[1] = (side // 2 + rng.integers(0, 4, n) / 4) * cell
    y[1] = (side // 3 + rng.integers(0, 4, n) / 4) * cell
    # 2: on the walls and corners
    x[2] = rng.choice(np.array([0.0, length, length / 2], np.float32), n)
    y[2] = rng.uniform(0, length, n)
    # 3: uniform, but few agents left in the game (below K for most observers)
    # 4: uniform; 5: half-cell lattice (every position on a boundary of some cell)
    x[3:5] = rng.uniform(0, length, (2, n))
    y[3:5] = rng.uniform(0, length, (2, n))
    x[5] = rng.integers(0, 2 * side + 1, n) * (cell / 2)
    y[5] = rng.integers(0, 2 * side + 1, n) * (cell / 2)
    still = np.ones((NUM_ENVS, n), np.int32)
    runners = np.flatnonzero(~env.is_tagger)
    out = rng.permutation(runners)[: max(0, len(runners) - env.num_observed // 2)]
    still[3, out] = 0
    still[4, rng.permutation(runners)[: len(runners) // 2]] = 0
    directions = rng.uniform(0, 2 * np.pi, (NUM_ENVS, n)).astype(np.float32)
    num_runners = (still & ~env.is_tagger).sum(axis=1).astype(np.int32)
    return {"loc_x": x, "loc_y": y, "direction": directions, "still_in_the_game": still,
            "num_runners": num_runners.reshape(NUM_ENVS, 1)}


def _wrapper(cfg: dict, backend: str) -> EnvWrapper:
    wrapper = EnvWrapper(TagContinuous(**cfg), num_envs=NUM_ENVS, env_backend=backend)
    wrapper.reset_all_envs()
    return wrapper


@pytest.mark.parametrize("label", list(CONFIGS))
def test_grid_and_scan_select_exactly_the_numpy_neighbours_and_tags(label):
    cfg = CONFIGS[label]
    rng = np.random.default_rng(5)
    cpu, gpu = _wrapper(cfg, "cpu"), _wrapper(cfg, "pycuda")
    env = gpu.env
    if cfg.get("neighbour_search", "auto") != "scan":
        assert env.neighbour_grid_side > 1, f"{label}: the grid path is not compiled in"
    state = _adversarial_state(env, rng)
    for name, values in state.items():
        shape = cpu.cuda_data_manager.get_shape(name)
        for w in (cpu, gpu):
            w.cuda_data_manager.assign(name, values.reshape(shape))
    noop = np.zeros((NUM_ENVS, env.num_agents, 2), np.int32)
    tags = 0
    for step in range(3):  # the same positions each step; in-game flags change as runners are tagged
        cpu.step_all_envs(noop)
        gpu.step_all_envs(noop)
        for name in COMPARED:
            a = cpu.cuda_data_manager.pull_data_from_device(name)
            b = gpu.cuda_data_manager.pull_data_from_device(name)
            if not np.array_equal(a, b):
                idx = tuple(int(i) for i in np.argwhere(a != b)[0])
                pytest.fail(f"{label}, step {step}: {name}{list(idx)} NumPy {a[idx]} vs CUDA {b[idx]}")
        tags += int(cpu.cuda_data_manager.pull_data_from_device("tag_counts")[:, ~env.is_tagger].sum())
    # the layouts really exercise tagging (stacked taggers and runners on the lattice)
    assert np.isfinite(cpu.cuda_data_manager.pull_data_from_device("observations")).all()
    assert tags > 0, f"{label}: nobody was tagged"


def test_grid_matches_scan_on_a_moving_field():
    """Random actions for a whole episode: grid and brute-force kernels agree bit for bit."""
    cfg = dict(BASE, num_taggers=50, num_runners=450, episode_length=30)
    grid, scan = _wrapper(dict(cfg, neighbour_search="grid"), "pycuda"), _wrapper(dict(cfg, neighbour_search="scan"), "pycuda")
    assert grid.env.neighbour_grid_side > 1 and scan.env.neighbour_grid_side == 1
    rng = np.random.default_rng(0)
    for _ in range(30):
        heads = (len(grid.env.acceleration_actions), len(grid.env.turn_actions))
        actions = np.stack([rng.integers(0, h, (NUM_ENVS, 500)) for h in heads], axis=-1).astype(np.int32)
        grid.step_all_envs(actions)
        scan.step_all_envs(actions)
        for name in COMPARED:
            np.testing.assert_array_equal(grid.cuda_data_manager.pull_data_from_device(name),
                                          scan.cuda_data_manager.pull_data_from_device(name), err_msg=name)
