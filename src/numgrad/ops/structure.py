"""Structure ops: triangles (``tril``, ``triu``), diagonals (``diag``, ``diagonal``, ``trace``,
``diag_embed``), sliding windows (``Tensor.unfold``), ``flip``/``roll``, and what PyTorch composes of other ops (``outer``,
``movedim``, ``swapaxes``, ``unflatten``, ``repeat_interleave``, ``tile``, the ``*stack`` family,
``meshgrid``, ``broadcast_tensors``, ``take_along_dim``), with PyTorch's node names.

The ops with a node of their own compute through ``K.structure`` (``kernels/*/structure.py``);
``diagonal`` and ``unfold`` are views, as PyTorch's. The composed ones are made of the recorded ops PyTorch uses,
so their nodes (``CatBackward0`` for ``hstack``, ``ExpandBackward0`` for ``meshgrid`` …) are
PyTorch's too.
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from ..autograd.graph import keep_given
from ..creation import arange
from ..tensor import Tensor, _wrap_dim
from ._names import Out, alias, export
from ._promote import broadcast_shapes
from .gather import ADD as _SCATTER_ADD
from .index_writes import _wide
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from .._dtype import from_numpy_dtype
from .inplace import _write
from ..kernels.cpu.structure import diagonal_geometry
from .shape import cat


def _int_arg(fn: str, name: str, position: int, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return int(value)


def _tensor_arg(fn: str, value, name: str = "input", position: int = 1) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")
    return value


def _dims_of(args, dims=None) -> tuple:
    """Dimensions given as ints, one sequence, or ``dims=``."""
    if dims is not None:
        args = (dims,)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(d) for d in args)


# ------------------------------------------------------------------ triangles
class _Tri(Op):
    jvp = _jvp.linear
    on_cuda = True
    upper = False

    @classmethod
    def forward(cls, K, a, *, diagonal):
        return K.structure.tri(a, diagonal, cls.upper)


@register
class Tril(_Tri):
    name, node = "tril", "TrilBackward0"
    complex_ok = True
    samples = (Sample(lambda m, a: a.tril(), ((3, 4),)),
               Sample(lambda m, a: m.tril(a, -1), ((2, 3, 3),)))

    @staticmethod
    def backward(ctx, grad):
        return (tril(grad, ctx.params["diagonal"]),)


@register
class Triu(_Tri):
    name, node = "triu", "TriuBackward0"
    complex_ok = True
    upper = True
    samples = (Sample(lambda m, a: a.triu(1), ((4, 3),)),
               Sample(lambda m, a: m.triu(a.t(), diagonal=-1), ((3, 4),)))

    @staticmethod
    def backward(ctx, grad):
        return (triu(grad, ctx.params["diagonal"]),)


def _tri(op, name: str, input: Tensor, diagonal) -> Tensor:
    _tensor_arg(name, input)
    k = _int_arg(name, "diagonal", 2, diagonal)
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return apply(op, (input,), (input._data,), diagonal=k)


@export(method=True, out=Out(same_dtype=True))
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dimensions (from diagonal ``diagonal``), zeros above."""
    return _tri(Tril, "tril", input, diagonal)


