"""``gradient``: a function's derivative estimated from its samples by central differences in
the interior and one-sided differences of first or second order at the edges, along each of
``dim``, for uniform spacings (numbers) or sample coordinates (1-D tensors), as
``numpy.gradient`` and PyTorch define it. Composed of numgrad's ops (linear in the samples, so
differentiable, with PyTorch's gradient)."""
from __future__ import annotations

from ..tensor import Tensor, _wrap_dim
import numgrad
from ._names import export
from .shape import cat


def _along(t: Tensor, d: int, ndim: int) -> Tensor:
    """A 1-D tensor shaped to broadcast along dimension ``d``."""
    return t.reshape([-1 if k == d else 1 for k in range(ndim)])


def _one(f: Tensor, d: int, h, edge_order: int) -> Tensor:
    """The derivative along ``d`` of samples ``f`` spaced ``h`` apart (a number) or at the
    coordinates ``h`` (a 1-D tensor)."""
    n = f.shape[d]
    f0, f1, f2 = (f.narrow(d, i, 1) for i in (0, 1, min(2, n - 1)))
    g1, g2, g3 = (f.narrow(d, n - i, 1) for i in (1, 2, min(3, n)))
    lo, mid, hi = f.narrow(d, 0, n - 2), f.narrow(d, 1, n - 2), f.narrow(d, 2, n - 2)
    if not isinstance(h, Tensor):
        interior = (hi - lo) / (2 * h)
        if edge_order == 1:
            first, last = (f1 - f0) / h, (g1 - g2) / h
        else:
            first = (-1.5 * f0 + 2 * f1 - 0.5 * f2) / h
            last = (0.5 * g3 - 2 * g2 + 1.5 * g1) / h
        return cat([first, interior, last], d)
    x = h.to(f.dtype)
    dx = x[1:] - x[:-1]
    hs, hd = _along(dx[:-1], d, f.ndim), _along(dx[1:], d, f.ndim)
    interior = (-hd / (hs * (hd + hs)) * lo + (hd - hs) / (hd * hs) * mid
                + hs / (hd * (hd + hs)) * hi)
    if edge_order == 1:
        first, last = (f1 - f0) / dx[0], (g1 - g2) / dx[-1]
    else:
        a, b = dx[0], dx[1]
        first = (-(2 * a + b) / (a * (a + b)) * f0 + (a + b) / (a * b) * f1
                 - a / (b * (a + b)) * f2)
        a, b = dx[-2], dx[-1]
        last = (b / (a * (a + b)) * g3 - (a + b) / (a * b) * g2
                + (2 * b + a) / (b * (a + b)) * g1)
    return cat([first, interior, last], d)


@export
def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """The derivative of ``input``'s samples along each of ``dim`` (all dimensions by default),
    one tensor a dimension; ``spacing`` a number, one number a dimension, or one 1-D tensor of
    coordinates a dimension."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else (
        [dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    for k, d in enumerate(dims):
        if d in dims[:k]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or "
                               "it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for h in spacings:
        if isinstance(h, Tensor) and h.device != input.device:
            raise RuntimeError("torch.gradient expected each tensor to be on the same device, but "
                               f"got devices {input.device} and {h.device}!")
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    f = input if input.dtype.is_floating_point or input.dtype.is_complex else \
        input.to(numgrad.get_default_dtype())
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor) and h.ndim == 0:
            h = h.item()
        out.append(_one(f, d, h, edge_order))
    return tuple(out)
