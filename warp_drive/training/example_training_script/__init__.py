"""Former path: ``warp_drive.training.example_training_script``, the example training script.

Its command line and names from :mod:`warp_drive.cli.train` (and the helpers it shares with the
other command lines); ``python -m warp_drive.training.example_training_script ...`` runs it.
The names are imported on first use (PEP 562), so that ``python -m`` reaches ``__main__``, which
installs the SIGTERM handler, before the command line's modules are imported.
"""

from __future__ import annotations

from warp_drive.compat import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    **dict.fromkeys(("add_flag", "add_run_source_arguments", "configure_logging", "explain_error", "report_errors",
                     "without_flag"), "warp_drive.cli.common"),
    **dict.fromkeys(("CPU_SIZED_OVERRIDES", "CPU_SIZED_SUMMARY"), "warp_drive.cli.envs"),
    **dict.fromkeys(("DEFAULT_EVAL_EPISODES", "PROG", "RunPlan", "auto_scale_overrides", "build", "main", "parse_args",
                     "plan_run", "results_folder_for", "run"), "warp_drive.cli.train"),
    "default_policy_map": "warp_drive.training.run.build",
    "choose_backend": "warp_drive.utils.device",
})
