"""Signs and NaN-ignoring extrema, composed of other ops (no node of their own): ``sgn``,
``signbit``, ``copysign``, ``heaviside``, ``fmax`` and ``fmin``.
"""
from __future__ import annotations

from .._dtype import torch_name
from ..tensor import Tensor
from ._names import export
from .elementwise import where
from ._common import _as_tensor_like, _inplace, _ng, _tensor_only
from typing import TYPE_CHECKING
from .elementwise import sign, maximum, minimum
from .complex import sgn as complex_sgn

if TYPE_CHECKING:
    from .._typing import TensorBinaryOp


@export(method=True)
def sgn(input: Tensor) -> Tensor:
    """The sign: ``z / |z|`` of a complex element (0 at 0), ``sign`` of a real one."""
    if input.dtype.is_complex:
        return complex_sgn(input)

    return sign(input)


@export(method=True)
def signbit(input: Tensor) -> Tensor:
    """Whether each element's sign bit is set: negative numbers and -0.0 (a bool tensor)."""
    if not input.dtype.is_floating_point:
        return input < 0
    return (input < 0) | ((input == 0) & (input.detach().reciprocal() < 0))


@export(method=True)
def copysign(input, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (its sign bit: -0.0 counts as negative), in a float
    dtype; the gradient reaches ``input`` (0 where it is 0)."""
    ng = _ng()
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dtype = ng.result_type(input, other)
    if dtype.is_complex:
        raise NotImplementedError(f"\"copysign_cpu\" not implemented for "
                                  f"'{torch_name(dtype.np)}'")
    if not dtype.is_floating_point:
        dtype = ng.get_default_dtype()
    other = _as_tensor_like(other, input)
    negative = signbit(other)
    magnitude = input.to(dtype).abs()
    return where(negative, -magnitude, magnitude)


def _nan_ignoring(name: str, keep_first):
    def fn(input: Tensor, other: Tensor) -> Tensor:
        _tensor_only(name, input, other)
        if not (input.dtype.is_floating_point or other.dtype.is_floating_point):
            return (maximum if name == "fmax" else minimum)(input, other)
        # (PyTorch's gradient: all of it to ``input`` where it is kept, ties included)
        return where(keep_first(input, other) | other.isnan(), input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The elementwise {'maximum' if name == 'fmax' else 'minimum'}, ignoring NaN "
                  "(NaN only where both are NaN).")
    return fn


fmax: TensorBinaryOp = export(_nan_ignoring("fmax", lambda a, b: a >= b), "fmax", method=True)
fmin: TensorBinaryOp = export(_nan_ignoring("fmin", lambda a, b: a <= b), "fmin", method=True)


@export(method=True)
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where ``input`` < 0, ``values`` where it is 0, 1 where > 0 (not differentiable)."""
    _tensor_only("heaviside", input, values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    x, v = input.detach(), values.detach()
    return where(x == 0, v, (x > 0).to(x.dtype))


sgn_ = export(_inplace(sgn, saves_self=True), "sgn_", function=False, method=True)
copysign_ = export(_inplace(copysign, saves_self=True), "copysign_", function=False, method=True)
heaviside_ = export(_inplace(heaviside), "heaviside_", function=False, method=True)
