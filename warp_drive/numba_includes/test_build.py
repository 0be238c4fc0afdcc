"""2.7.1's ``warp_drive.numba_includes.test_build``: every core Numba service function in one module
(its unit tests load it with ``NumbaFunctionManager.import_numba_from_source_code``)."""

from warp_drive.numba_includes.core.log import *  # noqa: F401,F403
from warp_drive.numba_includes.core.pool_reset import *  # noqa: F401,F403
from warp_drive.numba_includes.core.random import *  # noqa: F401,F403
from warp_drive.numba_includes.core.reset import *  # noqa: F401,F403
