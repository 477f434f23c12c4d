"""The CUDA kernels of one binary formula ``f(a, b)`` (grid-stride loops): two flat arrays of one
shape (``zip_k``), a flat array and a number passed by value (``zip_scalar_k``), operands of any
layout read through a meta array (``zip_bcast_k``, see ``layout.py``), and in place into a
strided ``out`` (``zip_into_k``)."""
from numba import cuda

from numgrad.kernels.cuda.layout import _offset
from numgrad.kernels.scalar import add as f  # the formula (codegen.py replaces this line)


@cuda.jit
def zip_k(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = f(a[i], b[i])


@cuda.jit
def zip_scalar_k(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = f(a[i], b)


@cuda.jit
def zip_bcast_k(a, b, meta, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = f(a[_offset(i, meta, 0)], b[_offset(i, meta, 1)])


@cuda.jit
def zip_into_k(out, b, meta, n):
    """``out = f(out, b)`` with ``out`` (operand 0) and ``b`` (operand 1) read through ``meta``."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        o = _offset(i, meta, 0)
        out[o] = f(out[o], b[_offset(i, meta, 1)])
