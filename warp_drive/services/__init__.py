"""The services built on the managers: the action :mod:`~warp_drive.services.sampler`, the device
:mod:`~warp_drive.services.environment_reset`, the episode :mod:`~warp_drive.services.log_controller`, and their
Numba-backend forms (:mod:`~warp_drive.services.numba_services`). Each launches service kernels through a
function manager, whatever the backend."""
