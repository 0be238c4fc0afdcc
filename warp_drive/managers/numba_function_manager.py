"""NumbaFunctionManager: Numba kernels (an env's step, 2.7.1's Numba core) beside the CUDA C services.

Two sets of functions live here:

- **Numba kernels**, from the modules this manager imported: an env's step module (through 2.7.1's
  ``dynamic_import_numba`` or :meth:`NumbaFunctionManager.load_env_module`) together with the Numba
  core services of ``warp_drive.numba_includes.core``, or any module named in
  ``import_numba_from_source_code``. ``get_function(name)`` returns a
  :class:`~warp_drive.numba_backend.runtime.NumbaKernel` (launch ``k[grid, block](*args)``), and
  :meth:`launch` runs one by name on torch's current stream.
- **the service kernels** of warp_drive (sampling, resets, reset pools, logging) in
  :attr:`NumbaFunctionManager.services`: a :class:`~warp_drive.managers.pycuda_function_manager.PyCUDAFunctionManager`
  with the CUDA C core (compiled on first use, cached by content; pycuda and nvcc needed), or under
  Numba's CUDA simulator the NumPy twins of the CPU backend. The Sampler, EnvironmentReset and
  LogController run on it, on the same store: the user's env step is the Numba part.
"""

from __future__ import annotations

import logging
import sys
import types
from typing import Any, Mapping, Sequence

from warp_drive.errors import ConfigError, DataNotFoundError, KernelSignatureError, UsageError
from warp_drive.managers.function_manager import CPUFunctionManager, FunctionManager, arg_name
from warp_drive.numba_backend import modules
from warp_drive.numba_backend.runtime import NumbaKernel, is_kernel, kernel_parameters, numba_cuda, simulated

logger = logging.getLogger(__name__)

#: 2.7.1's default Numba functions (its ``initialize_default_functions``).
DEFAULT_NUMBA_FUNCTIONS: tuple[str, ...] = (
    "reset_log_mask", "update_log_mask", "log_one_step_2d", "log_one_step_3d", "init_random", "sample_actions",
    "sample_ou_process", "reset_when_done_1d", "reset_when_done_2d", "reset_when_done_3d", "init_random_for_reset",
    "reset_when_done_1d_from_pool", "reset_when_done_2d_from_pool", "reset_when_done_3d_from_pool",
    "undo_done_flag_and_reset_timestep",
)

#: 2.7.1's built-in Numba env modules by env name (registered paths take precedence).
DEFAULT_ENV_MODULES: dict[str, str] = modules.DEFAULT_ENV_MODULES


def numba_source(env: Any, name: str, registrar: Any = None) -> str:
    """The dotted module of an env's Numba step: the one registered for ``name`` in ``registrar``
    (2.7.1's way; it takes precedence), else the env's ``numba_source`` attribute, else 2.7.1's
    default table.

    Raises:
        ConfigError: none of the three names one.
    """
    registered = registrar.get_cuda_env_src_path(name, env_backend="numba") if registrar is not None else None
    source = registered or getattr(env, "numba_source", None) or DEFAULT_ENV_MODULES.get(name)
    if not source:
        raise ConfigError(
            f"{type(env).__name__} (env '{name}') has no Numba step: set the class attribute numba_source = "
            f"'my_pkg.my_env_step_numba' (a module defining the kernel Numba{name}Step), or register it with "
            f"registrar.add_cuda_env_src_path({name!r}, 'my_pkg.my_env_step_numba', env_backend='numba') and pass "
            f"env_registrar=registrar; or run its CUDA C step with env_backend='pycuda'"
        )
    return str(source)


