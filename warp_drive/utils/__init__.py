"""Utilities: Philox, device helpers, spaces, observation checks, rollout recording, the consistency
checker. The env contract lives in :mod:`warp_drive.env`; its old modules here re-export it."""
