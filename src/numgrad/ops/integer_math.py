"""Integer arithmetic: ``gcd`` and ``lcm`` of integer tensors (broadcast, in their promoted
dtype), by Euclid's algorithm run on the whole tensor at once (until every remainder is 0: at
most ~90 rounds for int64)."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .._dtype import torch_name
from ._names import export
from ._promote import binary_operands
from .._dtype import from_numpy_dtype
from .elementwise import where


def _operands(name: str, input, other):
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")
    a, _ = binary_operands(input, other)
    kind = np.dtype(a.dtype)
    if kind.kind not in "iu":
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{torch_name(kind)}\'')

    dtype = from_numpy_dtype(kind)
    return input.detach().to(dtype), other.detach().to(dtype)


def _gcd(a: Tensor, b: Tensor) -> Tensor:
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    a, b = a.abs().broadcast_to(shape).contiguous(), b.abs().broadcast_to(shape).contiguous()
    while b.numel() and bool((b != 0).any()):
        nonzero = b != 0
        a, b = where(nonzero, b, a), where(nonzero, a % where(nonzero, b, 1), 0)
    return a


@export(method=True)
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of each pair (non-negative; ``gcd(0, 0) = 0``)."""
    return _gcd(*_operands("gcd", input, other))


@export(method=True)
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of each pair (non-negative; 0 where either is 0)."""
    a, b = _operands("lcm", input, other)
    g = _gcd(a, b)
    return (a // where(g == 0, 1, g) * b).abs()


@export(method=True)
def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """``gcd`` in place."""
    return input.copy_(gcd(input, other))


@export(method=True)
def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """``lcm`` in place."""
    return input.copy_(lcm(input, other))
