"""``numgrad.signal.windows``: PyTorch's window functions (``torch.signal.windows``), each a
float32 or float64 tensor of ``M`` points computed from an evenly spaced grid, as PyTorch
defines them: symmetric (``sym=True``, for filter design) or periodic (``sym=False``, for
spectral analysis; the symmetric window of ``M + 1`` points without its last)."""
from __future__ import annotations

import math
from collections.abc import Iterable

from .._dtype import float32, float64, get_default_dtype, strided
import numgrad
from ..ops._names import export as _export


def _ng():
    return numgrad


def _checked(name: str, M: int, dtype, layout):
    """The dtype to compute in, after PyTorch's checks of every window."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: "
                         f"torch.{getattr(layout, 'name', layout)}")
    dtype = get_default_dtype() if dtype is None else dtype
    if dtype not in (float32, float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: torch.{dtype.name}")
    return dtype


def _grid(M: int, start: float, step: float, dtype, device):
    """``M`` points from ``start`` ``step`` apart (``linspace``'s, as PyTorch computes them)."""
    return _ng().linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device)


def _trivial(M: int, dtype, device, requires_grad: bool):
    """The window of 0 points (empty) or 1 point (one), or None."""
    if M > 1:
        return None
    return _ng().ones(M, dtype=dtype, device=device, requires_grad=requires_grad)


def _finish(w, requires_grad: bool):
    return w.requires_grad_(True) if requires_grad else w


@_export
def exponential(M: int, *, center=None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=strided, device=None, requires_grad: bool = False):
    """``exp(-|n - center| / tau)`` (the Poisson window)."""
    dtype = _checked("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _grid(M, -center / tau, 1 / tau, dtype, device)
    return _finish((-k.abs()).exp(), requires_grad)


@_export
def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False):
    """``sin(pi (n + 1/2) / M)`` (the sine window)."""
    dtype = _checked("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _finish(_grid(M, 0.5 * step, step, dtype, device).sin(), requires_grad)


@_export
def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=strided,
             device=None, requires_grad: bool = False):
    """``exp(-(n - (M - 1) / 2)**2 / (2 std**2))``."""
    dtype = _checked("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _grid(M, start * step, step, dtype, device)
    return _finish((-(k * k)).exp(), requires_grad)


@_export
def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=strided,
           device=None, requires_grad: bool = False):
    """``i0(beta sqrt(1 - (2n / N - 1)**2)) / i0(beta)``, ``N = M - 1`` (``M``: periodic)."""
    dtype = _checked("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    ng = _ng()
    b = ng.tensor(float(beta), dtype=dtype, device=device)
    step = 2.0 * b / (M if not sym else M - 1)
    end = ng.minimum(b, -b + (M - 1) * step)
    k = ng.linspace(float(-b), float(end), M, dtype=dtype, device=device)
    return _finish(ng.i0((b * b - k * k).sqrt()) / ng.i0(b), requires_grad)


@_export
def bartlett(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False):
    """The triangular window ``1 - |2n / N - 1|``, ``N = M - 1`` (``M``: periodic)."""
    dtype = _checked("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    k = _grid(M, -1.0, 2 / (M if not sym else M - 1), dtype, device)
    return _finish(1 - k.abs(), requires_grad)


@_export
def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=strided,
                   device=None, requires_grad: bool = False):
    """``sum_i (-1)**i a_i cos(2 pi i n / N)``, ``N = M - 1`` (``M``: periodic)."""
    dtype = _checked("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    ng = _ng()
    k = _grid(M, 0.0, 2 * math.pi / (M if not sym else M - 1), dtype, device)
    coefficients = ng.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device)
    i = ng.arange(coefficients.shape[0], dtype=dtype, device=device)
    w = (coefficients.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)
    return _finish(w, requires_grad)


@_export
def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=strided, device=None, requires_grad: bool = False):
    """``alpha - (1 - alpha) cos(2 pi n / N)``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


@_export
def hamming(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False):
    """``general_hamming`` with ``alpha = 0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


@_export
def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
         requires_grad: bool = False):
    """``general_hamming`` with ``alpha = 0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


@_export
def blackman(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False):
    """``general_cosine`` with the coefficients 0.42, 0.5, 0.08."""
    _checked("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


@_export
def nuttall(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False):
    """``general_cosine`` with Nuttall's four coefficients."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
