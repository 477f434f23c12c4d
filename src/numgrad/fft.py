"""``numgrad.fft``: PyTorch's ``torch.fft``. The complex transforms (``fft``, ``ifft``, their
``2``/``n`` forms), the real-input ones (``rfft``, ``ihfft``, their ``2``/``n`` forms) are one
primitive, the DFT along a dimension (``ops/fourier.py``, numgrad's own Numba kernel), applied
dimension by dimension, with PyTorch's ``n``/``s``, ``dim`` and ``norm`` and their gradients.

The inverse real transforms ``irfft``/``hfft`` (and their ``2``/``n`` forms) of a complex input
are the same primitive on the Hermitian spectrum; of a real input, products with cosine and sine
matrices along each dimension (the real and imaginary parts carried through the complex inverse
transforms of the leading dimensions, the last dimension's complex-to-real transform reading
both), differentiable twice. And the shifts of the zero frequency.
"""
from __future__ import annotations

import math
import sys as _sys

from .tensor import Tensor, _wrap_dim
from . import overrides as _overrides
from ._dtype import torch_name
from .ops.fourier import fft_c2c
from .ops.structure import roll
import numgrad
from .ops._names import export as _export


_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho", None: "forward"}


def _ng():
    return numgrad


def _along(x: Tensor, d: int, matrix: Tensor) -> Tensor:
    """``x`` with its dimension ``d`` (size k) multiplied by ``matrix`` (k x t)."""
    return (x.movedim(d, -1) @ matrix).movedim(-1, d)


def _fitted(x: Tensor, d: int, size: int) -> Tensor:
    """``x`` cut or zero-padded to ``size`` along ``d``."""
    n = x.shape[d]
    if n >= size:
        return x.narrow(d, 0, size)
    pad = list(x.shape)
    pad[d] = size - n
    return _ng().cat([x, x.new_zeros(tuple(pad))], d)


def _angles(k: int, t: int, dtype, device):
    ng = _ng()
    i = ng.arange(k, dtype=ng.float64, device=device).unsqueeze(1)
    j = ng.arange(t, dtype=ng.float64, device=device).unsqueeze(0)
    theta = (i * j % t) * (2 * math.pi / t)  # (reduced mod t first: exact angles)
    return theta.cos().to(dtype), theta.sin().to(dtype)


