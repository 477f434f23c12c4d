"""PyTorch's small top-level functions composed of other ops, with PyTorch's names, node names
and errors: ``diff`` (SubBackward0), ``torch.dropout`` (MulBackward0), ``detach``, ``logspace``,
``broadcast_shapes``, ``is_nonzero`` and ``typename``.
"""
from __future__ import annotations

import builtins

import numpy as np

from .._dtype import to_dtype
from ..tensor import Tensor, _wrap_dim
from ._common import _ops
from .._dtype import get_default_dtype
from ..tensor import Size
from ..creation import _check_space_args, _finish
from ._names import export


# ------------------------------------------------------------------ composed as PyTorch composes
@export(method=True)
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``), after
    ``prepend`` and ``append`` are concatenated to ``input`` along ``dim``."""
    nd = input._data.ndim
    if not nd:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(int(dim), nd)
    ops = _ops()
    parts = []
    for extra in (prepend, append):
        if extra is not None and isinstance(extra, Tensor) and extra._data.ndim != nd:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if prepend is not None or append is not None:
        if prepend is not None:
            parts.append(prepend)
        parts.append(input)
        if append is not None:
            parts.append(append)
        input = ops.cat(parts, d)
    out = input
    for _ in range(int(n)):
        size = out._data.shape[d]
        if size == 0:
            break
        hi = ops.narrow(out, d, 1, size - 1)
        lo = ops.narrow(out, d, 0, size - 1)
        out = ops.ne(hi, lo) if out._data.dtype == np.bool_ else hi - lo  # (logical_xor)
    return out


# ------------------------------------------------------------------ small utilities
@export
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout``: ``nn.functional.dropout`` with PyTorch's RuntimeError for ``p``."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    from ..nn import functional as F

    return F.dropout(input, p, train)


@export
def detach(input: Tensor) -> Tensor:
    """``input``'s data without its history (a view that never requires grad)."""
    return input.detach()


@export
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` values ``base ** t`` for ``t`` evenly spaced from ``start`` to ``end``,
    computed as PyTorch's kernel does (the first half from ``start``, the rest from ``end``)."""
    _check_space_args("logspace", start, end, steps)
    kind = to_dtype(dtype).np if dtype is not None else get_default_dtype().np
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    t = kind.type if kind.kind == "f" else np.float64
    i = np.arange(steps)
    if steps == 1:
        values = np.power(t(base), np.full(1, t(start), t))
    elif steps:
        s, e = t(start), t(end)
        step = (e - s) / t(steps - 1)
        with np.errstate(over="ignore"):
            exps = np.where(i < steps // 2, s + step * i.astype(t), e - step * (steps - i - 1).astype(t))
            values = np.power(t(base), exps.astype(t))
    else:
        values = np.zeros(0, t)
    return _finish(np.ascontiguousarray(values.astype(kind)), requires_grad, device)


@export
def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to (``numgrad.Size``), with PyTorch's
    error for shapes that do not broadcast."""
    sizes = [(s,) if isinstance(s, (int, np.integer)) else tuple(int(n) for n in s)
             for s in shapes]
    out: list = []
    for i, shape in enumerate(sizes):
        if builtins.any(n < 0 for n in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        for k in range(1, len(shape) + 1):
            n = shape[-k]
            if k > len(out):
                out.insert(0, n)
            elif out[-k] == 1:
                out[-k] = n
            elif n != 1 and n != out[-k]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {n} at {-k}! Mismatching "
                    f"argument at index {i} had {shape}; but expected shape should be "
                    f"broadcastable to {out}")
    return Size(out)


@export(method=True)
def is_nonzero(input: Tensor) -> bool:
    """Whether the one-element tensor ``input`` is not zero (PyTorch's errors otherwise)."""
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


@export
def typename(obj) -> str:
    """The type of ``obj`` as a string: a tensor's legacy type (``numgrad.FloatTensor``), else
    its module and qualified name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"
