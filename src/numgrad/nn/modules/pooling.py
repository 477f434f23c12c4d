"""Pooling layers, as PyTorch's: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``,
``AdaptiveAvgPool1d/2d/3d`` and ``AdaptiveMaxPool1d/2d``, each calling its
``numgrad.nn.functional`` form, with PyTorch's attributes and ``extra_repr``. Each family is one
class body (``_MaxPoolNd`` ...), the dimension's classes naming their functional form
(``_functional``)."""
from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from .module import Module


def _single(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


class _MaxPoolNd(Module):
    _functional = ""  # (the name of the ``F`` form)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        return getattr(F, self._functional)(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over a (C, L) or (N, C, L) input."""

    _functional = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over a (C, H, W) or (N, C, H, W) input."""

    _functional = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over a (C, D, H, W) or (N, C, D, H, W) input."""

    _functional = "max_pool3d"


class _AvgPoolNd(Module):
    """The 2-D and 3-D average poolings' body (``AvgPool1d`` has no ``divisor_override``)."""

    _functional = ""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._functional)(input, self.kernel_size, self.stride, self.padding,
                                            self.ceil_mode, self.count_include_pad,
                                            self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling over a (C, L) or (N, C, L) input."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        Module.__init__(self)
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over a (C, H, W) or (N, C, H, W) input."""

    _functional = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over a (C, D, H, W) or (N, C, D, H, W) input."""

    _functional = "avg_pool3d"


class _AdaptiveAvgPoolNd(Module):
    _functional = ""

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._functional)(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Adaptive 1-D average pooling to ``output_size``."""

    _functional = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Adaptive 2-D average pooling to ``output_size`` (an int, or a pair; None keeps that
    dimension's size)."""

    _functional = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Adaptive 3-D average pooling to ``output_size`` (an int, or a triple; None keeps that
    dimension's size)."""

    _functional = "adaptive_avg_pool3d"


class _AdaptiveMaxPoolNd(Module):
    _functional = ""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return getattr(F, self._functional)(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Adaptive 1-D max pooling to ``output_size``."""

    _functional = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Adaptive 2-D max pooling to ``output_size``."""

    _functional = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Adaptive 3-D max pooling to ``output_size``."""

    _functional = "adaptive_max_pool3d"


class _MaxUnpoolNd(Module):
    """The partial inverse of max pooling (``F.max_unpool1d/2d/3d``)."""

    _functional = ""

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return getattr(F, self._functional)(input, indices, self.kernel_size, self.stride,
                                            self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _functional = "max_unpool1d"


class MaxUnpool2d(_MaxUnpoolNd):
    _functional = "max_unpool2d"


class MaxUnpool3d(_MaxUnpoolNd):
    _functional = "max_unpool3d"


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling (``F.fractional_max_pool2d/3d``) to ``output_size`` or
    ``output_ratio``, fresh random window positions each call unless ``_random_samples``."""

    _functional = ""

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, "
                             "or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor):
        return getattr(F, self._functional)(input, self.kernel_size, self.output_size,
                                            self.output_ratio, self.return_indices,
                                            _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _functional = "fractional_max_pool2d"


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _functional = "fractional_max_pool3d"
