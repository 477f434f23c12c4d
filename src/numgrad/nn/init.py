"""Parameter initialisation, as ``torch.nn.init``: each function fills a tensor in place (under
``no_grad``, bumping its version) and returns it. Random values come from numgrad's Philox
generator (the default one, or a ``numgrad.Generator`` passed as ``generator``), so
``numgrad.manual_seed`` makes them reproducible (they are not PyTorch's numbers: the generators
differ); a NumPy ``Generator`` may be passed as ``generator`` instead, and is drawn from."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor
from ..random import _philox_draw

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "orthogonal_", "trunc_normal_", "dirac_",
]


def _fill(tensor: Tensor, values) -> Tensor:
    """Writes ``values`` (an array or a number) into ``tensor`` in place, without recording."""
    with grad_mode.no_grad():
        tensor.copy_(Tensor._wrap(np.asarray(values, dtype=tensor._data.dtype)))
    return tensor


def _uniform(generator, low: float, high: float, shape) -> np.ndarray:
    """Float64 values uniform in [low, high) from ``generator``, for fills computed on the host:
    a NumPy ``Generator``'s own, else (None, a ``numgrad.Generator``) Philox's."""
    if isinstance(generator, np.random.Generator):
        return generator.uniform(low, high, shape)
    drawn = _philox_draw(generator, tuple(shape), np.float64, device="cpu")
    return np.asarray(drawn) * (high - low) + low


def _normal(generator, mean: float, std: float, shape) -> np.ndarray:
    """Float64 values of N(mean, std²) from ``generator`` (as ``_uniform``)."""
    if isinstance(generator, np.random.Generator):
        return generator.normal(mean, std, shape)
    return np.asarray(_philox_draw(generator, tuple(shape), np.float64, True, "cpu")) * std + mean


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
    """Fills ``tensor`` with values drawn from U(a, b) (as PyTorch: ``tensor.uniform_`` under
    ``no_grad``, so a compiled function replays it)."""
    if isinstance(generator, np.random.Generator):
        return _fill(tensor, generator.uniform(a, b, tensor.shape))
    with grad_mode.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from N(mean, std²) (``tensor.normal_`` under
    ``no_grad``, as ``uniform_``)."""
    if isinstance(generator, np.random.Generator):
        return _fill(tensor, generator.normal(mean, std, tensor.shape))
    with grad_mode.no_grad():
        return tensor.normal_(mean, std, generator=generator)


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


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fills ``tensor`` (2-D or more, flattened to ``(rows, rest)``) with a (semi-)orthogonal
    matrix: the Q of a QR decomposition of a normal draw, its columns' signs fixed by R's
    diagonal, as PyTorch, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = _normal(generator, 0.0, 1.0, (rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r, 0))
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tensor.shape))


def _erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function, by Newton's method on ``math.erf`` from Giles' single
    precision starting point (accurate to a few ulps in float64)."""
    y = np.asarray(y, np.float64)
    w = -np.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws = w - 2.5
    wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
    ps = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        ps = c + ps * ws
    pl = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        pl = c + pl * wl
    x = np.where(small, ps, pl) * y
    erf = np.vectorize(math.erf, otypes=[np.float64])
    for _ in range(3):
        x = x - (erf(x) - y) / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    return x


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from N(mean, std²) truncated to ``[a, b]`` (by
    inverting the normal CDF on a uniform draw, as PyTorch)."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    lo = norm_cdf((a - mean) / std)
    hi = norm_cdf((b - mean) / std)
    u = _uniform(generator, 2 * lo - 1, 2 * hi - 1, tensor.shape)
    values = _erfinv(u) * (std * math.sqrt(2.0)) + mean
    return _fill(tensor, np.clip(values, a, b))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-D ``tensor`` with the Dirac delta: a convolution with it keeps its
    input's channels (per group of ``groups``)."""
    dimensions = tensor.ndim
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            values[(g * out_chans_per_grp + d, d) + centre] = 1
    return _fill(tensor, values)
