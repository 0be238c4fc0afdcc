"""2.7.1 compatibility path: ``warp_drive.training.deprecate`` (its package of pre-refactor modules)."""
