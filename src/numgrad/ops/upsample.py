"""Interpolation and pixel shuffling: ``F.interpolate`` (``upsample``) in its 'nearest',
'nearest-exact', 'linear', 'bilinear', 'trilinear' and 'bicubic' modes ('area' is adaptive
average pooling, as in PyTorch), ``F.pixel_shuffle`` and ``F.pixel_unshuffle``, with PyTorch's
signatures, checks, messages and node names.

Each ATen op (``upsample_nearest2d``, ``upsample_bilinear2d``, ``_upsample_nearest_exact1d`` ...)
is one declaration, generated below for its mode and rank, with its backward as an op of its
own (``upsample_nearest2d_backward``: node ``UpsampleNearest2DBackwardBackward0`` when
differentiated), so that every order of derivative is recorded: interpolation is linear, and
the derivative of its backward with respect to the gradient is the interpolation itself. The
kernels (``kernels/*/upsample.py``, reached as ``K.pooling.interpolate``) compute PyTorch's
source indices and weights per dimension, in the input's precision. The dtypes are PyTorch's CPU
kernels' (float16 and bfloat16 computed in float32; uint8 images in the nearest modes, bilinear,
bicubic and anti-aliased bilinear, resized in fixed point as PyTorch's), and so are its messages
refusing the others.

``pixel_shuffle`` (``PixelShuffleBackward0``) and ``pixel_unshuffle`` (``PixelUnshuffleBackward0``)
are each the other's adjoint: a reshape, a permutation and a copy, in the layout kernels.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import _lowp, _threads
from .._dtype import torch_name
from ..tensor import Tensor
from . import _jvp
from ._names import alias, export
from .registry import Op, Sample, apply, kernels_for, register
from . import pooling

NEAREST, NEAREST_EXACT, LINEAR, CUBIC = 0, 1, 2, 3  # kernels/cpu/upsample.py's modes


def _F(m):
    return m.nn.functional


class _UpsampleForward(Op):
    """An interpolation: ``x`` (N, C, *in_size) resampled to ``out_size`` (``mode``: the
    kernels' mode; ``scales``: the user's scale factors, or None each)."""

    jvp = _jvp.linear
    on_cuda = True

    @staticmethod
    def forward(K, x, *, out_size, in_size, mode, align_corners, scales):
        return K.pooling.interpolate(x, tuple(out_size), mode, align_corners, tuple(scales))


class _UpsampleBackward(Op):
    """The gradient of an interpolation: each output's gradient, times its weights, added to
    its sources. Linear in ``grad``; its adjoint is the interpolation."""

    jvp = _jvp.linear
    on_cuda = True

    @staticmethod
    def forward(K, grad, *, out_size, in_size, mode, align_corners, scales):
        return K.pooling.interpolate_backward(grad, tuple(in_size), mode, align_corners,
                                              tuple(scales))


_FORWARD: dict = {}  # (mode, spatial dims): the registered op


def _params(p: dict) -> dict:
    return {k: p[k] for k in ("out_size", "in_size", "mode", "align_corners", "scales")}


def _make(aten: str, node: str, mode: int, dims: int, samples, backward_samples) -> None:
    """Registers ``aten`` (node ``node``) and ``aten + '_backward'``."""

    def forward_backward(ctx, grad):
        return (apply(back, (grad,), (grad._data,), **_params(ctx.params)),)

    def backward_backward(ctx, grad):
        return (apply(fwd, (grad,), (grad._data,), **_params(ctx.params)),)

    fwd = type(aten.title().replace("_", ""), (_UpsampleForward,), {
        "name": aten, "node": node, "samples": samples,
        "backward": staticmethod(forward_backward), "dims": dims, "mode": mode})
    back = type(aten.title().replace("_", "") + "Backward", (_UpsampleBackward,), {
        "name": aten + "_backward", "node": node.replace("Backward0", "BackwardBackward0"),
        "samples": backward_samples, "backward": staticmethod(backward_backward)})
    register(fwd)
    register(back)
    _FORWARD[(mode, dims)] = fwd


def _grad_sample(mode: str, shape, out_shape, **kw):
    """A sample of the backward op: the gradient of ``interpolate`` with ``create_graph``."""
    def call(m, x, v):
        y = _F(m).interpolate(x, mode=mode, **kw)
        return m.autograd.grad(y, x, v, create_graph=True)[0]

    return Sample(call, (shape, out_shape), gradgrad=False)


def _sample(mode: str, shape, **kw):
    return Sample(lambda m, x: _F(m).interpolate(x, mode=mode, **kw), (shape,), gradgrad=False)


_make("upsample_nearest1d", "UpsampleNearest1DBackward0", NEAREST, 1,
      (_sample("nearest", (2, 2, 3), scale_factor=2), _sample("nearest", (1, 2, 5), size=3)),
      (_grad_sample("nearest", (1, 2, 3), (1, 2, 7), size=7),))
_make("upsample_nearest2d", "UpsampleNearest2DBackward0", NEAREST, 2,
      (_sample("nearest", (2, 2, 3, 2), scale_factor=(2, 1.5)),
       _sample("nearest", (1, 2, 4, 5), size=(3, 7))),
      (_grad_sample("nearest", (1, 2, 2, 3), (1, 2, 5, 4), size=(5, 4)),))
_make("upsample_nearest3d", "UpsampleNearest3DBackward0", NEAREST, 3,
      (_sample("nearest", (1, 2, 2, 3, 2), size=(3, 4, 4)),),
      (_grad_sample("nearest", (1, 1, 2, 2, 2), (1, 1, 4, 3, 2), scale_factor=(2, 1.5, 1)),))
_make("_upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0", NEAREST_EXACT, 1,
      (_sample("nearest-exact", (2, 2, 5), size=3),),
      (_grad_sample("nearest-exact", (1, 2, 3), (1, 2, 7), size=7),))
_make("_upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0", NEAREST_EXACT, 2,
      (_sample("nearest-exact", (2, 2, 3, 4), scale_factor=(1.7, 0.6)),),
      (_grad_sample("nearest-exact", (1, 2, 3, 2), (1, 2, 5, 5), size=5),))
_make("_upsample_nearest_exact3d", "UpsampleNearestExact3DBackward0", NEAREST_EXACT, 3,
      (_sample("nearest-exact", (1, 2, 2, 3, 2), size=(3, 2, 5)),),
      (_grad_sample("nearest-exact", (1, 1, 2, 2, 3), (1, 1, 3, 3, 2), size=(3, 3, 2)),))
_make("upsample_linear1d", "UpsampleLinear1DBackward0", LINEAR, 1,
      (_sample("linear", (2, 2, 4), scale_factor=1.75),
       _sample("linear", (1, 2, 5), size=3, align_corners=True)),
      (_grad_sample("linear", (1, 2, 3), (1, 2, 7), size=7),))
_make("upsample_bilinear2d", "UpsampleBilinear2DBackward0", LINEAR, 2,
      (_sample("bilinear", (2, 2, 3, 4), scale_factor=2),
       _sample("bilinear", (1, 2, 4, 5), size=(3, 7), align_corners=True)),
      (_grad_sample("bilinear", (1, 2, 2, 3), (1, 2, 5, 4), size=(5, 4)),))
_make("upsample_trilinear3d", "UpsampleTrilinear3DBackward0", LINEAR, 3,
      (_sample("trilinear", (1, 2, 2, 3, 2), size=(3, 4, 3)),),
      (_grad_sample("trilinear", (1, 1, 2, 2, 2), (1, 1, 3, 3, 2), size=(3, 3, 2),
                    align_corners=True),))
_make("upsample_bicubic2d", "UpsampleBicubic2DBackward0", CUBIC, 2,
      (_sample("bicubic", (2, 2, 3, 4), scale_factor=2),
       _sample("bicubic", (1, 2, 5, 4), size=(3, 7), align_corners=True)),
      (_grad_sample("bicubic", (1, 2, 3, 3), (1, 2, 5, 4), size=(5, 4)),))


# ---------------------------------------------------------------------- anti-aliased
class _Antialiased(Op):
    """Anti-aliased bilinear or bicubic interpolation (``interpolate(..., antialias=True)``;
    kernels in ``kernels/cpu/upsample.py``, CPU only) and its transpose, each the other's
    backward: the interpolation is linear, so every order of derivative is recorded."""

    jvp = _jvp.linear
    adjoint = None  # (the other op, set below)
    cubic = False

    @staticmethod
    def backward(ctx, grad):
        return (apply(ctx.op.adjoint, (grad,), (grad._data,), **ctx.params),)


def _aa_samples(mode: str) -> tuple:
    """The registry's samples of an anti-aliased forward: shrinking to a size, and by scale
    factors (one enlarging) with the corners aligned."""
    return (
        Sample(lambda m, x: _F(m).interpolate(x, size=(3, 7), mode=mode, antialias=True),
               ((2, 2, 9, 5),)),
        Sample(lambda m, x: _F(m).interpolate(x, scale_factor=(0.4, 1.5), mode=mode,
                                              align_corners=True, antialias=True), ((1, 2, 6, 4),)),
    )


class _AntialiasedForward(_Antialiased):
    @classmethod
    def forward(cls, K, x, *, out_size, in_size, align_corners, scales):
        return K.pooling.interpolate_aa(x, out_size, align_corners, scales, cls.cubic)


class _AntialiasedAdjoint(_Antialiased):
    @classmethod
    def forward(cls, K, grad, *, out_size, in_size, align_corners, scales):
        return K.pooling.interpolate_aa_backward(grad, in_size, align_corners, scales, cls.cubic)


@register
class UpsampleBilinear2dAa(_AntialiasedForward):
    """Each output a normalised average of a window of inputs (separable)."""

    name, node = "_upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0"
    samples = _aa_samples("bilinear")


@register
class UpsampleBilinear2dAaBackward(_AntialiasedAdjoint):
    """The gradient: each output's gradient spread over its window, times the weights."""

    name, node = "_upsample_bilinear2d_aa_backward", "UpsampleBilinear2DAaBackwardBackward0"
    samples = (_grad_sample("bilinear", (1, 2, 7, 4), (1, 2, 3, 5), size=(3, 5), antialias=True),)


