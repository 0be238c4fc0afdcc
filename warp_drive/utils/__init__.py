"""Utilities at the bottom of the house (they import only :mod:`warp_drive.errors`): the config check helpers
and did-you-mean (``checks.py``), bounded excerpts for messages, Philox, spaces, observation checks, CPU threads.

The other modules here are 2.7.1's paths (and this project's former ones), kept as re-exports or aliases
(:mod:`warp_drive.compat`).
"""
