"""``Conv1d``, ``Conv2d``, ``Conv3d`` and ``ConvTranspose1d/2d/3d``, as PyTorch's ``_ConvNd``
subclasses: the same arguments, checks and messages, attributes, initialisation and
``extra_repr`` (the transposed ones' ``forward`` takes PyTorch's ``output_size``); and ``Fold``
and ``Unfold``."""
from __future__ import annotations

import collections.abc
import math
from itertools import repeat

from ...creation import empty
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _ntuple(n: int, name: str):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """``(1, 2)`` -> ``(2, 2, 1, 1)`` for n=2: F.pad's order (last dimension first)."""
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    """The shared part of ``Conv1d`` and ``Conv2d`` (PyTorch's ``_ConvNd``)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple,
                 padding, dilation: tuple, transposed: bool, output_padding: tuple, groups: int,
                 bias: bool, padding_mode: str, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialisation, drawn from numgrad's generator: ``kaiming_uniform_(weight,
        a=sqrt(5))`` (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), and the bias from the same range."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**{name: getattr(self, name) for name in (
            "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
            "output_padding", "groups", "padding_mode")})

    def _padded(self, input: Tensor) -> Tensor:
        """The input padded by ``padding_mode`` (not 'zeros'), as PyTorch does before a
        convolution without padding (F.pad)."""
        pad = getattr(F, "pad", None)
        if pad is None:
            raise NotImplementedError(
                f"padding_mode={self.padding_mode!r} needs F.pad, which numgrad does not have "
                "yet; use padding_mode='zeros'")
        return pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)


class Conv1d(_ConvNd):
    """A 1-D convolution over ``(N, C_in, L)`` (or ``(C_in, L)``) inputs: ``weight`` is
    ``(out_channels, in_channels / groups, kernel_size)``, ``bias`` ``(out_channels,)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        kernel_size_ = _single(kernel_size)
        stride_ = _single(stride)
        padding_ = padding if isinstance(padding, str) else _single(padding)
        dilation_ = _single(dilation)
        super().__init__(in_channels, out_channels, kernel_size_, stride_, padding_, dilation_,
                         False, _single(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv1d(self._padded(input), weight, bias, self.stride, _single(0),
                            self.dilation, self.groups)
        return F.conv1d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """A 2-D convolution over ``(N, C_in, H, W)`` (or ``(C_in, H, W)``) inputs: ``weight`` is
    ``(out_channels, in_channels / groups, kh, kw)``, ``bias`` ``(out_channels,)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        kernel_size_ = _pair(kernel_size)
        stride_ = _pair(stride)
        padding_ = padding if isinstance(padding, str) else _pair(padding)
        dilation_ = _pair(dilation)
        super().__init__(in_channels, out_channels, kernel_size_, stride_, padding_, dilation_,
                         False, _pair(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv2d(self._padded(input), weight, bias, self.stride, _pair(0),
                            self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """A 3-D convolution over ``(N, C_in, D, H, W)`` (or ``(C_in, D, H, W)``) inputs: ``weight``
    is ``(out_channels, in_channels / groups, kd, kh, kw)``, ``bias`` ``(out_channels,)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        kernel_size_ = _triple(kernel_size)
        stride_ = _triple(stride)
        padding_ = padding if isinstance(padding, str) else _triple(padding)
        dilation_ = _triple(dilation)
        super().__init__(in_channels, out_channels, kernel_size_, stride_, padding_, dilation_,
                         False, _triple(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv3d(self._padded(input), weight, bias, self.stride, _triple(0),
                            self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    """The shared part of the transposed convolutions (PyTorch's ``_ConvTransposeNd``): only
    zero padding, and the output padding that gives a requested ``output_size``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         transposed, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size, stride, padding, kernel_size,
                        num_spatial_dims: int, dilation=None) -> list:
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(
                f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must "
                f"have {num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements "
                f"(got {len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1)
                        + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{min_sizes} to {max_sizes} (for an input of "
                    f"torch.Size({list(input.shape[2:])}))")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def _transposed_forward(self, fn, input: Tensor, output_size, dims: int) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError(
                f"Only `zeros` padding mode is supported for ConvTranspose{dims}d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, dims, self.dilation)
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """A 1-D transposed convolution over ``(N, C_in, L)`` (or ``(C_in, L)``) inputs: ``weight``
    is ``(in_channels, out_channels / groups, kernel_size)``, ``bias`` ``(out_channels,)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         _single(padding), _single(dilation), True, _single(output_padding),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        return self._transposed_forward(F.conv_transpose1d, input, output_size, 1)


class ConvTranspose2d(_ConvTransposeNd):
    """A 2-D transposed convolution over ``(N, C_in, H, W)`` (or ``(C_in, H, W)``) inputs:
    ``weight`` is ``(in_channels, out_channels / groups, kh, kw)``, ``bias``
    ``(out_channels,)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         _pair(padding), _pair(dilation), True, _pair(output_padding), groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        return self._transposed_forward(F.conv_transpose2d, input, output_size, 2)


class ConvTranspose3d(_ConvTransposeNd):
    """A 3-D transposed convolution over ``(N, C_in, D, H, W)`` (or ``(C_in, D, H, W)``)
    inputs: ``weight`` is ``(in_channels, out_channels / groups, kd, kh, kw)``, ``bias``
    ``(out_channels,)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         _triple(padding), _triple(dilation), True, _triple(output_padding),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        return self._transposed_forward(F.conv_transpose3d, input, output_size, 3)


class Fold(Module):
    """Sums sliding blocks ``(N, C*prod(kernel_size), L)`` into ``(N, C, *output_size)``
    (``F.fold``)."""

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """The sliding blocks of ``(N, C, H, W)`` inputs as columns ``(N, C*prod(kernel_size), L)``
    (``F.unfold``)."""

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
