"""PyTorch's small top-level functions composed of other ops, with PyTorch's names, node names
and errors: ``diff`` (SubBackward0), ``torch.dropout`` (MulBackward0), ``detach``, ``logspace``,
``broadcast_shapes``, ``is_nonzero`` and ``typename``; ATen's top-level spellings of
nn.functional's ops (``torch.layer_norm``, ``torch.batch_norm``, ``torch.embedding``, the
dropouts...), the spectral windows (``torch.hann_window``...), ``vander``, the deprecated
``range`` and the process-wide settings PyTorch has (interop threads, flushing subnormals).
"""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .._dtype import c_name, int64, to_dtype
from ..tensor import Tensor, _wrap_dim
from ._common import _ops
from .._dtype import get_default_dtype
from ..tensor import Size
from ..creation import _check_space_args, _finish, ones, ones_like
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
    for _ in builtins.range(int(n)):
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
        for k in builtins.range(1, len(shape) + 1):
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


# ------------------------------------------------------------------ nn.functional at the top level
# (``torch.<name>``: ATen's functions under their own signatures, nn.functional's computation)
def _F():
    from ..nn import functional

    return functional


@export
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``nn.functional.cosine_similarity``."""
    return _F().cosine_similarity(x1, x2, dim, eps)


@export
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``nn.functional.pairwise_distance``."""
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


@export
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """``nn.functional.pdist``."""
    return _F().pdist(input, p)


@export
def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``nn.functional.threshold``: ``value`` where ``input <= threshold``."""
    return _F().threshold(input, threshold, value)


@export
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` in place."""
    return _F().threshold_(input, threshold, value)


@export
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator=None) -> Tensor:
    """``nn.functional.rrelu`` (evaluation's slope unless ``training``)."""
    return _F().rrelu(input, lower, upper, training)


@export
def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator=None) -> Tensor:
    """``rrelu`` in place."""
    return _F().rrelu_(input, lower, upper, training)


def _probability(p: float) -> None:
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


@export
def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout`` in place."""
    _probability(p)
    return _F().dropout(input, p, train, inplace=True)


@export
def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.alpha_dropout`` (``train`` positional, as ATen's)."""
    _probability(p)
    return _F().alpha_dropout(input, p, train)


@export
def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``alpha_dropout`` in place."""
    _probability(p)
    return _F().alpha_dropout(input, p, train, inplace=True)


@export
def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.feature_alpha_dropout``."""
    _probability(p)
    return _F().feature_alpha_dropout(input, p, train)


@export
def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``feature_alpha_dropout`` in place."""
    _probability(p)
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def _channels(name: str, input: Tensor) -> None:
    if input._data.ndim < 2:
        raise RuntimeError(f"{name} expects input with at least 2 dimensions, but got input of "
                           f"size {list(input._data.shape)}")


@export
def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Whole channels (dimension 1) zeroed with probability ``p``, the rest scaled by
    ``1 / (1 - p)``: ``nn.functional.dropout2d``'s rule for any input of 2 or more dimensions."""
    _probability(p)
    if not train or p == 0:
        return input
    _channels("feature_dropout", input)
    return _F().dropout2d(input.unsqueeze(-1), p, True).squeeze(-1) if input._data.ndim == 2 \
        else _feature(input, p)


@export
def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``feature_dropout`` in place."""
    return input.copy_(feature_dropout(input, p, train)) if train and p != 0 else input


def _feature(input: Tensor, p: float) -> Tensor:
    """``input`` times a mask of one draw per channel (shape ``(N, C, 1, ...)``)."""
    shape = tuple(input._data.shape[:2]) + (1,) * (input._data.ndim - 2)
    import numgrad

    keep = numgrad.bernoulli(input.new_full(shape, 1 - p))
    return input * (keep / (1 - p) if p < 1 else keep)


@export
def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """``nn.functional.layer_norm``."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


@export
def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``nn.functional.group_norm`` (ATen's, which checks ``num_groups`` first)."""
    if num_groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    return _F().group_norm(input, num_groups, weight, bias, eps)


@export
def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """``nn.functional.rms_norm``."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


@export
def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``nn.functional.batch_norm`` under ATen's argument order (the affine parameters first)."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


@export
def instance_norm(input: Tensor, weight, bias, running_mean, running_var,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """``nn.functional.instance_norm`` under ATen's argument order."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


@export
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias=None) -> Tensor:
    """``nn.functional.bilinear``."""
    return _F().bilinear(input1, input2, weight, bias)


