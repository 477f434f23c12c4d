"""The line bodies of ``kernels/lines.py`` as CUDA device functions, for the grid-stride loop of
``cuda/templates/lines.py`` (the kernels that ``scan.py``, ``predicates.py`` and ``counting.py``
launch): one thread per line runs the CPU's body.

Each is ``cuda.jit(device=True)`` of the body's Python function, so that the GPU compiles the
formula the CPU inlines, and numba-cuda's simulator runs it as Python (an ``njit`` function called
from a simulated kernel would be handed the simulator's arrays, which it cannot unbox).
"""
from __future__ import annotations

from numba import cuda

from .. import lines as _lines


def _device(body):
    return cuda.jit(device=True)(body.py_func)


line_base = _device(_lines.line_base)
scan_line = _device(_lines.scan_line)
cumprod_grad_line = _device(_lines.cumprod_grad_line)
cum_extreme_line = _device(_lines.cum_extreme_line)
logcumsumexp_line = _device(_lines.logcumsumexp_line)
mode_row = _device(_lines.mode_row)
search_one = _device(_lines.search_one)
