"""Training: the engine (``engine.py``), the Trainer's loop (``trainer.py``), algorithms (A2C/PPO,
DDPG), models, schedules; ``build.py`` builds a run from its config.

Subpackages are imported explicitly (``warp_drive.training.algorithms`` etc.); importing this
package has no side effects.
"""
