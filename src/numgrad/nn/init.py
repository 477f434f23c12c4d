"""Parameter initialisation, as ``torch.nn.init``: each function fills a tensor in place (under
``no_grad``, bumping its version) and returns it. Random values come from numgrad's generator, so
``numgrad.manual_seed`` makes them reproducible (they are not PyTorch's numbers: the generators
differ); a NumPy ``Generator`` may be passed as ``generator`` instead."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import creation
from ..autograd import grad_mode
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
]


def _fill(tensor: Tensor, values) -> Tensor:
    """Writes ``values`` (an array or a number) into ``tensor`` in place, without recording."""
    with grad_mode.no_grad():
        tensor.copy_(Tensor._wrap(np.asarray(values, dtype=tensor._data.dtype)))
    return tensor


def _generator(generator) -> np.random.Generator:
    return creation._rng if generator is None else generator


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = int(np.prod(shape[2:], dtype=np.int64))
    return shape[1] * receptive_field, shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of {['fan_in', 'fan_out']}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from U(a, b)."""
    return _fill(tensor, _generator(generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from N(mean, std²)."""
    return _fill(tensor, _generator(generator).normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    return _fill(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros."""
    return _fill(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones."""
    return _fill(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D ``tensor`` with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot initialisation: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot initialisation: N(0, std²) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity) -> float | None:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He initialisation: U(-bound, bound) with ``bound = gain * sqrt(3 / fan)``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He initialisation: N(0, std²) with ``std = gain / sqrt(fan)``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)
