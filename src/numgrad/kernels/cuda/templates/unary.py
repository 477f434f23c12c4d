"""The CUDA kernel of one unary formula ``f``, over flat arrays (grid-stride loop)."""
from numba import cuda

from numgrad.kernels.scalar import neg as f  # the formula (codegen.py replaces this line)


@cuda.jit
def map_k(x, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = f(x[i])