@register
class UpsampleBicubic2dAa(_AntialiasedForward):
    """Each output a normalised sum of a window of inputs under Keys' cubic (``a = -0.5``),
    stretched by the scale when shrinking (separable)."""

    name, node, cubic = "_upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0", True
    samples = _aa_samples("bicubic")


@register
class UpsampleBicubic2dAaBackward(_AntialiasedAdjoint):
    """The gradient of ``UpsampleBicubic2dAa``."""

    name, node, cubic = ("_upsample_bicubic2d_aa_backward",
                         "UpsampleBicubic2DAaBackwardBackward0", True)
    samples = (_grad_sample("bicubic", (1, 2, 7, 4), (1, 2, 3, 5), size=(3, 5), antialias=True),)


UpsampleBilinear2dAa.adjoint = UpsampleBilinear2dAaBackward
UpsampleBilinear2dAaBackward.adjoint = UpsampleBilinear2dAa
UpsampleBicubic2dAa.adjoint = UpsampleBicubic2dAaBackward
UpsampleBicubic2dAaBackward.adjoint = UpsampleBicubic2dAa


@export(aten=True)
def _upsample_bilinear2d_aa(input: Tensor, output_size, align_corners: bool, scales_h=None,
                            scales_w=None, *, scale_factors=None) -> Tensor:
    """ATen's ``_upsample_bilinear2d_aa`` (``output_size``, ``scales_h``, ``scales_w``) and its
    ``.vec`` overload (``output_size`` or ``scale_factors``, a list in the fourth place)."""
    return _antialiased(UpsampleBilinear2dAa, input, output_size, align_corners, scales_h,
                        scales_w, scale_factors)


