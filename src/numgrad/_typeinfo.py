"""Dtype introspection with PyTorch's names and results: ``finfo``, ``iinfo``, ``result_type``,
``promote_types``, ``can_cast`` (over numgrad's dtypes)."""
from __future__ import annotations

import numbers

import numpy as np

from . import _dtype
from ._dtype import BOOL, FLOAT, INT, dtype
from .tensor import Tensor


def _as_dtype(d, what: str) -> dtype:
    if not isinstance(d, dtype):
        raise TypeError(f"{what}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{type(d).__name__}")
    return d


class finfo:
    """The numerical properties of a floating-point dtype, as ``torch.finfo``: ``bits``, ``eps``,
    ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution`` and ``dtype`` (its name)."""

    def __init__(self, type=None):
        if type is None:
            type = _dtype.get_default_dtype()
        if not isinstance(type, dtype) or type._category not in (FLOAT, _dtype.COMPLEX):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        type = type.to_real()  # (a complex dtype's: its parts')
        if type.name == "bfloat16":  # (NumPy has none: 8 exponent bits as float32, 7 mantissa)
            self.bits, self.eps, self.max = 16, 2.0 ** -7, float.fromhex("0x1.fep127")
            self.min, self.tiny = -self.max, 2.0 ** -126
            self.smallest_normal, self.resolution = self.tiny, 0.01
        else:
            info = np.finfo(type.np)
            self.bits = int(info.bits)
            self.eps = float(info.eps)
            self.max = float(info.max)
            self.min = float(info.min)
            self.tiny = self.smallest_normal = float(info.smallest_normal)
            self.resolution = 10.0 ** -int(info.precision)  # (PyTorch's: a Python float)
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The range of an integer dtype, as ``torch.iinfo``: ``bits``, ``max``, ``min`` and
    ``dtype`` (its name)."""

    def __init__(self, type):
        if isinstance(type, dtype) and type._category == BOOL:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, dtype) or type._category != INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"


def promote_types(type1, type2) -> dtype:
    """The smallest dtype to which both ``type1`` and ``type2`` can be cast without losing their
    category (bool < integers < floating point)."""
    return _dtype.promote_types(_as_dtype(type1, "promote_types"),
                                _as_dtype(type2, "promote_types"))


def result_type(tensor1, tensor2) -> dtype:
    """The dtype of an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or numbers), by
    PyTorch's promotion: tensors with dimensions first, then 0-d tensors, then numbers."""
    dimensioned, zero_dim, scalars = [], [], []
    for x in (tensor1, tensor2):
        if isinstance(x, Tensor):
            (dimensioned if x.ndim else zero_dim).append(x.dtype)
        elif isinstance(x, (numbers.Number, np.generic)):
            scalars.append(x)
        else:
            raise TypeError(f"result_type(): argument 'other' must be Tensor or Number, not "
                            f"{type(x).__name__}")
    if not dimensioned and not zero_dim:
        # Two numbers: each counts as a 0-d tensor of its default dtype (int64, the default
        # float dtype, bool).
        zero_dim = [_dtype.default_for_category(_dtype.scalar_category(s)) for s in scalars]
        scalars = []
    return _dtype.result_type(dimensioned, zero_dim, scalars)


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow an in-place op to store ``from_`` into ``to``: not
    into a lower category (complex into real, floating point into an integer, anything but bool
    into bool)."""
    a = _as_dtype(from_, "can_cast")
    b = _as_dtype(to, "can_cast")
    return a._category <= b._category


__all__ = ["can_cast", "finfo", "iinfo", "promote_types", "result_type"]