@export
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """ATen's ``embedding``: the rows of ``weight`` at ``indices`` (the table first; a
    ``padding_idx`` of -1 is none)."""
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@export
def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    """``nn.functional.adaptive_max_pool1d`` with its indices, always (ATen's)."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


# ------------------------------------------------------------------ windows, vander
def _window(name: str, length: int, dtype, layout, device, requires_grad: bool):
    """PyTorch's checks of a window function's arguments; the dtype (default float)."""
    if layout is not None and layout is not _strided():
        raise RuntimeError(f"{name} is not implemented for sparse types, got: {layout}")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    dt = to_dtype(dtype) if dtype is not None else get_default_dtype()
    if dt.np.kind not in "fV":
        grad = "true" if requires_grad else "false (default)"
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype="
            f"{c_name(dt.np)}, device=cpu, layout=Strided (default), "
            f"requires_grad={grad}, pinned_memory=false, memory_format=(nullopt))")
    return dt



def _strided():
    from .._dtype import strided

    return strided


def _symmetric_window(fn, name: str, window_length: int, periodic: bool, dtype, layout, device,
                      requires_grad: bool, **params) -> Tensor:
    """``torch.<name>_window``: ``signal.windows.<fn>`` of ``window_length + 1`` points with
    its last dropped where ``periodic`` (PyTorch's definition), of one point ``[1.]``."""
    dt = _window(name, int(window_length), dtype, layout, device, requires_grad)
    n = int(window_length)
    if n <= 1:
        out = ones(n, dtype=dt, device=device)
    else:
        full = fn(n + 1 if periodic else n, sym=True, dtype=dt, device=device, **params)
        out = full[:n].contiguous() if periodic else full
    return out.requires_grad_(True) if requires_grad else out


def _windows():
    from ..signal import windows

    return windows


@export
def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / N)`` (``N = window_length`` where
    ``periodic``, else ``window_length - 1``)."""
    return _symmetric_window(_windows().hann, "hann_window", window_length, periodic, dtype,
                             layout, device, requires_grad)


@export
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False) -> Tensor:
    """The generalised Hamming window ``alpha - beta cos(2 pi n / N)``."""
    def general(m, sym, dtype, device):
        return _windows().general_cosine(m, a=[alpha, beta], sym=sym, dtype=dtype,
                                         device=device)
    return _symmetric_window(general, "hamming_window", window_length, periodic, dtype, layout,
                             device, requires_grad)


@export
def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``."""
    return _symmetric_window(_windows().blackman, "blackman_window", window_length, periodic,
                             dtype, layout, device, requires_grad)


@export
def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """The triangular Bartlett window ``1 - |2 n / N - 1|``."""
    return _symmetric_window(_windows().bartlett, "bartlett_window", window_length, periodic,
                             dtype, layout, device, requires_grad)


@export
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / N - 1)**2)) / I0(beta)``."""
    return _symmetric_window(_windows().kaiser, "kaiser_window", window_length, periodic,
                             dtype, layout, device, requires_grad, beta=beta)


@export
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x``: columns ``x**(N-1), ..., x, 1`` (``x**0`` first
    where ``increasing``), ``N`` columns (default ``len(x)``); bools and integers as int64, as
    PyTorch's (the powers by a cumulative product, so the gradient follows it)."""
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._data.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    ops = _ops()
    if x._data.dtype.kind in "biu":
        x = x.to(int64)
    if n == 0:
        return x.new_zeros((x._data.shape[0], 0))
    first = ones_like(x).unsqueeze(1)
    if n == 1:
        out = first
    else:
        out = ops.cat([first, x.unsqueeze(1).expand(-1, n - 1)], 1).cumprod(1)
    return out if increasing else out.flip(1)


# ------------------------------------------------------------------ process-wide settings
_INTEROP = {"threads": None}


@export
def get_num_interop_threads() -> int:
    """The threads PyTorch would run independent ops on (numgrad runs them one after the other;
    the number set, else the machine's cores)."""
    import os

    return _INTEROP["threads"] or os.cpu_count() or 1


@export
def set_num_interop_threads(nthreads: int) -> None:
    """Sets what ``get_num_interop_threads`` answers."""
    if not isinstance(nthreads, int) or nthreads <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _INTEROP["threads"] = nthreads


@export
def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing subnormal numbers to zero is set as asked: numgrad keeps them always
    (NumPy and Numba's kernels compute subnormals), so True for ``False``, False for ``True``."""
    return not mode


@export
def range(start, end, step=1, *, dtype=None, device=None,  # noqa: A001
          requires_grad: bool = False) -> Tensor:
    """The deprecated ``torch.range``: ``start, start + step, ...`` up to ``end`` inclusive, in
    the default float dtype unless ``dtype``; PyTorch's deprecation warning. (This module's
    code calls ``builtins.range``: the name is this function here.)"""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    np_dtype = to_dtype(dtype).np if dtype is not None else get_default_dtype().np
    count = int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(count, dtype=np.float64)
    return _finish(values.astype(np_dtype), requires_grad, device)