@export(aten=True)
def _upsample_bicubic2d_aa(input: Tensor, output_size, align_corners: bool, scales_h=None,
                           scales_w=None, *, scale_factors=None) -> Tensor:
    """ATen's ``_upsample_bicubic2d_aa`` and its ``.vec`` overload, as the bilinear one's."""
    return _antialiased(UpsampleBicubic2dAa, input, output_size, align_corners, scales_h,
                        scales_w, scale_factors)


def _antialiased(op, input, output_size, align_corners, scales_h, scales_w, scale_factors):
    if isinstance(scales_h, (list, tuple)):
        scale_factors, scales_h = scales_h, None
    if scale_factors is not None:
        scales_h, scales_w = (float(v) for v in scale_factors)
    if output_size is None:
        output_size = [int(int(input.shape[2 + i]) * float(v))
                       for i, v in enumerate(scale_factors)]
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size "
                           f"{len(output_size)}")
    if input.ndim != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {input.ndim}")
    out_size = tuple(int(v) for v in output_size)
    in_size = _checked_sizes(input, 2, out_size)
    dtype = input._data.dtype
    if dtype not in _AA_DTYPES and not (out_size == in_size and dtype in _FLOATS):
        if out_size == in_size:  # (PyTorch copies an input of the output's size, any dtype)
            return input.clone()
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for "
                                  f"'{torch_name(dtype)}'")
    kernels_for((input,), op)
    return apply(op, (input,), (input._data,), out_size=out_size,
                 in_size=in_size, align_corners=bool(align_corners),
                 scales=(scales_h, scales_w))