def _plan(x: Tensor, s, dim, c2r: bool = True):
    """(dims, signal sizes) of an n-dimensional transform, with PyTorch's checks; the last
    dimension's default size is ``2 (L - 1)`` for a complex-to-real transform (``c2r``), else
    its length."""
    if not c2r and dim is None and s is None:
        return list(range(x.ndim)), list(x.shape)
    if x.ndim == 0:
        first = (dim if isinstance(dim, int) else dim[0]) if dim is not None else -1
        raise IndexError(f"Dimension specified as {first} but tensor has no dimensions")
    if dim is None:
        if s is not None and len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{x.ndim} dimensions.")
        dims = list(range(x.ndim - len(s), x.ndim)) if s is not None else list(range(x.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, x.ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    if s is not None and len(s) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    sizes = []
    for k, d in enumerate(dims):
        last = k == len(dims) - 1 and c2r
        n = s[k] if s is not None and s[k] != -1 else (
            2 * (x.shape[d] - 1) if last else x.shape[d])
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        sizes.append(int(n))
    return dims, sizes


def _c2r(x: Tensor, s, dim, norm) -> Tensor:
    """The inverse real transform of ``x`` over ``dim`` (the last one complex-to-real)."""
    if norm not in (None,) + _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    ng = _ng()
    if x.dtype.is_complex:
        return _c2r_complex(x, s, dim, norm)
    if not x.dtype.is_floating_point:
        x = x.to(ng.get_default_dtype())
    dims, sizes = _plan(x, s, dim)
    re, im = x, None
    for d, n in zip(dims[:-1], sizes[:-1]):  # (complex inverse transforms: e^{+i theta})
        re = _fitted(re, d, n)
        im = None if im is None else _fitted(im, d, n)
        cos, sin = _angles(n, n, x.dtype, x.device)
        re, im = (_along(re, d, cos) - (0 if im is None else _along(im, d, sin)),
                  _along(re, d, sin) + (0 if im is None else _along(im, d, cos)))
    d, n = dims[-1], sizes[-1]
    half = n // 2 + 1
    re = _fitted(re, d, half)
    cos, sin = _angles(half, n, x.dtype, x.device)
    weights = ng.full((half, 1), 2.0, dtype=x.dtype, device=x.device)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    out = _along(re, d, cos * weights)
    if im is not None:
        out = out - _along(_fitted(im, d, half), d, sin * weights)
    total = math.prod(sizes)
    if norm in (None, "backward"):
        return out / total
    return out / math.sqrt(total) if norm == "ortho" else out


def _c2r_complex(x: Tensor, s, dim, norm) -> Tensor:
    """The inverse real transform of a complex ``x``: the inverse transforms of the leading
    dims, then the last one's of the Hermitian spectrum its ``n // 2 + 1`` first entries make
    (an imaginary part at zero frequency, or at n / 2, drops out, as in PyTorch)."""
    dims, sizes = _plan(x, s, dim)
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = fft_c2c(_fitted(x, d, n), d, False, _scale(norm, n, False))
    d, n = dims[-1], sizes[-1]
    half = _fitted(x, d, n // 2 + 1)
    mirrored = half.narrow(d, 1, n - n // 2 - 1).flip(d).conj()
    full = _ng().cat([half, mirrored], d)
    return fft_c2c(full, d, False, _scale(norm, n, False)).real.contiguous()


def _scale(norm, n: int, forward: bool) -> float:
    """The factor of a transform of ``n`` points by ``norm``: "backward" (the default) scales
    the inverse by 1/n, "forward" the forward transform, "ortho" both by 1/sqrt(n)."""
    if norm is None or norm == "backward":
        return 1.0 if forward else 1.0 / n
    if norm == "forward":
        return 1.0 / n if forward else 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _as_complex(x: Tensor) -> Tensor:
    """``x`` in the complex dtype of its precision (integers: the default one's)."""
    if x.dtype.is_complex:
        return x
    ng = _ng()
    real = x.dtype if x.dtype.is_floating_point else ng.get_default_dtype()
    return x.to(real.to_complex())


def _real_input(x: Tensor, name: str) -> Tensor:
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got "
                           f"{torch_name(x._data.dtype)}")
    return x if x.dtype.is_floating_point else x.to(_ng().get_default_dtype())


def _transform(x: Tensor, s, dim, norm, forward: bool, onesided: str | None) -> Tensor:
    """The n-dimensional transform of ``x`` over the planned dims, each padded or cut to its
    size; ``onesided`` (the function's name) for a real input whose last transformed dimension
    keeps its ``n // 2 + 1`` non-negative frequencies (``rfft``, ``ihfft``)."""
    if onesided is not None:
        x = _real_input(x, onesided)
    if norm not in (None,) + _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    dims, sizes = _plan(x, s, dim, c2r=False)
    if onesided is not None and not dims:
        raise RuntimeError(f"{onesided}n must transform at least one axis")
    for d, n in zip(dims, sizes):
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    for d, n in zip(dims, sizes):
        x = _fitted(x, d, n)
    x = _as_complex(x)
    order = dims[::-1] if onesided is not None else dims  # (the one-sided dimension first)
    for k, d in enumerate(order):
        n = x.shape[d]
        x = fft_c2c(x, d, forward, _scale(norm, n, forward))
        if k == 0 and onesided is not None:
            x = x.narrow(d, 0, n // 2 + 1)
    return x


@_export
def fft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The discrete Fourier transform along ``dim``, of ``n`` points (the input padded with
    zeros or cut); ``norm``: "backward" (no scaling, the default), "ortho" (1/sqrt(n)) or
    "forward" (1/n)."""
    return _transform(input, None if n is None else (n,), dim, norm, True, None)


@_export
def ifft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse discrete Fourier transform along ``dim`` (by default scaled by 1/n)."""
    return _transform(input, None if n is None else (n,), dim, norm, False, None)


@_export
def fft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``fftn`` over two dimensions (the last two by default)."""
    return _transform(input, s, dim, norm, True, None)


@_export
def ifft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``ifftn`` over two dimensions (the last two by default)."""
    return _transform(input, s, dim, norm, False, None)


@_export
def fftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional transform over ``dim`` (all dimensions, or the last ``len(s)``), each
    of the sizes ``s`` (-1: its own)."""
    return _transform(input, s, dim, norm, True, None)


@_export
def ifftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional inverse transform over ``dim``."""
    return _transform(input, s, dim, norm, False, None)


@_export
def rfft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The transform of a real signal along ``dim``: its ``n // 2 + 1`` non-negative
    frequencies (the others are their conjugates)."""
    return _transform(input, None if n is None else (n,), dim, norm, True, "rfft")


@_export
def rfft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``rfftn`` over two dimensions."""
    return _transform(input, s, dim, norm, True, "rfft")


@_export
def rfftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional transform of a real signal, one-sided in the last of ``dim``."""
    return _transform(input, s, dim, norm, True, "rfft")


@_export
def ihfft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse of ``hfft``: the one-sided inverse transform of a real signal."""
    return _transform(input, None if n is None else (n,), dim, norm, False, "ihfft")


@_export
def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``ihfftn`` over two dimensions."""
    return _transform(input, s, dim, norm, False, "ihfft")


@_export
def ihfftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional inverse transform of a real signal, one-sided in the last of ``dim``."""
    return _transform(input, s, dim, norm, False, "ihfft")


@_export
def irfft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse of ``rfft``: ``n`` real points (``2 (L - 1)`` by default) from the
    one-sided spectrum along ``dim``."""
    return _c2r(input, None if n is None else (n,), dim, norm)


@_export
def irfft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``irfftn`` over two dimensions."""
    return _c2r(input, s, dim, norm)


@_export
def irfftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """The inverse of ``rfftn`` over ``dim`` (all dimensions, or the last ``len(s)``)."""
    return _c2r(input, s, dim, norm)


@_export
def hfft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: ``irfft`` of its
    conjugate with the opposite normalisation."""
    return _c2r(input.conj(), None if n is None else (n,), dim, _SWAPPED.get(norm, norm))


@_export
def hfft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``hfftn`` over two dimensions."""
    return _c2r(input.conj(), s, dim, _SWAPPED.get(norm, norm))


@_export
def hfftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """``hfft`` over ``dim``: ``irfftn`` of the conjugate with the opposite normalisation."""
    return _c2r(input.conj(), s, dim, _SWAPPED.get(norm, norm))


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(_wrap_dim(d, input.ndim) for d in dims)
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = tuple(-(input.shape[d] // 2) if inverse else input.shape[d] // 2 for d in dims)
    return roll(input, shifts, dims)


@_export
def fftshift(input: Tensor, dim=None) -> Tensor:
    """``input`` rolled so that the zero frequency moves to the centre of each of ``dim`` (all
    dimensions when None): by ``n // 2``."""
    return _shift(input, dim, False)


@_export
def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of ``fftshift``: rolled back by ``n // 2``."""
    return _shift(input, dim, True)


# The dispatching forms of the functions above (``__torch_function__``: numgrad/overrides.py), as
# numgrad.special binds its own (so that vmap reaches them through its dispatch).
_overrides.wrap_namespace(_sys.modules[__name__], "torch.fft.")
