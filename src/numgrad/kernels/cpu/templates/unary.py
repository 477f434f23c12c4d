"""The CPU kernels of one unary formula ``f``: ``map_1d`` over contiguous arrays, and the same
split over threads for large ones."""
from numba import njit, prange

from numgrad.kernels.scalar import neg as f  # the formula (codegen.py replaces this line)


@njit(cache=True, error_model="numpy")
def map_1d(x, out):
    for i in range(out.size):
        out[i] = f(x[i])


# One contiguous chunk per thread. Each chunk is sliced and its loop runs from 0: a loop over
# ``range(start, stop)`` indexes with a possibly negative number, which Numba wraps around, and
# that keeps LLVM from vectorising it (it then ran slower on two threads than on one).
@njit(cache=True, error_model="numpy", parallel=True)
def map_1d_parallel(x, out, chunks):
    n = out.size
    for c in prange(chunks):
        start, stop = c * n // chunks, (c + 1) * n // chunks
        xs, part = x[start:stop], out[start:stop]
        for i in range(part.size):
            part[i] = f(xs[i])