@export(method=True, out=Out(same_dtype=True))
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dimensions (from diagonal ``diagonal``), zeros below."""
    return _tri(Triu, "triu", input, diagonal)


@export(function=False, method=True)
def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """``tril`` in place."""
    _tri(Tril, "tril", input.detach(), diagonal)  # (the checks, before anything is written)
    return _write(input, tril, diagonal, saves_self=False)


@export(function=False, method=True)
def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """``triu`` in place."""
    _tri(Triu, "triu", input.detach(), diagonal)
    return _write(input, triu, diagonal, saves_self=False)


# ------------------------------------------------------------------ diagonals
@register
class Diagonal(Op):
    name, node = "diagonal", "DiagonalBackward0"
    complex_ok = True
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.diagonal(), ((3, 4),)),
               Sample(lambda m, a: m.diagonal(a, -1, 2, 0), ((3, 2, 4),)),
               Sample(lambda m, a: a.t().diagonal(1), ((4, 3),)))

    @staticmethod
    def forward(K, a, *, offset, dim1, dim2):
        return K.structure.diagonal(a, offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (diagonal_backward(grad, ctx.input_shapes[0], p["offset"], p["dim1"], p["dim2"]),)


@register
class DiagonalCopy(Diagonal):
    """``diag`` of a matrix (``diagonal_copy``): the diagonal in new memory."""

    name, node = "diagonal_copy", "DiagonalBackward0_copy"
    is_view = False
    samples = (Sample(lambda m, a: m.diag(a, 1), ((3, 4),)),
               Sample(lambda m, a: m.diagonal_copy(a, 0, 1, 0), ((2, 3),)))

    @staticmethod
    def forward(K, a, *, offset, dim1, dim2):
        return K.copy(K.structure.diagonal(a, offset, dim1, dim2))


@register
class DiagonalBackward(Op):
    """ATen's ``diagonal_backward``: zeros of the input's shape with the gradient on the
    diagonal."""

    name, node = "diagonal_backward", "DiagonalBackwardBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, g: m.ops.diagonal_backward(g, [3, 4], 1, 0, 1), ((3,),)),)

    @staticmethod
    def forward(K, g, *, input_sizes, offset, dim1, dim2):
        return K.structure.embed_diagonal(g, input_sizes, offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (diagonal(grad, p["offset"], p["dim1"], p["dim2"]),)


@register
class Unfold(Op):
    """``x.unfold(dim, size, step)``: the windows of ``size`` elements every ``step`` along
    ``dim`` (a view; the window's elements in a new last dimension)."""

    complex_ok = True
    name, node = "unfold", "UnfoldBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.unfold(1, 2, 1), ((3, 4),)),
               Sample(lambda m, a: a.unfold(0, 3, 2), ((7, 2),)),
               Sample(lambda m, a: a.t().unfold(-1, 2, 3), ((8, 3),)),
               Sample(lambda m, a: a.unfold(0, 1, 1), ((),)))

    @staticmethod
    def forward(K, a, *, dim, size, step):
        return K.structure.unfold(a, dim, size, step)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (unfold_backward(grad, ctx.input_shapes[0], p["dim"], p["size"], p["step"]),)


@register
class UnfoldBackward(Op):
    """ATen's ``unfold_backward``: zeros of the input's shape with each window's gradient added
    where the window lies (overlapping windows add up), a scatter-add along ``dim``."""

    complex_ok = True
    name, node = "unfold_backward", "UnfoldBackwardBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, g: m.ops.unfold_backward(g, [3, 5], 1, 3, 1), ((3, 3, 3),)),
               Sample(lambda m, g: m.ops.unfold_backward(g, [7, 2], 0, 2, 3), ((2, 2, 2),)),
               Sample(lambda m, g: m.ops.unfold_backward(g, [], 0, 1, 1), ((1,),)))

    @staticmethod
    def forward(K, g, *, input_sizes, dim, size, step, positions):
        if not input_sizes:  # (a 0-d input's one window of its one element)
            return K.copy(K.reshape_view(g, ()))
        # Each window's elements beside its index along ``dim`` ((…, count, size, …) made one
        # dimension), added at their ``positions`` (``k * step + j``) into zeros: a scatter.
        nd = len(input_sizes)
        src = K.ascontiguous(K.permute(g, tuple(range(dim + 1)) + (nd,) +
                                       tuple(range(dim + 1, nd))))
        src = K.reshape_view(src, input_sizes[:dim] + (positions.size,) + input_sizes[dim + 1:])
        index = _wide(K, positions, dim, tuple(src.shape))
        return K.scatter_dim(K.zeros(input_sizes, g.dtype), dim, index, src, _SCATTER_ADD)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (unfold(grad, p["dim"], p["size"], p["step"]),)


@export(function=False, method=True)
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The windows of ``size`` elements every ``step`` along ``dimension``, as a view: that
    dimension counts the windows, a new last one holds each window's elements."""
    shape = input._data.shape
    dim = _wrap_dim(dimension, len(shape))
    extent = shape[dim] if shape else 1
    if size > extent:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {extent} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return apply(Unfold, (input,), (input._data,), dim=dim, size=int(size), step=int(step))


