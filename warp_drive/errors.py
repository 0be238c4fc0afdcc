"""Exception hierarchy of warp_drive.

Every error raised on bad user input is one of these types; each message names the value seen,
the value expected and the fix.
"""

from __future__ import annotations


class WarpDriveError(Exception):
    """Base class of every error raised by warp_drive."""


class ConfigError(WarpDriveError, ValueError):
    """A run configuration or env configuration is invalid."""


class CUDACompileError(WarpDriveError, RuntimeError):
    """nvcc failed; the message holds the command and the tail of its stderr."""


class KernelSignatureError(WarpDriveError, TypeError):
    """Kernel arguments bound by name do not match the kernel's CUDA signature."""


class DeviceUnavailableError(WarpDriveError, RuntimeError):
    """The pycuda backend was requested but pycuda or a CUDA device is missing."""


class DataNotFoundError(WarpDriveError, KeyError):
    """A data name is not known to the data manager."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class KernelNotBuiltError(DataNotFoundError):
    """A WarpDrive 2.7.1 kernel is not in the loaded module: its build left it out; the message names the fix."""


class DataTypeError(WarpDriveError, TypeError):
    """An array has a dtype that cannot cross to the device."""


class DataShapeError(WarpDriveError, ValueError):
    """An array has a shape that does not fit its use."""


class SpaceMismatchError(WarpDriveError, ValueError):
    """Data does not lie in its declared gymnasium space (e.g. a reset observation outside ``observation_space``)."""


class InvalidActionError(SpaceMismatchError, ConfigError):
    """An action given to an interop adapter lies outside its action space (out of range, not an integer
    for Discrete / MultiDiscrete, NaN or infinite for Box). Also a ``ConfigError``, the adapters' former type."""


class DuplicateDataError(WarpDriveError, ValueError):
    """A data name was pushed twice."""


class ConsistencyError(WarpDriveError, AssertionError):
    """The CUDA and NumPy implementations of an env disagree."""


class SamplerError(WarpDriveError, ValueError):
    """Action probabilities are NaN, negative, or do not sum to about 1."""


class GeometryError(WarpDriveError, ValueError):
    """Launch geometry impossible on this device (e.g. too many agents for one block)."""


class CheckpointError(ConfigError):
    """A checkpoint or weights file is missing, corrupt, unsafe to load, or does not fit the run."""


class NonFiniteError(WarpDriveError, FloatingPointError):
    """Training met a NaN or infinite value (an observation, reward, model output, loss, gradient or
    weight) or the sampler's error flag; raised at the end of the iteration, before its checkpoint.

    Attributes: ``array`` (what held it), ``iteration``, ``value`` (the first bad value, or None),
    ``env`` and ``agent`` (its env and agent index for env arrays, else None)."""

    def __init__(self, message: str, array: str = "", iteration: int = 0, value: float | None = None,
                 env: int | None = None, agent: int | None = None) -> None:
        super().__init__(message)
        self.array, self.iteration, self.value, self.env, self.agent = array, iteration, value, env, agent


class UsageError(WarpDriveError, RuntimeError):
    """A call made out of order or on an object that cannot do it (e.g. ``step()`` before the
    first reset, or rendering an env that has no renderer)."""


class UnknownEnvError(ConfigError, DataNotFoundError):
    """No env is registered under a name (the message lists the registered names). Its message
    prints unquoted: DataNotFoundError's ``__str__`` comes before KeyError's in the MRO."""


class EnvLoadError(ConfigError):
    """An env named by import path (``package.module:Class``), by entry point, or registered by a module of
    ``--import`` cannot be loaded: the module fails to import or lacks the class (the message names both)."""


class PolicyContractError(ConfigError, TypeError):
    """An algorithm's policy does not meet the contract of
    :class:`warp_drive.training.algorithms.base.Policy` (raised by ``register_algorithm`` and when
    the engine builds the policy). ``missing`` names what it lacks; the message says the fix."""

    def __init__(self, message: str, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)
