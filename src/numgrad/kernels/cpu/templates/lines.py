"""The CPU kernels of one line body ``f`` of ``kernels/lines.py``, the body inlined: ``each_k``
calls ``f(i, ...)`` for each row or value ``i`` in turn; ``each_line_k``, for a body whose
operands include ``n`` and ``inner``, calls ``f(base, ...)`` with the first element of each line
of the ``(outer, n, inner)`` view, line after line (no division per line). The count comes last:
with it first, LLVM made the scan's loop 20% slower."""
from numba import njit

from numgrad.kernels.lines import scan_line as f  # the formula (codegen.py replaces this line)


@njit(cache=True)
def each_k(OPERANDS, count):  # the operands (codegen.py names them)
    for i in range(count):
        f(i, OPERANDS)  # the operands (codegen.py names them)


@njit(cache=True)
def each_line_k(OPERANDS, outer):  # the operands (codegen.py names them)
    for o in range(outer):
        for i in range(inner):  # noqa: F821  (an operand of the bodies that take a line)
            f(o * n * inner + i, OPERANDS)  # noqa: F821  # the operands (codegen.py names them)