@export(aten=True)
def unfold_backward(grad_in: Tensor, input_sizes, dim: int, size: int, step: int) -> Tensor:
    """ATen's ``unfold_backward``: the gradient of ``unfold`` for an input of ``input_sizes``."""
    sizes = tuple(int(s) for s in input_sizes)
    dim, size, step = _wrap_dim(int(dim), len(sizes)), int(size), int(step)
    count = grad_in._data.shape[dim] if sizes else 1
    device = grad_in.device
    positions = (arange(0, count * step, step, device=device).unsqueeze(1)
                 + arange(size, device=device)).reshape(-1)  # (of element j of window k)
    return apply(UnfoldBackward, (grad_in,), (grad_in._data,), input_sizes=sizes, dim=dim,
                 size=size, step=step, positions=positions._data)


@register
class DiagEmbed(Op):
    name, node = "diag_embed", "DiagEmbedBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: m.diag_embed(a), ((2, 3),)),
               Sample(lambda m, a: m.diag(a, -1), ((3,),)),
               Sample(lambda m, a: a.diag_embed(1, 2, 0), ((2, 2),)))

    @staticmethod
    def forward(K, a, *, shape, offset, dim1, dim2):
        return K.structure.embed_diagonal(a, shape, offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (diagonal(grad, p["offset"], p["dim1"], p["dim2"]),)


@register
class Trace(Op):
    name, node = "trace", "TraceBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: a.trace(), ((3, 4),)),
               Sample(lambda m, a: m.trace(a.t()), ((2, 3),)))

    @staticmethod
    def forward(K, a):
        return K.sum_dims(K.structure.diagonal(a, 0, 0, 1), (0,), False)

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        n = builtins.min(shape)
        return (diagonal_backward(grad.expand(n), shape, 0, 0, 1),)


