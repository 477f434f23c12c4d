"""Products beyond ``matmul`` with PyTorch's names, node names and errors: ``baddbmm`` and
``addmv`` (nodes of their own, in place too), ``block_diag``; and those composed as PyTorch
composes them, so their nodes are PyTorch's: ``tensordot`` (ViewBackward0 over MmBackward0),
``kron`` (UnsafeViewBackward0), ``cartesian_prod`` and ``combinations`` (StackBackward0).
"""
from __future__ import annotations

import builtins
import itertools
import math

import numpy as np

from .._dtype import promote_types, torch_name
from ..tensor import Tensor, _wrap_dim
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register
from ._common import _inplace, _ops, _with_out
from .._dtype import c_name
from .._dtype import get_default_dtype
from .shape import UnsafeView


def _tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """The sum of products over the last ``dims`` dimensions of ``a`` and the first of ``b``,
    or over the pairs of dimensions ``dims = (dims_a, dims_b)``."""
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        k = int(dims)
        if k < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={k}")
        if k > na or k > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={k}")
        dims_a, dims_b = list(range(na - k, na)), list(range(k))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, (int, np.integer)) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, (int, np.integer)) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    dims_a = [_wrap_dim(int(x), na) for x in dims_a]
    dims_b = [_wrap_dim(int(x), nb) for x in dims_b]
    for x, y in zip(dims_a, dims_b):
        sa, sb = a._data.shape[x], b._data.shape[y]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in "
                               f"dim {x - na if isinstance(dims, int) else x} and second has size "
                               f"{sb} in dim {y}")
    ops = _ops()
    for x, y in zip(dims_a, dims_b):  # a size 1 against a size n: the other side summed, as ATen
        sa, sb = a._data.shape[x], b._data.shape[y]  # (in its dtype: an integer sum is int64)
        if sa == 1 and sb != 1:
            b = b.sum(y, keepdim=True, dtype=b.dtype)
        elif sb == 1 and sa != 1:
            a = a.sum(x, keepdim=True, dtype=a.dtype)
    free_a = [x for x in range(na) if x not in dims_a]
    free_b = [y for y in range(nb) if y not in dims_b]
    shape_a = [a._data.shape[x] for x in free_a]
    shape_b = [b._data.shape[y] for y in free_b]
    csize = math.prod(a._data.shape[x] for x in dims_a)
    ta = ops.permute(a, free_a + dims_a).reshape(math.prod(shape_a), csize)
    tb = ops.permute(b, dims_b + free_b).reshape(csize, math.prod(shape_b))
    return ops.mm(ta, tb).reshape(shape_a + shape_b)


tensordot = export(
    _with_out(_tensordot, "tensordot"),
    "tensordot")  # (not a Tensor method: out= as PyTorch's)


@export(method=True)
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: blocks ``input[i, j] * other`` (dimensions padded on the left to
    the larger number of either)."""
    nd = builtins.max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + tuple(input._data.shape)
    sb = (1,) * (nd - other._data.ndim) + tuple(other._data.shape)
    a = input.reshape(tuple(itertools.chain.from_iterable((n, 1) for n in sa)))
    b = other.reshape(tuple(itertools.chain.from_iterable((1, n) for n in sb)))
    prod = a * b

    shape = tuple(x * y for x, y in zip(sa, sb))
    return apply(UnsafeView, (prod,), (prod._data,), shape=shape)


def _check_vector(t: Tensor, what="Expect a 1D vector"):
    if t._data.ndim != 1:
        raise RuntimeError(f"{what}, but got shape {list(t._data.shape)}")


@export
def cartesian_prod(*tensors) -> Tensor:
    """The Cartesian product of 1-D tensors: one row per combination (the 1-D tensor itself for
    one tensor)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        _check_vector(t)
    ops = _ops()
    if len(tensors) == 1:
        return tensors[0]
    grids = ops.meshgrid(*tensors, indexing="ij")
    return ops.stack([g.flatten() for g in grids], 1)


