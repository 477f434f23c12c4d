"""``Linear`` (``y = x A^T + b``) and ``Identity``."""
from __future__ import annotations

import math

from ...creation import empty
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored, as PyTorch)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """Applies ``y = x A^T + b``: ``weight`` is ``(out_features, in_features)``, ``bias``
    ``(out_features,)``, both initialised as PyTorch does, from U(-1/sqrt(in_features),
    1/sqrt(in_features)) drawn with numgrad's generator (so ``numgrad.manual_seed`` fixes them)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialisation: ``kaiming_uniform_(weight, a=sqrt(5))``, which is
        U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same range."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
