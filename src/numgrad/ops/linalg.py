"""Matrix products. The kernels are BLAS's (through NumPy): no JIT beats a tuned GEMM."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .elementwise import Mul
from .registry import Op, Sample, apply, register
from .shape import SqueezeInplace


@register
class Mm(Op):
    name, node = "mm", "MmBackward0"
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, a, b: a @ b, ((3, 4), (4, 5))),
        Sample(lambda m, a, b: m.mm(a, b), ((2, 3), (3, 1))),
        Sample(lambda m, a, b: m.matmul(a, b), ((1, 3), (3, 2))),
    )

    @staticmethod
    def forward(K, a, b):
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        # As PyTorch's mm_mat1/mat2_backward: an operand stored column-major (a transposed view,
        # e.g. the weight.t() of F.linear) gets its gradient column-major too, computed as the
        # transpose of a row-major product, so that the transpose back to the parameter's layout
        # is contiguous and the engine can adopt it as .grad without a copy.
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            grad_a = b.mm(grad.t()).t() if _column_major(a._data) else grad.mm(b.t())
        if need_b:
            grad_b = grad.t().mm(a).t() if _column_major(b._data) else a.t().mm(grad)
        return grad_a, grad_b


def _column_major(x) -> bool:
    """Whether a 2-D array is stored column by column (and not also row by row)."""
    return x.strides[0] < x.strides[1] and x.shape[0] > 1 and x.shape[1] > 1


@register
class Mv(Op):
    name, node = "mv", "MvBackward0"
    save_inputs = (0, 1)
    samples = (Sample(lambda m, a, v: a @ v, ((3, 4), (4,))), Sample(lambda m, a, v: m.mv(a, v), ((2, 5), (5,))))

    @staticmethod
    def forward(K, a, v):
        return np.matmul(a, v)

    @staticmethod
    def backward(ctx, grad):
        a, v = ctx.saved_tensors
        need_a, need_v = ctx.needs_input_grad
        grad_a = grad.unsqueeze(1) * v if need_a else None
        grad_v = a.t().mv(grad) if need_v else None
        return grad_a, grad_v


@register
class Dot(Op):
    name, node = "dot", "DotBackward0"
    save_inputs = (0, 1)
    samples = (Sample(lambda m, a, b: a @ b, ((4,), (4,))), Sample(lambda m, a, b: m.dot(a, b), ((6,), (6,))))

    @staticmethod
    def forward(K, a, b):
        return np.asarray(np.dot(a, b))

    backward = Mul.backward  # d(a·b) = (grad * b, grad * a), with a 0-d grad


@register
class Bmm(Op):
    name, node = "bmm", "BmmBackward0"
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, a, b: m.bmm(a, b), ((2, 3, 4), (2, 4, 5))),
        Sample(lambda m, a, b: a @ b, ((2, 3, 4), (2, 4, 5))),
        Sample(lambda m, a, b: m.matmul(a, b), ((2, 1, 3, 4), (3, 4, 2))),
        Sample(lambda m, a, b: a @ b, ((2, 3, 4), (4, 5))),
        Sample(lambda m, a, v: a @ v, ((2, 3, 4), (4,))),
        Sample(lambda m, v, b: v @ b, ((4,), (2, 4, 3))),
    )

    @staticmethod
    def forward(K, a, b):
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (grad.bmm(b.mT) if need_a else None), (a.mT.bmm(grad) if need_b else None)


def _check_float_pair(a: Tensor, b: Tensor, what: str):
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {a._data.dtype.name} != "
            f"{b._data.dtype.name}" if what == "mm" else
            f"{what}: expected both tensors to have the same dtype, but got {a._data.dtype.name} "
            f"and {b._data.dtype.name}"
        )


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of two 2-D tensors."""
    a, b = input._data, mat2._data
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"{'self' if a.ndim != 2 else 'mat2'} must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )
    _check_float_pair(input, mat2, "mm")
    return apply(Mm, (input, mat2), (a, b))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    a, v = input._data, vec._data
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec "
            f"({v.shape[0]})"
        )
    _check_float_pair(input, vec, "mv")
    return apply(Mv, (input, vec), (a, v))


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The dot product of two 1-D tensors."""
    a, b = input._data, tensor._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors"
        )
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            "inconsistent tensor size, expected tensor [{0}] and src [{1}] to have the same number "
            "of elements, but got {0} and {1} elements respectively".format(a.shape[0], b.shape[0])
        )
    _check_float_pair(input, tensor, "dot")
    return apply(Dot, (input, tensor), (a, b))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size."""
    a, b = input._data, mat2._data
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if a.ndim != 3 else "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    _check_float_pair(input, mat2, "bmm")
    return apply(Bmm, (input, mat2), (a, b))


def _batched(input: Tensor, other: Tensor) -> Tensor:
    """matmul with batch dimensions: broadcast them, fold them into one, ``bmm``, unfold."""
    from .shape import UnsafeView

    vector_left = input._data.ndim == 1
    vector_right = other._data.ndim == 1
    if vector_left:
        input = input.unsqueeze(0)
    if vector_right:
        other = other.unsqueeze(1)
    (n, k), (k2, m) = input._data.shape[-2:], other._data.shape[-2:]
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    batch = _broadcast_batch(input._data.shape[:-2], other._data.shape[:-2])
    a = input.expand(batch + (n, k)).reshape(-1, n, k)
    b = other.expand(batch + (k, m)).reshape(-1, k, m)
    out = bmm(a, b)
    shape = batch + ((n,) if not vector_left else ()) + ((m,) if not vector_right else ())
    return apply(UnsafeView, (out,), (out._data,), shape=shape)


def _broadcast_batch(a: tuple, b: tuple) -> tuple:
    from ._promote import broadcast_shapes

    return tuple(broadcast_shapes(a, b))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product, by the dimensions of the operands as PyTorch: dot, mv, mm, and a 1-D
    left operand as a row vector."""
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        out = mm(input.unsqueeze(0), other)
        return apply(SqueezeInplace, (out,), (out._data,), dim=0)
    if da == 2 and db == 2:
        return mm(input, other)
    return _batched(input, other)

# What numgrad exports as functions, and what Tensor gets as methods.
__all__ = ["matmul", "mm", "mv", "dot", "bmm"]
METHODS = ("matmul", "mm", "mv", "dot", "bmm")
