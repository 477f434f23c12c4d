"""The CPU kernels of one unary formula ``f``: ``map_1d`` over contiguous arrays, and the same
without the GIL for the parts of large ones, which threads share."""
from numba import njit

from numgrad.kernels.scalar import neg as f  # the formula (codegen.py replaces this line)


@njit(cache=True, error_model="numpy")
def map_1d(x, out):
    for i in range(out.size):
        out[i] = f(x[i])


# The same loop for a part of a large array, called from numgrad's worker threads
# (``_workers``), one contiguous part each, without the GIL. Each part is a slice whose loop runs
# from 0: a loop over ``range(start, stop)`` indexes with a possibly negative number, which Numba
# wraps around, and that keeps LLVM from vectorising it.
@njit(cache=True, error_model="numpy", nogil=True)
def map_1d_nogil(x, out):
    for i in range(out.size):
        out[i] = f(x[i])
