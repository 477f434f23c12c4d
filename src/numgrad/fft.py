"""``numgrad.fft``: PyTorch's ``torch.fft``, the functions numgrad has (numgrad has no complex
dtypes yet, so of the transforms only the shifts of the zero frequency)."""
from __future__ import annotations

from .tensor import Tensor, _wrap_dim

__all__ = ["fftshift", "ifftshift"]


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
