"""Activation modules: ``ReLU``, ``Tanh``, ``Sigmoid``, ``Softmax``, ``LogSoftmax``."""
from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from .module import Module


class ReLU(Module):
    """``max(0, x)`` elementwise; ``inplace=True`` overwrites the input."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """The hyperbolic tangent, elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    """The logistic sigmoid ``1 / (1 + exp(-x))``, elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
