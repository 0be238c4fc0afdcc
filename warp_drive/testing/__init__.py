"""Tools that check and show an env: the CPU-vs-GPU consistency checker (``consistency.py``, 2.7.1's
``EnvironmentCPUvsGPU``), an episode played on the NumPy reference and rendered (``rollout_animation.py``)
and the compile check of registered Numba steps (``numba_build.py``). Importing this package imports none of them.
"""