# ---------------------------------------------------------------------- F.interpolate
# The dtypes PyTorch's CPU kernels take: the floating ones, and uint8 images in the nearest modes,
# bilinear and bicubic (2-D), and anti-aliased (float16 and bfloat16 not). (uint8 runs widened to
# int32: the kernels take an integer array for a uint8 image.)
_FLOATS = frozenset(np.dtype(d) for d in ("float16", "float32", "float64")) | {_lowp.BF16}
_UINT8 = np.dtype(np.uint8)
_AA_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64), _UINT8))

_KIND = {"nearest": NEAREST, "nearest-exact": NEAREST_EXACT, "linear": LINEAR,
         "bilinear": LINEAR, "trilinear": LINEAR, "bicubic": CUBIC}
_RANK = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
_NAMES = {NEAREST: "nearest", NEAREST_EXACT: "nearest", LINEAR: "linear", CUBIC: "cubic"}


def _is_integer(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _upsample(input: Tensor, kind: int, dims: int, out_size, scales, align_corners) -> Tensor:
    """ATen's ``upsample_*`` op: its output size (``floor(in * scale)`` without ``size``), its
    checks, then the op."""
    shape = tuple(input._data.shape)
    in_sp = shape[2:]
    if out_size is None:
        out_size = [int(in_sp[i] * float(scales[i])) for i in range(dims)]
        scales = tuple(float(s) for s in scales)
    else:
        out_size = [int(s) for s in out_size]
        scales = (None,) * dims
    _checked_sizes(input, dims, out_size)
    dtype = input._data.dtype
    if not (dtype in _FLOATS or dtype == _UINT8 and (kind in (NEAREST, NEAREST_EXACT)
                                                     or dims == 2)):
        raise NotImplementedError(f"\"{_dispatch_name(input, kind, dims, out_size)}\" not "
                                  f"implemented for '{torch_name(dtype)}'")
    op = _FORWARD[(kind, dims)]
    kernels_for((input,), op)
    return apply(op, (input,), (input._data,), out_size=tuple(out_size), in_size=tuple(in_sp),
                 mode=kind, align_corners=bool(align_corners), scales=tuple(scales))


def _dispatch_name(input: Tensor, kind: int, dims: int, out_size) -> str:
    """The name PyTorch's CPU kernel dispatches a dtype by, in its message refusing one: the
    channels-last kernel's where PyTorch picks it (a channels-last input of more than 3 channels;
    in 2-D also an output of height + width <= 128, and for bilinear a 3-channel input on one
    thread), else the index computation's."""
    a = input._data
    channels = int(a.shape[1])
    if dims == 2:
        vectorized = _channels_last(a) and channels > 3 or sum(out_size) <= 128
        if kind == LINEAR and (vectorized or channels == 3 and _threads.get_num_threads() == 1):
            return "upsample_bilinear2d_channels_last"
        if kind in (NEAREST, NEAREST_EXACT) and vectorized:
            return "upsample_nearest2d_channels_last"
    elif dims == 3 and _channels_last(a) and channels > 3:
        return "upsample_trilinear3d_channels_last" if kind == LINEAR else \
            "upsample_nearest3d_channels_last"
    return f"compute_indices_weights_{_NAMES[kind]}"


def _channels_last(a) -> bool:
    """Whether ``a`` (N, C, *spatial) is contiguous in the channels-last layout, as PyTorch's
    ``is_contiguous(memory_format=channels_last)`` (dimensions of size 1 skipped)."""
    expected = a.itemsize
    for d in (1,) + tuple(range(a.ndim - 1, 1, -1)) + (0,):
        if a.shape[d] != 1:
            if a.strides[d] != expected:
                return False
            expected *= a.shape[d]
    return True


def _checked_sizes(input: Tensor, dims: int, out_size) -> tuple:
    """PyTorch's checks of an interpolation's sizes; the input's spatial size."""
    shape = tuple(input._data.shape)
    in_sp = shape[2:]
    if _prod(shape[1:]) == 0:
        raise RuntimeError(f"Non-empty {dims + 2}D data tensor expected but got a tensor with "
                           f"sizes {_sizes(shape)}")
    if any(s <= 0 for s in in_sp) or any(s <= 0 for s in out_size):
        names = ("D", "H", "W")[3 - dims:]
        a = ", ".join(f"{n}: {v}" for n, v in zip(names, in_sp))
        b = ", ".join(f"{n}: {v}" for n, v in zip(names, out_size))
        sep = " and " if dims == 1 else " "
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({a}){sep}output ({b})")
    return tuple(int(v) for v in in_sp)


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


@export(function=False, functional=True)
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners=None, recompute_scale_factor=None, antialias: bool = False):
    """``input`` (N, C, *spatial) resampled to ``size`` or by ``scale_factor`` in its 1 to 3
    spatial dimensions: PyTorch's ``F.interpolate``, its arguments, checks and messages; modes
    'nearest', 'nearest-exact', 'linear' (3-D input), 'bilinear' and 'bicubic' (4-D),
    'trilinear' (5-D) and 'area' (adaptive average pooling); ``antialias`` with 'bilinear'."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            output_size = list(size)
        else:
            output_size = [size for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                    "format.")
            scale_factors = list(scale_factor)
        else:
            scale_factors = [scale_factor for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [math.floor(float(input.size(i + 2)) * scale_factors[i])
                       for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if antialias and mode in ("bilinear", "bicubic"):
        return (_upsample_bilinear2d_aa if mode == "bilinear" else _upsample_bicubic2d_aa)(
            input, output_size, align_corners, scale_factors=scale_factors)
    if antialias:
        raise NotImplementedError(f"numgrad's interpolate has no antialias for mode '{mode}' yet")
    ndim = input.dim()
    if mode == "area" and 3 <= ndim <= 5:
        fn = {3: pooling.adaptive_avg_pool1d, 4: pooling.adaptive_avg_pool2d,
              5: getattr(pooling, "adaptive_avg_pool3d", None)}[ndim]
        if fn is None:
            raise NotImplementedError("numgrad has no adaptive_avg_pool3d yet")
        return fn(input, output_size)
    if mode in ("nearest", "nearest-exact") and 3 <= ndim <= 5 or (
            mode in _RANK and ndim == _RANK[mode] + 2):
        return _upsample(input, _KIND[mode], dim, output_size, scale_factors, align_corners)
    for name, need in (("bilinear", 4), ("trilinear", 5), ("linear", 3)):
        if mode == name and 3 <= ndim <= 5:
            raise NotImplementedError(f"Got {ndim}D input, but {name} mode needs {need}D input")
    raise NotImplementedError(
        "Input Error: Only 3D, 4D and 5D input Tensors supported"
        f" (got {ndim}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | "
        f"lanczos | area | nearest-exact (got {mode})")


@export(function=False, functional=True)
def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners=None):
    """Deprecated ``F.upsample``: ``interpolate``, with PyTorch's warning."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