@export
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the 1-D ``input``'s elements, one per row, in
    lexicographic order of positions (``with_replacement``: repeats allowed); as PyTorch, the
    masked elements of an ``r``-fold meshgrid, stacked."""
    _check_vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    K = kernels_for((input,))
    if r == 0:
        return Tensor._wrap(K.zeros((0,), input._data.dtype))
    n = input._data.shape[0]
    ops = _ops()
    grids = ops.meshgrid(*([input] * r), indexing="ij")
    at = np.indices((n,) * r)
    keep = np.ones((n,) * r, bool)
    for k in range(r - 1):
        keep &= (at[k] <= at[k + 1]) if with_replacement else (at[k] < at[k + 1])
    mask = Tensor._wrap(K.upload(keep))
    return ops.stack([ops.masked_select(g, mask) for g in grids], 1)


# ------------------------------------------------------------------ products
def _number(value, dtype):
    return np.array(value).astype(dtype)[()]


@register
class Baddbmm(Op):
    name, node = "baddbmm", "BaddbmmBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, c, a, b: m.baddbmm(c, a, b), ((2, 3, 5), (2, 3, 4), (2, 4, 5))),
        Sample(lambda m, c, a, b: c.baddbmm(a, b.transpose(1, 2), beta=0.5, alpha=-2),
               ((3, 1), (2, 3, 4), (2, 5, 4))),
    )

    @staticmethod
    def forward(K, c, a, b, *, beta, alpha):
        prod = K.matmul(a, b)
        if alpha != 1:
            prod = K.binary(K.MUL, prod, _number(alpha, prod.dtype))
        if beta == 0:
            return prod
        base = c if beta == 1 else K.binary(K.MUL, c, _number(beta, c.dtype))
        return K.binary(K.ADD, base, prod) if tuple(base.shape) == tuple(prod.shape) else \
            K.binary(K.ADD, K.broadcast_copy(base, tuple(prod.shape), prod.dtype), prod)

    save_inputs = (1, 2)
    save_only_for = {1: 2, 2: 1}  # noqa: RUF012

    complex_ok = True

    @staticmethod
    def backward(ctx, grad):
        if grad._data.dtype.kind == "c":
            return _ops().elementwise.holomorphic_backward(Baddbmm._backward, ctx, grad)
        return Baddbmm._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_c, need_a, need_b = ctx.needs_input_grad
        beta, alpha = ctx.params["beta"], ctx.params["alpha"]
        ops = _ops()
        g_c = (grad * beta if beta != 1 else grad) if need_c else None
        g_a = ops.bmm(grad, b.transpose(1, 2)) if need_a else None
        g_b = ops.bmm(a.transpose(1, 2), grad) if need_b else None
        if alpha != 1:
            g_a = g_a * alpha if g_a is not None else None
            g_b = g_b * alpha if g_b is not None else None
        return g_c, g_a, g_b


@export(method=True)
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices (``input``
    broadcast; ignored, NaN included, when ``beta`` is 0)."""
    kernels_for((input, batch1, batch2), Baddbmm)  # (PyTorch's error for two devices)
    kinds = [t._data.dtype for t in (input, batch1, batch2)]
    if len(set(kinds)) > 1:
        raise RuntimeError(f"Input dtypes must be the same, got: input {c_name(kinds[0])}, "
                           f"batch1: {c_name(kinds[1])}, batch2: {c_name(kinds[2])}")
    if kinds[0] == np.bool_:
        raise NotImplementedError("\"baddbmm\" not implemented for 'Bool'")
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if not t._data.ndim:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if t._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (bs, n, k), (bs2, k2, p) = batch1._data.shape, batch2._data.shape
    if (bs2, k2) != (bs, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{bs}, {k}] but got: [{bs2}, {k2}].")
    _ops().expand(input, (bs, n, p)) if input._data.ndim <= 3 else None  # PyTorch's shape errors
    return apply(Baddbmm, (input, batch1, batch2), (input._data, batch1._data, batch2._data),
                 beta=beta, alpha=alpha)


