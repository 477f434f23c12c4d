"""A float's parts and neighbours: ``frexp`` (mantissa in [0.5, 1) and int32 exponent) and
``nextafter`` (the next representable value towards another), composed of numgrad's ops (the
neighbour read off the float's bits through ``view`` as the integer type of its width)."""
from __future__ import annotations

import numpy as np

from .._dtype import float64, from_numpy_dtype, int16, int32, int64
from ..tensor import Tensor
from ._names import export
from .linalg_common import _ExResult
from ._common import _has_tangent, _inplace
from ._promote import binary_operands
from .._dtype import torch_name
from ..autograd import grad_mode
from .elementwise import where


class _FrexpResult(_ExResult):
    _fields, _name = ("mantissa", "exponent"), "frexp"


@export(method=True)
def frexp(input: Tensor):
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent``, ``|mantissa|`` in
    [0.5, 1) (0, inf and NaN: the value itself and exponent 0); the mantissa's gradient is
    ``grad / 2**exponent``, as PyTorch's."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach().to(float64)  # (float32's subnormals are normal in float64)
    finite = x.isfinite() & (x != 0)
    safe = where(finite, x.abs(), 1.0)
    e = safe.log2().floor() + 1
    m = _times_exp2(safe, -e)
    e = e + (m >= 1).to(float64) - (m < 0.5).to(float64)
    e = where(finite, e, 0.0)
    mantissa = _times_exp2(input, -e)
    return _FrexpResult(mantissa, e.to(int32))


def _times_exp2(x: Tensor, e: Tensor) -> Tensor:
    """``x * 2**e`` with ``2**e`` applied in two factors (neither overflows for the exponents of
    float64's subnormals), in ``x``'s dtype."""
    half = (e / 2).floor()
    return x * half.exp2().to(x.dtype) * (e - half).exp2().to(x.dtype)


_BITS = {16: int16, 32: int32, 64: int64}  # (the integer type of each float's width)


@export(method=True)
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next float after ``input`` towards ``other`` (``other`` where they are equal, NaN
    where either is NaN), in the promoted float dtype; its gradient goes to ``input`` whole, as
    PyTorch's."""
    if not isinstance(other, Tensor):
        raise TypeError(f"nextafter(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    a, _ = binary_operands(input, other)
    kind = np.dtype(a.dtype)
    if kind.kind not in "fV":  # ("V": bfloat16)
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{torch_name(kind)}\'')
    # (in the promoted dtype's own spacing: float16's and bfloat16's neighbours are read off
    # their 16 bits, as PyTorch's; float32's are not theirs)
    dtype = from_numpy_dtype(kind)
    width = dtype.itemsize * 8
    x, y = input.detach().to(dtype), other.detach().to(dtype)
    x, y = x.broadcast_to(np.broadcast_shapes(tuple(x.shape), tuple(y.shape))), y
    x = x.contiguous()
    bits = x.view(_BITS[width])
    up = (y > x) == (x > 0)  # (away from zero: the magnitude's bits grow)
    step = where(up, 1, -1).to(bits.dtype)
    moved = (bits + step).view(dtype)
    least = -(2 ** (width - 1)) + 1  # (-0.0's bits, plus 1)
    tiny = where(y > 0, 1, least).to(bits.dtype).view(dtype)  # (the least subnormal, y's sign)
    out = where(x == 0, tiny, moved)
    out = where(x == y, y, out)
    out = where(x.isnan() | y.isnan(), float("nan"), out)
    if not (grad_mode.state.enabled and (input.requires_grad or other.requires_grad)
            or _has_tangent(input) or _has_tangent(other)):
        return out
    # The gradient as PyTorch's: all of it to ``input`` where it differs from ``other`` (NaN
    # included), none where they are equal, zeros to ``other``; the values are ``out``'s,
    # written over the product in no-grad mode (an infinite input times 0 is NaN).
    carried = input.to(dtype) * (x != y).to(dtype) + other.to(dtype) * 0
    if not _has_tangent(carried):
        with grad_mode.no_grad():
            carried.copy_(out)
        return carried
    from ..autograd import forward_ad

    tangents = forward_ad.tangents_of(carried)
    with grad_mode.no_grad():
        carried.copy_(out)
    forward_ad.restride_tangents(carried, tangents)  # (the product's, which the copy replaced)
    return carried


nextafter_ = export(_inplace(nextafter), "nextafter_", function=False, method=True)
