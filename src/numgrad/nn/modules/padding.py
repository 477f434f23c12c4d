"""Padding layers, as PyTorch's: ``ConstantPad1d/2d/3d``, ``ZeroPad1d/2d/3d``,
``ReflectionPad1d/2d/3d``, ``ReplicationPad1d/2d/3d`` and ``CircularPad1d/2d/3d``, each
``numgrad.nn.functional.pad`` with its mode, with PyTorch's ``padding`` tuples and
``extra_repr``."""
from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from .module import Module


def _ntuple(n: int, v) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


class _ConstantPadNd(Module):
    n = 2

    def __init__(self, padding, value: float) -> None:
        super().__init__()
        self.padding = _ntuple(self.n, padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with ``value``."""

    n = 2


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with ``value``."""

    n = 4


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions with ``value``."""

    n = 6


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dimensions with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ModePadNd(Module):
    n = 2
    mode = "reflect"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(self.n, padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pads the last dimension with the reflection of the input about its edges."""

    n, mode = 2, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pads the last two dimensions with the reflection of the input about its edges."""

    n, mode = 4, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pads the last three dimensions with the reflection of the input about its edges."""

    n, mode = 6, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pads the last dimension by repeating its edge elements."""

    n, mode = 2, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pads the last two dimensions by repeating their edge elements."""

    n, mode = 4, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pads the last three dimensions by repeating their edge elements."""

    n, mode = 6, "replicate"


class CircularPad1d(_ModePadNd):
    """Pads the last dimension by wrapping it around."""

    n, mode = 2, "circular"


class CircularPad2d(_ModePadNd):
    """Pads the last two dimensions by wrapping them around."""

    n, mode = 4, "circular"


class CircularPad3d(_ModePadNd):
    """Pads the last three dimensions by wrapping them around."""

    n, mode = 6, "circular"