@register
class Addmv(Op):
    name, node = "addmv", "AddmvBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, c, a, v: m.addmv(c, a, v), ((3,), (3, 4), (4,))),
        Sample(lambda m, c, a, v: c.addmv(a.t(), v, beta=2, alpha=0.5), ((1,), (4, 3), (4,))),
    )
    save_inputs = (1, 2)
    save_only_for = {1: 2, 2: 1}  # noqa: RUF012

    complex_ok = True

    @staticmethod
    def forward(K, c, a, v, *, beta, alpha):
        return Baddbmm.forward(K, c, a, v, beta=beta, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        if grad._data.dtype.kind == "c":
            return _ops().elementwise.holomorphic_backward(Addmv._backward, ctx, grad)
        return Addmv._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad):
        a, v = ctx.saved_tensors
        need_c, need_a, need_v = ctx.needs_input_grad
        beta, alpha = ctx.params["beta"], ctx.params["alpha"]
        ops = _ops()
        g_c = (grad * beta if beta != 1 else grad) if need_c else None
        g_a = ops.outer(grad, v) if need_a else None
        g_v = ops.mv(a.t(), grad) if need_v else None
        if alpha != 1:
            g_a = g_a * alpha if g_a is not None else None
            g_v = g_v * alpha if g_v is not None else None
        return g_c, g_a, g_v


@export(method=True)
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` (``input`` broadcast)."""
    kernels_for((input, mat, vec), Addmv)  # (PyTorch's error for two devices)
    if mat._data.ndim != 2 or vec._data.ndim != 1 or input._data.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, "
                           f"{mat._data.ndim}, {vec._data.ndim}")
    n, m = mat._data.shape
    if vec._data.shape[0] != m or (input._data.ndim and input._data.shape[0] not in (1, n)):
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0] if input._data.ndim else 1}), "
                           f"mat ({n}x{m}), vec ({vec._data.shape[0]})")
    kinds = [t._data.dtype for t in (input, mat, vec)]
    if len(set(kinds)) > 1:
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{torch_name(kinds[0])}, {torch_name(kinds[1])}, and "
                           f"{torch_name(kinds[2])}")
    if kinds[0] == np.bool_:
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")
    return apply(Addmv, (input, mat, vec), (input._data, mat._data, vec._data), beta=beta,
                 alpha=alpha)


baddbmm_ = export(_inplace(baddbmm), "baddbmm_", function=False, method=True)


addmv_ = export(_inplace(addmv), "addmv_", method=True)


@register
class BlockDiag(Op):
    name, node = "block_diag", "BlockDiagBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: m.block_diag(a, b), ((2, 3), (3, 2))),
        Sample(lambda m, a, b, c: m.block_diag(a, b.t(), c), ((), (3, 2), (4,))),
    )

    @staticmethod
    def forward(K, *arrays, shapes, dtype):
        rows = builtins.sum(s[0] for s in shapes)
        cols = builtins.sum(s[1] for s in shapes)
        out = K.zeros((rows, cols), dtype)
        r = c = 0
        for a, (h, w) in zip(arrays, shapes):
            if h and w:
                block = K.reshape_view(a, (h, w)) if a.ndim < 2 else a
                if block.dtype != dtype:
                    block = K.cast(block, dtype)
                K.assign(K.view_index(out, (slice(r, r + h), slice(c, c + w))), block)
            r += h
            c += w
        return out

    @staticmethod
    def backward(ctx, grad):
        ops = _ops()
        grads, r, c = [], 0, 0
        for need, (h, w), shape in zip(ctx.needs_input_grad, ctx.params["shapes"],
                                       ctx.input_shapes):
            if need:
                g = ops.narrow(ops.narrow(grad, 0, r, h), 1, c, w)
                grads.append(g.reshape(shape) if len(shape) < 2 else g)
            else:
                grads.append(None)
            r += h
            c += w
        return tuple(grads)


@export
def block_diag(*tensors) -> Tensor:
    """The tensors (0-d, 1-d rows or 2-d) as the blocks of a block-diagonal matrix, zeros
    elsewhere; the dtype is their promoted one."""
    shapes = []
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if nd > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {nd} dimensions")
        shape = t._data.shape
        shapes.append((1, 1) if nd == 0 else (1, shape[0]) if nd == 1 else tuple(shape))
    if not tensors:
        return Tensor._wrap(kernels_for(()).zeros((1, 0), get_default_dtype().np))
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = promote_types(dt, t.dtype)
    return apply(BlockDiag, tuple(tensors), tuple(t._data for t in tensors), shapes=tuple(shapes),
                 dtype=dt.np)