@export(function=False, functional=True)
def upsample_nearest(input: Tensor, size=None, scale_factor=None):
    """Deprecated ``F.upsample_nearest``: ``interpolate(..., mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


@export(function=False, functional=True)
def upsample_bilinear(input: Tensor, size=None, scale_factor=None):
    """Deprecated ``F.upsample_bilinear``: ``interpolate(..., mode='bilinear',
    align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------------- pixel (un)shuffle
def _shuffle(K, x, r: int, up: bool):
    """``(..., C*r*r, H, W) -> (..., C, H*r, W*r)`` (``up``) or its inverse, a new array."""
    shape = tuple(int(s) for s in x.shape)
    lead, n = shape[:-3], len(shape) - 3
    c, h, w = shape[-3:]
    a = K.ascontiguous(x)
    if up:
        oc = c // (r * r)
        v = K.reshape_view(a, lead + (oc, r, r, h, w))
        perm = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)
        out_shape = lead + (oc, h * r, w * r)
    else:
        oh, ow = h // r, w // r
        v = K.reshape_view(a, lead + (c, oh, r, ow, r))
        perm = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)
        out_shape = lead + (c * r * r, oh, ow)
    out = K.ascontiguous(K.permute(v, perm))
    if K.may_share_memory(out, x):
        out = K.copy(out)
    return K.reshape_view(out, out_shape)


