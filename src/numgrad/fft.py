"""``numgrad.fft``: PyTorch's ``torch.fft``, the functions numgrad has. numgrad has no complex
dtype yet, so of the transforms only those of a real input with a real result: ``irfft``,
``irfft2``, ``irfftn`` and ``hfft``, ``hfft2``, ``hfftn`` (a real input is a complex one with
zero imaginary parts); and the shifts of the zero frequency.

The transforms are products with cosine and sine matrices along each dimension (the real and
imaginary parts carried through the complex inverse transforms of the leading dimensions, the
last dimension's complex-to-real transform reading both), so they are differentiable, twice, with
PyTorch's gradients.
"""
from __future__ import annotations

import math

from .tensor import Tensor, _wrap_dim

__all__ = ["fftshift", "ifftshift", "irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn"]

_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho", None: "forward"}


def _ng():
    import numgrad

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


def _plan(x: Tensor, s, dim):
    """(dims, output sizes) of an n-dimensional transform, with PyTorch's checks."""
    if x.ndim == 0:
        first = (dim if isinstance(dim, int) else dim[0]) if dim is not None else -1
        raise IndexError(f"Dimension specified as {first} but tensor has no dimensions")
    if dim is None:
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
        last = k == len(dims) - 1
        n = s[k] if s is not None and s[k] != -1 else (
            2 * (x.shape[d] - 1) if last else x.shape[d])
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        sizes.append(int(n))
    return dims, sizes


def _c2r(x: Tensor, s, dim, norm) -> Tensor:
    """The inverse real transform of a real ``x`` over ``dim`` (the last one complex-to-real)."""
    if norm not in (None,) + _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    ng = _ng()
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


def irfft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse of ``rfft``: ``n`` real points (``2 (L - 1)`` by default) from the
    one-sided spectrum along ``dim``."""
    return _c2r(input, None if n is None else (n,), dim, norm)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``irfftn`` over two dimensions."""
    return _c2r(input, s, dim, norm)


def irfftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """The inverse of ``rfftn`` over ``dim`` (all dimensions, or the last ``len(s)``)."""
    return _c2r(input, s, dim, norm)


def hfft(input: Tensor, n=None, dim: int = -1, norm=None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: for a real input,
    ``irfft`` with the opposite normalisation."""
    return _c2r(input, None if n is None else (n,), dim, _SWAPPED.get(norm, norm))


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``hfftn`` over two dimensions."""
    return _c2r(input, s, dim, _SWAPPED.get(norm, norm))


def hfftn(input: Tensor, s=None, dim=None, norm=None) -> Tensor:
    """``hfft`` over ``dim``: for a real input, ``irfftn`` with the opposite normalisation."""
    return _c2r(input, s, dim, _SWAPPED.get(norm, norm))


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    from .ops.structure import roll

    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(_wrap_dim(d, input.ndim) for d in dims)
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = tuple(-(input.shape[d] // 2) if inverse else input.shape[d] // 2 for d in dims)
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """``input`` rolled so that the zero frequency moves to the centre of each of ``dim`` (all
    dimensions when None): by ``n // 2``."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of ``fftshift``: rolled back by ``n // 2``."""
    return _shift(input, dim, True)


# The dispatching forms of the functions above (``__torch_function__``: numgrad/overrides.py), as
# numgrad.special binds its own (so that vmap reaches them through its dispatch).
import sys as _sys  # noqa: E402

from . import overrides as _overrides  # noqa: E402

_overrides.wrap_namespace(_sys.modules[__name__], "torch.fft.")
