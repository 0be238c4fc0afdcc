"""Numba versions of 2.7.1's core service kernels (each module imports numba)."""