@register
class PixelShuffle(Op):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``: ``out[..., c, h*r + i, w*r + j] =
    x[..., (c*r + i)*r + j, h, w]``."""

    complex_ok = True
    name, node = "pixel_shuffle", "PixelShuffleBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, x: _F(m).pixel_shuffle(x, 2), ((2, 8, 2, 3),)),
        Sample(lambda m, x: _F(m).pixel_shuffle(x.transpose(-1, -2), 3), ((9, 2, 1),),
               gradgrad=False),
    )

    @staticmethod
    def forward(K, x, *, factor):
        return _shuffle(K, x, factor, True)

    @staticmethod
    def backward(ctx, grad):
        return (apply(PixelUnshuffle, (grad,), (grad._data,), factor=ctx.params["factor"]),)


@register
class PixelUnshuffle(Op):
    """The inverse (and adjoint) of ``pixel_shuffle``: ``(*, C, H*r, W*r) -> (*, C*r*r, H,
    W)``."""

    complex_ok = True
    name, node = "pixel_unshuffle", "PixelUnshuffleBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, x: _F(m).pixel_unshuffle(x, 2), ((2, 2, 4, 6),)),
        Sample(lambda m, x: _F(m).pixel_unshuffle(x, 3), ((1, 3, 3),), gradgrad=False),
    )

    @staticmethod
    def forward(K, x, *, factor):
        return _shuffle(K, x, factor, False)

    @staticmethod
    def backward(ctx, grad):
        return (apply(PixelShuffle, (grad,), (grad._data,), factor=ctx.params["factor"]),)


def _factor(value, name: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}(): argument '{arg}' (position 2) must be int, not "
                        f"{type(value).__name__}")
    return int(value)


@export(functional=True)
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearranges ``(*, C*r*r, H, W)`` into ``(*, C, H*r, W*r)`` (``r = upscale_factor``)."""
    if not isinstance(input, Tensor):
        raise TypeError("pixel_shuffle(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    r = _factor(upscale_factor, "pixel_shuffle", "upscale_factor")
    shape = tuple(input._data.shape)
    if len(shape) < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {len(shape)} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if shape[-3] % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           "divisible by the square of upscale_factor, but input.size(-3)="
                           f"{shape[-3]} is not divisible by {r * r}")
    kernels_for((input,), PixelShuffle)
    return apply(PixelShuffle, (input,), (input._data,), factor=r)


@export(functional=True)
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearranges ``(*, C, H*r, W*r)`` into ``(*, C*r*r, H, W)`` (``r = downscale_factor``)."""
    if not isinstance(input, Tensor):
        raise TypeError("pixel_unshuffle(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    r = _factor(downscale_factor, "pixel_unshuffle", "downscale_factor")
    shape = tuple(input._data.shape)
    if len(shape) < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {len(shape)} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    for dim, what in ((-2, "height"), (-1, "width")):
        if shape[dim] % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by "
                               f"downscale_factor, but input.size({dim})={shape[dim]} is not "
                               f"divisible by {r}")
    kernels_for((input,), PixelUnshuffle)
    return apply(PixelUnshuffle, (input,), (input._data,), factor=r)


@export(functional=True)
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Rearranges ``(N, C, *)``'s channels from ``groups`` groups of ``C / groups`` into
    ``C / groups`` groups of ``groups`` (a reshape, a transpose and a reshape)."""
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    if input.ndim <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes [{', '.join(str(s) for s in input.shape)}]")
    n, c, rest = input.shape[0], input.shape[1], tuple(input.shape[2:])
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    grouped = input.reshape(n, groups, c // groups, *rest)
    return grouped.transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = alias(channel_shuffle, "native_channel_shuffle")
