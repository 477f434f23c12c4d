"""The scalar formulas that need a CUDA variant of their own (the table in ``kernels/formulas.py``
names them): rounding, on libdevice.

``math.floor``/``math.ceil`` return an integer in Python, and on Numba's CPU target; numba-cuda
0.30.4 types them as float → float instead, a difference a later release may remove, and there is
no ``math.rint`` at all. libdevice's ``floor``/``ceil``/``rint`` (``numba.cuda.libdevice``, one
binding per function of NVIDIA's libdevice, float32 with an ``f`` suffix) say what they compute in
their names and types, so these formulas do not depend on how numba-cuda types ``math``.

Numba's CUDA simulator runs device functions as Python, and its libdevice functions are stubs that
return None, so there these are NumPy's functions of the same names. What the simulator cannot
tell, the compile check (tests/test_cuda_compile.py) and a GPU run (benchmarks/gpu_check.py) do.
"""
from __future__ import annotations

import numpy as np
from numba import config, cuda
from numba.cuda import libdevice

if config.ENABLE_CUDASIM:

    @cuda.jit(device=True)
    def floor(x):
        return np.floor(x)

    @cuda.jit(device=True)
    def ceil(x):
        return np.ceil(x)

    @cuda.jit(device=True)
    def rint(x):
        return np.rint(x)

else:

    @cuda.jit(device=True)
    def floor(x):
        if isinstance(x, np.float32):
            return libdevice.floorf(x)
        return libdevice.floor(x)

    @cuda.jit(device=True)
    def ceil(x):
        if isinstance(x, np.float32):
            return libdevice.ceilf(x)
        return libdevice.ceil(x)

    @cuda.jit(device=True)
    def rint(x):
        """Round half to even, as ``torch.round``."""
        if isinstance(x, np.float32):
            return libdevice.rintf(x)
        return libdevice.rint(x)