def _diagonal_dims(input: Tensor, dim1: int, dim2: int) -> tuple:
    nd = input._data.ndim
    d1, d2 = _wrap_dim(int(dim1), nd), _wrap_dim(int(dim2), nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


@export(method=True)
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``offset`` of dimensions ``dim1`` and ``dim2``, appended as the last
    dimension (a view)."""
    _tensor_arg("diagonal", input)
    d1, d2 = _diagonal_dims(input, dim1, dim2)
    out = apply(Diagonal, (input,), (input._data,), offset=_int_arg("diagonal", "offset", 2,
                                                                      offset), dim1=d1, dim2=d2)
    if d1 != dim1 or d2 != dim2:  # (PyTorch's node shows the dims as given)
        keep_given(out, dim1=int(dim1), dim2=int(dim2))
    return out


@export
def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``diagonal`` in new memory."""
    _tensor_arg("diagonal_copy", input)
    d1, d2 = _diagonal_dims(input, dim1, dim2)
    return apply(DiagonalCopy, (input,), (input._data,), offset=int(offset), dim1=d1, dim2=d2)


@export(aten=True)
def diagonal_backward(grad_output: Tensor, input_sizes, offset: int, dim1: int,
                      dim2: int) -> Tensor:
    """ATen's ``diagonal_backward``: zeros of ``input_sizes`` with ``grad_output`` on the
    diagonal ``offset`` of ``dim1`` and ``dim2``."""
    sizes = tuple(int(s) for s in input_sizes)
    d1, d2 = _wrap_dim(int(dim1), len(sizes)), _wrap_dim(int(dim2), len(sizes))

    view = diagonal_geometry(sizes, (0,) * len(sizes), int(offset), d1, d2)[0]
    given = tuple(grad_output._data.shape)
    if broadcast_shapes(view, given) != view:  # (ATen's copy_ into the diagonal)
        raise RuntimeError(f"output with shape {list(view)} doesn't match the broadcast shape "
                           f"{list(broadcast_shapes(view, given))}")
    return apply(DiagonalBackward, (grad_output,), (grad_output._data,), input_sizes=sizes,
                 offset=int(offset), dim1=d1, dim2=d2)


@export(method=True)
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonals ``offset`` of ``dim1`` and ``dim2`` hold the last dimension of
    ``input`` (zeros elsewhere)."""
    _tensor_arg("diag_embed", input)
    shape = tuple(input._data.shape)
    nd = len(shape) + 1
    d1, d2 = _wrap_dim(int(dim1), nd), _wrap_dim(int(dim2), nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (shape[-1] if shape else 1) + abs(int(offset))
    rest = iter(shape[:-1])
    out = tuple(n if d in (d1, d2) else next(rest) for d in range(nd))
    data = input._data if shape else kernels_for((input,)).reshape_view(input._data, (1,))
    return apply(DiagEmbed, (input,), (data,), shape=out, offset=int(offset), dim1=d1, dim2=d2)


@export(method=True, out=Out(same_dtype=True))
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector's square matrix with it on diagonal ``diagonal``, or a matrix's diagonal
    ``diagonal`` (a copy)."""
    _tensor_arg("diag", input)
    k = _int_arg("diag", "diagonal", 2, diagonal)
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, k, 0, 1)
    if nd == 2:
        return diagonal_copy(input, k, 0, 1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


@export(method=True)
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal (integers summed as int64)."""
    _tensor_arg("trace", input)
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    kind = input._data.dtype
    if kind == np.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if kind.kind not in "fcV" and kind != np.int64:  # ("V": bfloat16, a float)
        input = input.to(np.int64)
    return apply(Trace, (input,), (input._data,))


# ------------------------------------------------------------------ flip and roll
@register
class Flip(Op):
    name, node = "flip", "FlipBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: a.flip(0), ((3, 4),)),
               Sample(lambda m, a: m.flip(a.transpose(0, 2), (0, -1)), ((2, 3, 4),)),
               Sample(lambda m, a: m.fliplr(a), ((2, 3),)))

    @staticmethod
    def forward(K, a, *, dims):
        return K.structure.remap(a, tuple(d in dims for d in range(a.ndim)), (0,) * a.ndim)

    @staticmethod
    def backward(ctx, grad):
        return (flip(grad, ctx.params["dims"]),)


@register
class Roll(Op):
    name, node = "roll", "RollBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: a.roll(1), ((3, 4),)),
               Sample(lambda m, a: m.roll(a, (-1, 5), (0, -1)), ((3, 4),)),
               Sample(lambda m, a: a.t().roll(2, 0), ((3, 4),)))

    @staticmethod
    def forward(K, a, *, shifts, dims):
        if not a.size:
            return K.copy(a)
        if dims is None:  # (the flattened tensor, rolled, in the input's shape)
            flat = K.reshape_view(K.ascontiguous(a), (a.size,))
            out = K.structure.remap(flat, (False,), (shifts[0] % a.size,))
            return K.reshape_view(out, tuple(a.shape))
        total = [0] * a.ndim
        for s, d in zip(shifts, dims):
            total[d] += s
        return K.structure.remap(a, (False,) * a.ndim,
                                 tuple(t % n for t, n in zip(total, tuple(a.shape))))

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (roll(grad, tuple(-s for s in p["shifts"]), p["dims"]),)


@export(method=True)
def flip(input: Tensor, *args, dims=None) -> Tensor:
    """The elements in reverse order along ``dims`` (a copy)."""
    _tensor_arg("flip", input)
    if not args and dims is None:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    nd = input._data.ndim
    given = _dims_of(args, dims)
    dims = tuple(_wrap_dim(d, nd) for d in given)
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    out = apply(Flip, (input,), (input._data,), dims=dims)
    if given != dims:  # (PyTorch's node shows the dims as given)
        keep_given(out, dims=given)
    return out


@export(method=True)
def fliplr(input: Tensor) -> Tensor:
    """The columns in reverse order (``flip(input, 1)``)."""
    _tensor_arg("fliplr", input)
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


@export(method=True)
def flipud(input: Tensor) -> Tensor:
    """The rows in reverse order (``flip(input, 0)``)."""
    _tensor_arg("flipud", input)
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


@export(method=True)
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """The elements shifted by ``shifts`` along ``dims``, wrapping around; without ``dims``, the
    flattened tensor's, in the input's shape."""
    _tensor_arg("roll", input)
    shifts = (int(shifts),) if isinstance(shifts, (int, np.integer)) else \
        tuple(int(s) for s in shifts)
    if dims is not None:
        dims = (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(int(d) for d in dims)
        if not dims:
            dims = None
    if not shifts:
        raise RuntimeError("`shifts` required")
    nd = input._data.ndim
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
    else:
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:{len(dims)}")
        if not nd:
            raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
        given, dims = dims, tuple(_wrap_dim(d, nd) for d in dims)
        if given != dims:  # (PyTorch's node shows the dims as given)
            out = apply(Roll, (input,), (input._data,), shifts=shifts, dims=dims)
            keep_given(out, dims=given)
            return out
    return apply(Roll, (input,), (input._data,), shifts=shifts, dims=dims)


# ------------------------------------------------------------------ composed of other ops
@export(method=True, out=True)
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two vectors (``input[:, None] * vec2``, as PyTorch)."""
    _tensor_arg("outer", input)
    _tensor_arg("outer", vec2, "vec2", 2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t._data.ndim}-D")
    return input.reshape(-1, 1) * vec2


ger = alias(outer, "ger")


@export(method=True)
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """The tensor rotated by ``k`` quarter turns in the plane of ``dims``, from the first
    towards the second (flips and a transpose, as PyTorch composes it)."""
    _tensor_arg("rot90", input)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    d0, d1 = _wrap_dim(dims[0], nd), _wrap_dim(dims[1], nd)
    k = int(k) % 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return input.clone()


@export(method=True)
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened ``input`` on its ``offset``-th diagonal."""
    _tensor_arg("diagflat", input)
    return diag(input.reshape(-1), offset)


@export(method=True)
def movedim(input: Tensor, source, destination) -> Tensor:
    """The dimensions ``source`` moved to the positions ``destination``, the others kept in their
    order (a view, through ``permute``)."""
    _tensor_arg("movedim", input)
    src = [int(source)] if isinstance(source, (int, np.integer)) else [int(d) for d in source]
    dst = [int(destination)] if isinstance(destination, (int, np.integer)) else \
        [int(d) for d in destination]
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
            f"the same number of dims as destination ({dst} dims)")
    nd = input._data.ndim
    s = [_wrap_dim(d, nd) for d in src]
    d = [_wrap_dim(x, nd) for x in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(d)) != len(d):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if not nd:
        return input[...]  # (PyTorch's alias of a 0-d tensor)
    order = [None] * nd
    for a, b in zip(s, d):
        order[b] = a
    rest = iter(x for x in range(nd) if x not in s)
    return input.permute(tuple(x if x is not None else next(rest) for x in order))


moveaxis = alias(movedim, "moveaxis")


@export(method=True)
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``transpose(input, axis0, axis1)`` (NumPy's name)."""
    return input.transpose(axis0, axis1)


@export(method=True)
def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose(input, dim0, dim1)``."""
    return input.transpose(dim0, dim1)


@export(method=True)
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Dimension ``dim`` split into ``sizes`` (one may be -1; a view)."""
    _tensor_arg("unflatten", input)
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    shape = tuple(input._data.shape)
    if not shape:
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as "
                           f"{dim} but tensor has no dimensions")
    d = _wrap_dim(int(dim), len(shape))
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be "
                           "inferred")
    n = shape[d]
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    given = list(sizes)
    if -1 in sizes and known and n % known == 0:
        sizes[sizes.index(-1)] = n // known
    elif -1 in sizes or known != n:
        raise RuntimeError(f"unflatten: Provided sizes {given} don't multiply up to the size of "
                           f"dim {dim} ({n}) in the input tensor")
    return input.view(shape[:d] + tuple(sizes) + shape[d + 1:])


