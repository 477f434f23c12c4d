"""The CUDA kernels of one line body ``f`` of ``kernels/lines.py`` (its device function,
``cuda/lines.py``), one thread per row or line (grid-stride loops): ``each_k`` calls ``f(i, ...)``
for each of ``count`` rows or values; ``each_line_k``, for a body whose operands include ``n`` and
``inner``, calls ``f(base, ...)`` with the first element of each of ``count`` lines of the
``(outer, n, inner)`` view."""
from numba import cuda

from numgrad.kernels.cuda.lines import line_base
from numgrad.kernels.cuda.lines import scan_line as f  # the formula (codegen.py replaces this line)


@cuda.jit
def each_k(OPERANDS, count):  # the operands (codegen.py names them)
    for i in range(cuda.grid(1), count, cuda.gridsize(1)):
        f(i, OPERANDS)  # the operands (codegen.py names them)


@cuda.jit
def each_line_k(OPERANDS, count):  # the operands (codegen.py names them)
    for line in range(cuda.grid(1), count, cuda.gridsize(1)):
        f(line_base(line, n, inner), OPERANDS)  # noqa: F821  # the operands (codegen.py names them)