class NumbaFunctionManager(FunctionManager):
    """Imports Numba kernels and launches them; holds the service kernels in :attr:`services`.

    Args:
        num_agents, num_envs, blocks_per_env, process_id: see
            :class:`~warp_drive.managers.function_manager.FunctionManager` (2.7.1's order).
        device_id: CUDA device of the service kernels (default: torch's current device).
    """

    backend = "numba"
    has_kernels = True

    def __init__(self, num_agents: int = 1, num_envs: int = 1, blocks_per_env: int = 1, process_id: int = 0,
                 device_id: int | None = None) -> None:
        super().__init__(num_agents, num_envs, blocks_per_env, process_id)
        numba_cuda()
        self.simulated = simulated()
        self._device_id = device_id
        self._process_id = process_id
        self._services: FunctionManager | None = None
        self._service_source: tuple[Any, Mapping[str, Any] | None] | None = None
        self._modules: list[types.ModuleType] = []
        self._stream: Any = None

    # ------------------------------------------------------------------ the service kernels
    @property
    def services(self) -> FunctionManager:
        """The function manager of warp_drive's service kernels (built on first use)."""
        if self._services is None:
            geometry = dict(num_agents=self.num_agents, num_envs=self.num_envs, blocks_per_env=self.blocks_per_env,
                            process_id=self._process_id)
            if self.simulated:
                services: FunctionManager = CPUFunctionManager(**geometry)
                services.initialize_default_functions()
            else:
                from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

                services = PyCUDAFunctionManager(device_id=self._device_id, **geometry)
                if self._service_source is not None:  # the core and the env's CUDA C (start-state hook, reset kernels)
                    source, constants = self._service_source
                    services.compile_and_load_cuda(env_source=source, constants=constants)
                else:
                    services.load_cuda_from_source_code("")  # the core layer alone (cached by content)
                services.stream = self._stream
            self._services = services
        return self._services

    def set_service_source(self, source: Any, constants: Mapping[str, Any] | None = None) -> None:
        """Compile the env's CUDA C source (with its ``cuda_constants()``) together with the service
        kernels on the GPU, so that its start-state hook (``<Name>StartState``: fresh start states) and
        custom reset kernels run with the services. Under the simulator the services are NumPy twins
        and the env's ``numpy_start_state`` serves instead. Call before the services are first used.

        Raises:
            UsageError: the services were already built.
        """
        if self._services is not None:
            raise UsageError("set_service_source() must come before the service kernels are first used")
        self._service_source = (source, dict(constants) if constants is not None else None)

    @property
    def stream(self) -> Any:
        """The pycuda stream the service kernels launch on (None: the default stream). Numba kernels
        always follow torch's current stream; a CUDA-graph capture sets both."""
        return self._stream

    @stream.setter
    def stream(self, value: Any) -> None:
        self._stream = value
        if self._services is not None and hasattr(self._services, "stream"):
            self._services.stream = value

    # ------------------------------------------------------------------ importing Numba modules
    def import_numba_from_source_code(self, numba_path: str, default_functions_included: bool = True) -> None:
        """Import the Numba module at dotted ``numba_path`` (2.7.1's call); its kernels become
        launchable by name. ``env_config`` holds this manager's launch constants first."""
        values = modules.launch_constants(self.num_envs, self.num_agents, self.blocks_per_env)
        if numba_path == modules.ENV_RUNNER and modules.ENV_RUNNER in sys.modules:
            self._add_module(sys.modules[modules.ENV_RUNNER], default_functions_included)
            return
        self._add_module(modules.load_env_module(numba_path, values), default_functions_included)

    def import_numba_env_config(self, template_header_file: str = modules.TEMPLATE_HEADER,
                                template_path: str | None = None) -> None:
        """Make ``warp_drive.numba_includes.env_config`` hold this manager's launch constants."""
        modules.check_templates(template_header_file, None, template_path)
        modules.install_env_config(modules.launch_constants(self.num_envs, self.num_agents, self.blocks_per_env))

    def dynamic_import_numba(
        self,
        env_name: str,
        template_header_file: str = modules.TEMPLATE_HEADER,
        template_runner_file: str = modules.TEMPLATE_RUNNER,
        template_path: str | None = None,
        default_functions_included: bool = True,
        customized_env_registrar: Any = None,
        event_messenger: Any = None,
    ) -> None:
        """2.7.1's build: ``env_config`` with this manager's constants, then ``env_runner`` holding the
        core Numba services and the env's kernels (module from ``customized_env_registrar``, else
        2.7.1's default table). Every process builds its own (in memory); ``event_messenger`` is set."""
        modules.check_templates(template_header_file, template_runner_file, template_path)
        path = None if customized_env_registrar is None else customized_env_registrar.get_cuda_env_src_path(
            env_name, env_backend="numba")
        path = path or DEFAULT_ENV_MODULES.get(env_name)
        if path is None:
            raise ConfigError(f"no Numba module for env {env_name!r}: register it with registrar.add_cuda_env_src_path("
                              f"{env_name!r}, 'my_pkg.my_env_step_numba', env_backend='numba') and pass "
                              f"customized_env_registrar=registrar")
        self.load_env_module(path, default_functions_included=default_functions_included)
        if event_messenger is not None and hasattr(event_messenger, "set"):
            event_messenger.set()

    def load_env_module(self, path: str, constants: Mapping[str, Any] | None = None,
                        default_functions_included: bool = True) -> types.ModuleType:
        """Import an env's Numba step module with ``env_config`` holding the launch constants and the
        env's ``constants`` (``cuda_constants()``), build ``env_runner`` from it and load its kernels."""
        values = modules.launch_constants(self.num_envs, self.num_agents, self.blocks_per_env, constants)
        runner = modules.build_env_runner(modules.load_env_module(path, values))
        self._add_module(runner, default_functions_included)
        return runner

    def _add_module(self, module: types.ModuleType, defaults: bool) -> None:
        self._modules.insert(0, module)
        if defaults:
            self.initialize_default_functions()

    def initialize_default_functions(self) -> None:
        """Load 2.7.1's default Numba functions that the imported modules define."""
        self.initialize_functions([n for n in DEFAULT_NUMBA_FUNCTIONS if self._lookup(n) is not None])

    def has_compat_271_kernels(self) -> bool:
        return False

    # ------------------------------------------------------------------ functions
    def _lookup(self, name: str) -> Any:
        for module in self._modules:
            value = getattr(module, name, None)
            if value is not None:
                return value
        return None

    def _load_function(self, name: str) -> Any:
        value = self._lookup(name)
        if value is None:
            found = sorted({n for m in self._modules for n, v in vars(m).items() if is_kernel(v)})
            hint = "import a module first (dynamic_import_numba or import_numba_from_source_code)" if not self._modules \
                else f"kernels found: {', '.join(found) or 'none'}"
            raise DataNotFoundError(f"Numba function '{name}' is not in the imported modules; {hint}")
        return NumbaKernel(name, value, self.simulated) if is_kernel(value) else value

    def has_function(self, name: str) -> bool:
        """True when an imported module defines Numba kernel ``name``."""
        return is_kernel(self._lookup(name))

    @property
    def numba_function_names(self) -> list[str]:
        """Names of the initialized functions (2.7.1's name)."""
        return self.function_names

    def launch(self, name: str, args: Sequence[Any], grid: Any = None, block: Any = None) -> None:
        kernel = self._functions.get(name) or self._get_function(name)
        if not isinstance(kernel, NumbaKernel):
            raise KernelSignatureError(f"'{name}' is a host function, not a kernel; call it directly")
        kernel.launch(self._grid if grid is None else grid, self._block if block is None else block, args)

    def check_arguments(self, name: str, specs: Sequence[Any], data_manager: Any, skip: int = 0) -> None:
        """Check the count (and the order, where names match) of data-name bound arguments against the
        kernel's Python parameters.

        Raises:
            KernelSignatureError: a different count, or a name bound at another parameter's position.
        """
        params = kernel_parameters(self._lookup(name))[skip:]
        names = [arg_name(s) for s in specs]
        if len(names) != len(params):
            raise KernelSignatureError(f"Numba kernel {name}({', '.join(params)}) takes {len(params)} arguments; "
                                       f"{len(names)} are bound: {names}")
        norm = lambda n: n.removesuffix("_arr").strip("_").lower()  # noqa: E731
        where = {norm(n): i for i, n in enumerate(names)}
        for i, param in enumerate(params):
            j = where.get(norm(param))
            if j is not None and j != i:
                raise KernelSignatureError(f"{name}: parameter {i} '{param}' is bound to '{names[i]}', but "
                                           f"'{names[j]}' is passed at position {j}; the order does not match")
