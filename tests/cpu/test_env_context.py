"""CUDAEnvironmentContext's launch mechanism (step kernel vs phase kernels), with a stub manager."""

from __future__ import annotations

from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import TagGridWorld


class _StubFM:
    has_kernels = True

    def __init__(self, blocks_per_env: int) -> None:
        self.blocks_per_env = blocks_per_env
        self.initialized: list[str] = []
        self.checked: list[str] = []
        self.launched: list[str] = []
        self.args: list[tuple] = []

    def initialize_functions(self, names):
        self.initialized += list(names)

    def get_function(self, name):
        return name

    def check_arguments(self, name, specs, dm):
        self.checked.append(name)

    def launch(self, name, args, grid=None, block=None):
        self.launched.append(name)
        self.args.append(tuple(args))


def _bind(env, bpe):
    fm = _StubFM(bpe)
    env.initialize_step_function_context(object(), fm, lambda args: list(args))
    return fm


def test_phase_kernels_are_loaded_checked_and_launched_only_for_multi_block_envs():
    for env in (TagContinuous(), TagGridWorld()):
        kernels = [env.step_function_name, *env.phase_kernels]
        one = _bind(env, 1)
        assert one.initialized == kernels and one.checked == kernels
        env.cuda_step_kernel()
        assert one.launched == [env.step_function_name]
        assert one.args == [tuple(env.step_kernel_args)]
        several = _bind(env, 3)
        env.cuda_step_kernel()
        assert several.launched == list(env.phase_kernels)
        assert several.args == [tuple(a) for a in env.phase_kernels.values()]  # each phase: its own arguments
