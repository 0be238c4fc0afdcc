"""2.7.1 compatibility path: ``EnvironmentRegistrar`` and the module-level ``env_registrar``
(:mod:`warp_drive.env.registrar`)."""

from warp_drive.env.registrar import EnvironmentRegistrar, env_registrar

__all__ = ["EnvironmentRegistrar", "env_registrar"]
