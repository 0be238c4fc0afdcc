"""Former path: ``warp_drive.training.example_training_script``, the example training script.

Its command line and names from :mod:`warp_drive.cli.train` (and the helpers it shares with the
other command lines); ``python -m warp_drive.training.example_training_script ...`` runs it.
"""

from warp_drive.cli.common import (
    add_flag,
    add_run_source_arguments,
    configure_logging,
    explain_error,
    report_errors,
    without_flag,
)
from warp_drive.cli.envs import CPU_SIZED_OVERRIDES, CPU_SIZED_SUMMARY
from warp_drive.cli.train import (
    DEFAULT_EVAL_EPISODES,
    PROG,
    RunPlan,
    auto_scale_overrides,
    build,
    main,
    parse_args,
    plan_run,
    results_folder_for,
    run,
)
from warp_drive.training.build import default_policy_map
from warp_drive.utils.device import choose_backend

__all__ = [
    "CPU_SIZED_OVERRIDES", "CPU_SIZED_SUMMARY", "DEFAULT_EVAL_EPISODES", "PROG", "RunPlan", "add_flag",
    "add_run_source_arguments", "auto_scale_overrides", "build", "choose_backend", "configure_logging",
    "default_policy_map", "explain_error", "main", "parse_args", "plan_run", "report_errors", "results_folder_for",
    "run", "without_flag",
]
