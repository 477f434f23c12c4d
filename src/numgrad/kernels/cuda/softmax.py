"""log_softmax along the last dimension on CUDA, with the CPU module's interface
(``kernels/cpu/softmax.py`` has one fused kernel for each): here the composite of the generated
elementwise kernels and the reductions, with PyTorch's special values (each row shifted by its
max, so a row with NaN, +inf or only -inf gives NaN)."""
from __future__ import annotations

from ..formulas import Binary, Reduce, Unary
from .elementwise import binary, unary
from .reduction import reduce_dims, sum_dims


def log_softmax_last(a):
    last = (a.ndim - 1,)
    shifted = binary(Binary.SUB, a, reduce_dims(Reduce.MAX, a, last, True))
    total = sum_dims(unary(Unary.EXP, shifted), last, True)
    return binary(Binary.SUB, shifted, unary(Unary.LOG, total))


def log_softmax_backward_last(grad, out):
    """``grad - exp(out) * grad.sum(-1, keepdim=True)``."""
    total = sum_dims(grad, (grad.ndim - 1,), True)
    return binary(Binary.SUB, grad, binary(Binary.MUL, unary(Unary.EXP, out), total))
