"""The odds that 2.7.1's ``test_reset_pool`` (its 5 Numba classic-control test files) passes for a reset pool that
is exactly right: the pool drawn from the env's reset distribution, each reset of a done env a uniform draw from it.

Each of those tests builds a pool of P initial states with no seed (2.7.1 draws it from gym's ``reset(seed=None)``;
this package from a fresh ``SeedSequence``), marks 2 of 3 envs done, resets them N times, and requires each done
env's mean state over the N resets to lie within a fraction ``tol`` of the pool's mean, for every checked state
component: ``|mean_draws[i] - mean_pool[i]| < tol * |mean_pool[i]|``. Where a component's pool mean is near zero
(cartpole, acrobot and pendulum states are drawn from intervals centred on zero) the bound is far tighter than the
sampling noise of N draws, so an exact sampler fails at random. This script draws the pool and the resets as the test
does (counts of the P entries multinomial in N), many times, and prints the pass rate per file.

Usage: ``python tools/reset_pool_test_odds.py [--trials 20000] [--seed 0] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: test file -> (env module:class, pool size P, resets N, tolerance, checked state components or None for all),
#: as 2.7.1's tests/example_envs/numba_tests/single_agent/classic_control/test_<env>.py write them
TESTS = {
    "test_cartpole.py": ("example_envs.classic_control.cartpole.cartpole:ClassicControlCartPoleEnv", 3, 10_000, 0.1, None),
    "test_acrobot.py": ("example_envs.classic_control.acrobot.acrobot:ClassicControlAcrobotEnv", 8, 30_000, 0.1, None),
    "test_pendulum.py": ("example_envs.classic_control.pendulum.pendulum:ClassicControlPendulumEnv", 8, 30_000, 0.2, None),
    "test_mountain_car.py": ("example_envs.classic_control.mountain_car.mountain_car:ClassicControlMountainCarEnv",
                             3, 10_000, 0.1, [0]),
    "test_continuous_mountain_car.py": (
        "example_envs.classic_control.continuous_mountain_car.continuous_mountain_car:"
        "ClassicControlContinuousMountainCarEnv", 3, 10_000, 0.1, [0]),
}


def pass_rate(bounds: tuple[np.ndarray, np.ndarray], pool_size: int, draws: int, tol: float,
              components: list[int] | None, trials: int, rng: np.random.Generator) -> float:
    """Fraction of ``trials`` in which both done envs' mean over ``draws`` uniform resets from a fresh pool of
    ``pool_size`` states lies within ``tol`` of the pool mean in every checked component."""
    low, high = (np.asarray(b, dtype=np.float64) for b in bounds)
    pools = rng.uniform(low, high, size=(trials, pool_size, low.size)).astype(np.float32).astype(np.float64)
    if components is not None:
        pools = pools[:, :, components]
    pool_mean = pools.mean(axis=1)  # (trials, d)
    ok = np.ones(trials, dtype=bool)
    for _env in range(2):  # the two envs marked done
        counts = rng.multinomial(draws, np.full(pool_size, 1.0 / pool_size), size=trials)  # (trials, P)
        mean = np.einsum("tp,tpd->td", counts, pools) / draws
        ok &= np.all(np.abs(mean - pool_mean) < tol * np.abs(pool_mean), axis=1)
    return float(ok.mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the rates here")
    args = ap.parse_args(argv)
    import importlib

    rng = np.random.default_rng(args.seed)
    rates = {}
    for name, (ref, pool_size, draws, tol, components) in TESTS.items():
        module, cls = ref.split(":")
        env = getattr(importlib.import_module(module), cls)(episode_length=100)
        rates[name] = pass_rate(env.start_bounds(), pool_size, draws, tol, components, args.trials, rng)
        print(f"{name:34s} P={pool_size} N={draws:6d} tol={tol}: passes {100 * rates[name]:5.1f}% of {args.trials} runs")
    if args.json:
        Path(args.json).write_text(json.dumps({"trials": args.trials, "seed": args.seed, "pass_rate": rates}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
