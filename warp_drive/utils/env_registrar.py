"""2.7.1 compatibility path: ``EnvironmentRegistrar`` and the module-level ``env_registrar``
(:mod:`warp_drive.vocab.registrar`)."""

from warp_drive.vocab.registrar import EnvironmentRegistrar, env_registrar

__all__ = ["EnvironmentRegistrar", "env_registrar"]
