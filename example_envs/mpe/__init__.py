"""Multi-agent particle envs (MPE) reproduced from the ``mpe2`` package, on the CPU (NumPy) and the GPU (CUDA).

``base.py`` holds the shared world state and step skeleton, ``physics.py`` (NumPy) and ``mpe.cuh``
(CUDA) the shared physics, ``constants.py`` the constants of both; each env lives in its own
folder (``simple_spread/``, ``simple_speaker_listener/``) with its scenario, kernel and run config.
See ``README.md``.
"""