@export(method=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Each element (each slice along ``dim``) repeated ``repeats`` times (an int, or a tensor
    of one count per slice); without ``dim``, of the flattened tensor. ``repeat_interleave(r)``
    alone is the index ``[0] * r[0] + [1] * r[1] + …``."""
    if repeats is None:  # (the overload of one tensor of counts)
        _tensor_arg("repeat_interleave", input, "repeats")
        return Tensor._wrap(_repeat_index(input))
    _tensor_arg("repeat_interleave", input)
    if dim is None:
        input = input.reshape(-1)
        dim = 0
    nd = input._data.ndim
    d = _wrap_dim(int(dim), nd)
    if not nd:
        if not isinstance(repeats, Tensor):  # (PyTorch unsqueezes at dim + 1 first)
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but "
                             f"got {d + 1})")
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not isinstance(repeats, Tensor):
        r = _int_arg("repeat_interleave", "repeats", 2, repeats)
        if r < 0:
            raise RuntimeError("Repeats must be non-negative")
        shape = tuple(input._data.shape)
        wide = shape[:d + 1] + (r,) + shape[d + 1:]
        out = input.unsqueeze(d + 1).expand(wide).clone()
        return out.view(shape[:d] + (shape[d] * r,) + shape[d + 1:])
    if repeats._data.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    n = input._data.shape[d]
    K = kernels_for((input, repeats))
    counts = repeats._data
    if repeats._data.size == 1:
        counts = K.broadcast_to(K.reshape_view(counts, (1,)), (n,))
    elif repeats._data.size != n:
        raise RuntimeError(
            "repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{repeats._data.size} and input.size({d}) = {n}")
    index = _repeat_index(Tensor._wrap(counts))
    return input.index_select(d, Tensor._wrap(index))


def _repeat_index(repeats: Tensor):
    data = repeats._data
    if data.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if data.dtype not in (np.int64, np.int32):
        name = {np.dtype(np.float32): "Float", np.dtype(np.float64): "Double",
                np.dtype(np.bool_): "Bool"}.get(data.dtype, str(data.dtype))
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{name}'")
    return kernels_for((repeats,)).structure.repeat_index(data)


@export(method=True)
def tile(input: Tensor, *args, dims=None) -> Tensor:
    """``input`` repeated ``dims`` times along each dimension (``dims`` padded with leading 1s
    to the input's rank; ``Tensor.repeat`` otherwise)."""
    _tensor_arg("tile", input)
    dims = _dims_of(args, dims)
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    if builtins.any(r < 0 for r in dims):
        shape = (1,) * (len(dims) - nd) + tuple(input._data.shape)
        sizes = [n * r for n, r in zip(shape, dims)]
        bad = next(x for x in sizes if x < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {sizes}")
    return input.repeat(dims)


def _tensors(args, what: str) -> list:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return list(args)


@export
def atleast_1d(*tensors):
    """Each tensor with at least one dimension (a 0-d one reshaped to ``(1,)``)."""
    ts = _tensors(tensors, "atleast_1d")
    out = [t.reshape(1) if not t._data.ndim else t for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


@export
def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (a vector as one row)."""
    ts = _tensors(tensors, "atleast_2d")
    out = [t.reshape(1, 1) if not t._data.ndim else t.unsqueeze(0) if t._data.ndim == 1 else t
           for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


@export
def atleast_3d(*tensors):
    """Each tensor with at least three dimensions: ``(1, 1, 1)``, ``(1, n, 1)``, ``(n, m, 1)``."""
    ts = _tensors(tensors, "atleast_3d")
    out = []
    for t in ts:
        nd = t._data.ndim
        out.append(t.reshape(1, 1, 1) if not nd else t.unsqueeze(0).unsqueeze(-1) if nd == 1 else
                   t.unsqueeze(-1) if nd == 2 else t)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def _nonempty(tensors, name: str) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@export(out=True)
def hstack(tensors) -> Tensor:
    """The tensors joined column-wise (along dimension 1; 0 for vectors)."""
    ts = list(atleast_1d(_nonempty(tensors, "hstack")))
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@export(out=True)
def vstack(tensors) -> Tensor:
    """The tensors joined row-wise (vectors as rows)."""
    return cat(list(atleast_2d(_nonempty(tensors, "vstack"))), 0)


row_stack = export(vstack, "row_stack")


@export(out=True)
def dstack(tensors) -> Tensor:
    """The tensors joined depth-wise (along dimension 2, after ``atleast_3d``)."""
    return cat(list(atleast_3d(_nonempty(tensors, "dstack"))), 2)


@export(out=True)
def column_stack(tensors) -> Tensor:
    """The tensors as columns (0-d and 1-d ones as ``(n, 1)``), joined along dimension 1."""
    ts = _nonempty(tensors, "column_stack")
    return hstack([t.reshape(t._data.size, 1) if t._data.ndim <= 1 else t for t in ts])


@export(out=Out(no_overlap=True))
def concat(tensors, dim: int = 0) -> Tensor:
    """``cat`` (an alias)."""
    return cat(tensors, dim)


@export(out=Out(no_overlap=True))
def concatenate(tensors, axis: int = 0, *, dim=None) -> Tensor:
    """``cat`` (an alias, NumPy's ``axis``)."""
    return cat(tensors, axis if dim is None else dim)


_MESHGRID_WARNING = ("torch.meshgrid: in an upcoming release, it will be required to pass the "
                     "indexing argument.")


@export
def meshgrid(*tensors, indexing=None) -> tuple:
    """Coordinate grids of 0-d or 1-d tensors: with ``indexing='ij'`` (the default, with
    PyTorch's warning when not given) grid ``i`` varies along dimension ``i``; with ``'xy'``
    the first two dimensions are swapped."""
    ts = _tensors(tensors, "meshgrid")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("xy", "ij"):
        raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f"{indexing}")
    for t in ts:
        if t._data.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    for t in ts[1:]:
        if t._data.dtype != ts[0]._data.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != ts[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._data.size for t in ts)
    grids = []
    for i, t in enumerate(ts):
        view = tuple(-1 if j == i else 1 for j in range(len(ts)))
        grids.append(t.reshape(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@export
def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape (views; one already of that shape is
    returned as it is)."""
    ts = _tensors(tensors, "broadcast_tensors")
    shape = ()
    for t in ts:
        shape = broadcast_shapes(shape, tuple(t._data.shape))
    return tuple(t if tuple(t._data.shape) == shape else t.expand(shape) for t in ts)


@export(method=True)
def broadcast_to(input: Tensor, size) -> Tensor:
    """``input`` expanded to ``size`` (a view, as ``expand``)."""
    _tensor_arg("broadcast_to", input)
    return input.expand(tuple(size))


@export(method=True)
def ravel(input: Tensor) -> Tensor:
    """The elements as a vector: a view of a contiguous tensor, else of a contiguous copy."""
    _tensor_arg("ravel", input)
    return input.contiguous().view(-1)


@export(method=True, out=Out(same_dtype=True))
def take_along_dim(input: Tensor, indices: Tensor, dim=None) -> Tensor:
    """The values of ``input`` at ``indices`` along ``dim`` (broadcast against each other);
    without ``dim``, of the flattened tensor."""
    _tensor_arg("take_along_dim", input)
    _tensor_arg("take_along_dim", indices, "indices", 2)
    if indices._data.dtype != np.int64:
        name = {"float32": "Float", "float64": "Double", "int32": "Int", "bool": "Bool"}.get(
            from_numpy_dtype(indices._data.dtype).name, str(indices.dtype))
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{name}")
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    nd = input._data.ndim
    d = _wrap_dim(int(dim), nd)
    if nd != indices._data.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {nd} dimensions for input, and {indices._data.ndim} dimensions "
            "for indices")
    if not nd:
        return input.gather(0, indices)
    sizes = list(input._data.shape)
    sizes[d] = indices._data.shape[d]
    shape = list(broadcast_shapes(tuple(sizes), tuple(indices._data.shape)))
    wide_indices = indices.expand(shape)
    shape[d] = input._data.shape[d]
    return input.expand(shape).gather(d, wide_indices)


# ------------------------------------------------------------------ predicates and sizes
@export
def numel(input: Tensor) -> int:
    """The number of elements."""
    return _tensor_arg("numel", input)._data.size


@export
def is_tensor(obj) -> bool:
    """Whether ``obj`` is a Tensor."""
    return isinstance(obj, Tensor)


@export
def is_floating_point(input: Tensor) -> bool:
    """Whether the tensor's dtype is a floating-point one."""
    return _tensor_arg("is_floating_point", input).dtype.is_floating_point


@export(method=True)
def is_signed(input: Tensor) -> bool:
    """Whether the tensor's dtype holds negative numbers (all but bool and uint8)."""
    return _tensor_arg("is_signed", input).dtype.is_signed


@export(method=True)
def is_conj(input: Tensor) -> bool:
    """Whether a conjugation is pending on the tensor: never in numgrad, whose conjugates are
    computed into memory (``conj``; PyTorch's may be a view with the conjugate bit set)."""
    _tensor_arg("is_conj", input)
    return False


@export(method=True)
def is_neg(input: Tensor) -> bool:
    """Whether a negation is pending on the tensor: never in numgrad (PyTorch's negative bit,
    set on the imaginary part of a conjugate view, has no counterpart here)."""
    _tensor_arg("is_neg", input)
    return False


@export(method=True)
def is_inference(input: Tensor) -> bool:
    """Whether the tensor is an inference tensor: never in numgrad, whose tensors made under
    ``inference_mode`` are plain tensors that do not require grad."""
    _tensor_arg("is_inference", input)
    return False


@export(method=True)
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    _tensor_arg("is_same_size", input)
    return tuple(_tensor_arg("is_same_size", other, "other", 2).shape) == tuple(input.shape)


@export(method=True)
def get_device(input: Tensor) -> int:
    """The index of the CUDA device the tensor is on; -1 for a CPU tensor."""
    _tensor_arg("get_device", input)
    return -1 if isinstance(input._data, np.ndarray) else input.device.index or 0
