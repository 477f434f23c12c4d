"""Turning operands (tensors and Python scalars) into arrays of one result dtype."""
from __future__ import annotations

import numbers

import numpy as np

from .._dtype import FLOAT, default_for_category, from_numpy_dtype, result_type, scalar_category
from .._dtype import float_number
from .. import _lowp
from ..tensor import Tensor
from .registry import kernels_of

_SCALARS = (bool, int, float, complex, np.bool_, np.integer, np.floating, np.complexfloating)


def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    """The broadcast shape of ``a`` and ``b``, with PyTorch's error when they do not broadcast."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def binary_operands(a, b, floating: bool = False):
    """The arrays of ``a`` and ``b`` (tensors or scalars) in their common dtype, PyTorch's way.
    ``floating`` makes an integer result the default float dtype (true division)."""
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    if ta and tb:
        da, db = a._data, b._data
        broadcast_shapes(da.shape, db.shape)
        if da.dtype == db.dtype and (not floating or da.dtype.kind == "f"):
            return da, db
        dims = [t.dtype for t in (a, b) if t._data.ndim]
        zero = [t.dtype for t in (a, b) if not t._data.ndim]
        dt = result_type(dims, zero, ())
    elif ta or tb:
        t, s = (a, b) if ta else (b, a)
        data = t._data
        if (type(s) is float or type(s) is int) and data.dtype.kind == "f" and not floating:
            # The most common mixed case (x * 0.5), decided without the general rules.
            scalar = data.dtype.type(s) if -65504.0 <= s <= 65504.0 else float_number(data.dtype, s)
            return (data, scalar) if ta else (scalar, data)
        if not isinstance(s, _SCALARS):
            raise TypeError(f"unsupported operand type: {type(s).__name__}")
        dt = result_type((t.dtype,), (), (s,))
    else:
        raise TypeError("expected at least one Tensor operand")
    if floating and dt._category < FLOAT:
        dt = default_for_category(FLOAT)
    return _as(a, dt.np), _as(b, dt.np)


def floating_operand(t: Tensor) -> np.ndarray:
    """The data of ``t``, made the default float dtype if it is an integer or bool tensor."""
    d = t._data
    return d if d.dtype.kind in "fcV" else cast_data(d, default_for_category(FLOAT).np)


def cast_data(d, np_dtype):
    """Array data (host or device) converted to ``np_dtype``."""
    return kernels_of(d).cast(d, np_dtype)


def _as(x, np_dtype):
    """A tensor's data in ``np_dtype``, or a number as a NumPy scalar of it (``number_as``)."""
    if isinstance(x, Tensor):
        d = x._data
        return d if d.dtype == np_dtype else cast_data(d, np_dtype)
    return number_as(x, np_dtype)


_INT64_MIN, _UINT64_END = -(1 << 63), 1 << 64


def int_in_range(x: int) -> None:
    """PyTorch's errors for a Python integer that no Scalar holds (beyond int64 and uint64)."""
    if x >= _UINT64_END:
        raise OverflowError("int too big to convert")
    if x < _INT64_MIN:
        raise OverflowError("can't convert negative int to unsigned")


def number_as(x, np_dtype):
    """A Python number as a NumPy scalar of ``np_dtype``, as PyTorch converts an operand: an
    integer the dtype cannot hold wraps around (int8's ``x + 1000`` adds -24, ``x == 1000``
    compares with -24), one that neither int64 nor uint64 holds raises PyTorch's OverflowError.
    (The ops that write a number, ``fill_``, ``clamp``, ``where``..., check it first:
    ``creation.check_scalar``.)"""
    if type(x) is int and not _INT64_MIN <= x < _UINT64_END:
        int_in_range(x)
    if np_dtype.kind in "fV" and isinstance(x, (int, float)) and not -65504.0 <= x <= 65504.0:
        return float_number(np_dtype if np_dtype.kind == "f" else np.dtype(np.float32), x)
    try:
        if np_dtype.kind == "V":  # (bfloat16: its value, rounded as PyTorch converts the number
            #                        to the tensor's dtype, as a float32 that NumPy reads)
            return _lowp.to_float(_lowp.f32_to_bf16(np.float32(x)))[()]
        return np_dtype.type(x)
    except OverflowError:
        if not isinstance(x, numbers.Integral) or np_dtype.kind not in "iu":
            raise
        bits = 8 * np_dtype.itemsize
        x = int(x) & ((1 << bits) - 1)
        if np_dtype.kind == "i" and x >> (bits - 1):
            x -= 1 << bits
        return np_dtype.type(x)


def as_tensor_dtype(x, like: Tensor):
    return from_numpy_dtype(x.dtype) if isinstance(x, np.ndarray) else like.dtype


def half_number(a, b, other):
    """``b``, the operand ``binary_operands`` made of ``other``, as PyTorch's CPU mul, true
    division and the rounding divisions (``div(rounding_mode=)``, ``floor_divide``) take a real
    number on the right of a float16 or bfloat16 tensor ``a``: in float32, their opmath type
    (``binary_operands`` converts it to the tensor's dtype, as add, sub, the comparisons...
    do). A float32 number beside a narrow array: ``registry.apply`` computes in
    float32 and rounds the result to the array's dtype."""
    if isinstance(other, Tensor) or getattr(a, "dtype", None) is None or \
            a.dtype.char not in "eV" or not isinstance(other, (int, float, np.number)) or \
            isinstance(other, np.complexfloating):
        return b
    return np.float32(other) if -65504.0 <= other <= 65504.0 else \
        float_number(np.dtype(np.float32), other)


def half_value(value, np_dtype) -> float:
    """The real number ``value`` converted to float16 or bfloat16 (``np_dtype``) as PyTorch
    converts a double: through float32 (1 + 2**-11 + 2**-40 is 1 in float16, where NumPy's
    float16 of it is 1.001), beyond the range +-inf; its value as a Python float."""
    with np.errstate(over="ignore"):
        single = np.float32(float(value))
    if np_dtype.char == "e":
        with np.errstate(over="ignore"):
            return float(np.float16(single))
    return float(_lowp.bf16_to_f32(_lowp.f32_to_bf16(single))[()])


def half_alpha(a, alpha):
    """``alpha`` of add, sub and rsub as PyTorch's CPU kernels take it where the operands' common
    dtype (``a``'s) is float16 or bfloat16: converted to that dtype (``half_value``; one the
    dtype cannot hold refused with PyTorch's error, as ``Scalar::to<Half>()`` refuses it:
    ``creation.check_scalar``, the check of every number written into a tensor), as a Python
    float. None for other dtypes and for a bool or complex alpha, which take the general path."""
    if getattr(a, "dtype", None) is None or a.dtype.char not in "eV" or \
            isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
        return None
    from ..creation import check_scalar  # (creation imports this module)
    check_scalar(alpha, a.dtype)
    return half_value(float(alpha), a.dtype)
