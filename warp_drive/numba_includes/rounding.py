"""Float arithmetic rounded once per operation, for Numba steps that must match a NumPy twin bit for bit.

On a GPU, libNVVM contracts ``a * b + c`` into one fused multiply-add unless told otherwise (its
``-fma=1`` default, which numba-cuda leaves on), so a Numba step can round differently from the NumPy
twin it mirrors. The CUDA C steps use ``__fmul_rn`` and friends for that; these are the Numba
twins: libdevice's ``__nv_fadd_rn`` ... on a GPU, and plain NumPy scalar arithmetic in the
stated precision under Numba's CUDA simulator (whose libdevice stubs compute nothing).

``f32_add(a, b)`` is ``float32(a) + float32(b)`` rounded to float32, ``f64_mul(a, b)`` a float64
product rounded once, and so on. Import them in a step module:
``from warp_drive.numba_includes.rounding import f32_add, f32_mul``.
"""

import numba
from numba import cuda, float32, float64

__all__ = ["f32_add", "f32_sub", "f32_mul", "f32_div", "f64_add", "f64_sub", "f64_mul", "f64_div"]

if numba.config.ENABLE_CUDASIM:

    @cuda.jit(device=True)
    def f32_add(a, b):
        return float32(float32(a) + float32(b))

    @cuda.jit(device=True)
    def f32_sub(a, b):
        return float32(float32(a) - float32(b))

    @cuda.jit(device=True)
    def f32_mul(a, b):
        return float32(float32(a) * float32(b))

    @cuda.jit(device=True)
    def f32_div(a, b):
        return float32(float32(a) / float32(b))

    @cuda.jit(device=True)
    def f64_add(a, b):
        return float64(float64(a) + float64(b))

    @cuda.jit(device=True)
    def f64_sub(a, b):
        return float64(float64(a) - float64(b))

    @cuda.jit(device=True)
    def f64_mul(a, b):
        return float64(float64(a) * float64(b))

    @cuda.jit(device=True)
    def f64_div(a, b):
        return float64(float64(a) / float64(b))

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def f32_add(a, b):
        return libdevice.fadd_rn(float32(a), float32(b))

    @cuda.jit(device=True)
    def f32_sub(a, b):
        return libdevice.fsub_rn(float32(a), float32(b))

    @cuda.jit(device=True)
    def f32_mul(a, b):
        return libdevice.fmul_rn(float32(a), float32(b))

    @cuda.jit(device=True)
    def f32_div(a, b):
        return libdevice.fdiv_rn(float32(a), float32(b))

    @cuda.jit(device=True)
    def f64_add(a, b):
        return libdevice.dadd_rn(float64(a), float64(b))

    @cuda.jit(device=True)
    def f64_sub(a, b):
        return libdevice.dadd_rn(float64(a), -float64(b))  # libdevice has no dsub_rn; negation is exact

    @cuda.jit(device=True)
    def f64_mul(a, b):
        return libdevice.dmul_rn(float64(a), float64(b))

    @cuda.jit(device=True)
    def f64_div(a, b):
        return libdevice.ddiv_rn(float64(a), float64(b))
