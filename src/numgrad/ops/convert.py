"""Dtype conversion as a differentiable op."""
from __future__ import annotations

import numpy as np

from .._dtype import channels_last, channels_last_3d, contiguous_format, memory_format
from .._dtype import device as _device
from .._dtype import FLOAT, preserve_format, to_dtype
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register
from .. import cuda


@register
class ToCopy(Op):
    """A copy to another dtype and/or device (PyTorch's ``_to_copy``)."""

    name, node = "to_copy", "ToCopyBackward0"
    jvp = _jvp.linear
    on_cuda = True
    narrow_ok = True  # (``K.cast`` converts to and from float16, bfloat16 ... as PyTorch rounds)
    # A float32 round trip is linear, so a large finite-difference step is exact up to rounding.
    samples = (
        Sample(lambda m, a: a.float(), ((3, 4),), eps=1e-2, atol=1e-4),
        Sample(lambda m, a: a.to(m.float32).double(), ((4,),), eps=1e-2, atol=1e-4),
        Sample(lambda m, a: a.to("cpu", copy=True), ((2, 3),)),
        Sample(lambda m, a: a.cpu() * 2, ((3,),)),
        Sample(lambda m, a: a.float(memory_format=m.contiguous_format), ((3, 4),), eps=1e-2,
               atol=1e-4),
    )

    @staticmethod
    def forward(K, a, *, dtype, device, source=None):
        if device is not None:  # (``to`` passes another device than the data's, or None)
            a, K = K.to_device(a, device)
            return a if dtype is None else K.cast(a, dtype)
        return K.copy(a) if dtype is None or dtype == a.dtype else K.cast(a, dtype)

    @staticmethod
    def backward(ctx, grad):
        # The engine casts the gradient back to the input's dtype; the device is moved here.
        source = ctx.params["source"]
        return (grad if grad.device.type == source else to(grad, source),)


def _in_format(t: Tensor, fmt, name: str) -> Tensor:
    """``t`` in the memory format ``fmt``: contiguous_format a C-contiguous tensor,
    channels_last (channels_last_3d) one whose channel dimension (1) varies fastest: the same
    values, PyTorch's strides; preserve_format ``t`` as it is."""
    if fmt is None or fmt is preserve_format:
        return t
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{name}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")
    if fmt is contiguous_format:
        return contiguous(t)
    rank = 4 if fmt is channels_last else 5
    if t.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    last = (0,) + tuple(range(2, rank)) + (1,)
    back = (0, rank - 1) + tuple(range(1, rank - 1))
    shape, strides, size = t._data.shape, t._data.strides, t._data.itemsize
    expected = {}
    for d in reversed(last):
        expected[d] = size
        size *= shape[d]
    if all(strides[d] == expected[d] or shape[d] == 1 for d in range(rank)):
        return t  # (already in that layout)
    return contiguous(t.permute(last)).permute(back)


@export(function=False, method=True)
def to(input: Tensor, *args, dtype=None, device=None, copy: bool = False,
       non_blocking: bool = False, memory_format=None) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(other)``: the tensor converted, or itself if nothing
    changes (unless ``copy``). A copy is recorded (``ToCopyBackward0``), so gradients flow back
    across dtypes and devices. ``memory_format``: the result's layout (``_in_format``)."""
    if memory_format is not None:
        return _in_format(to(input, *args, dtype=dtype, device=device, copy=copy),
                          memory_format, "to")
    flags = [a for a in args if isinstance(a, bool)]  # (non_blocking, copy) by position
    args = [a for a in args if not isinstance(a, bool)]
    if len(flags) > 1:
        copy = copy or flags[1]
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
            device = a.device
        elif isinstance(a, (str, _device)):
            device = a
        else:
            dtype = a
    source = input.device.type
    target = None if device is None else _device(device).type
    if target == "cuda":
        cuda.kernels()  # the clear error where CUDA cannot be used
    if target == source:
        target = None
    dt = None if dtype is None else to_dtype(dtype)
    if dt is input.dtype:
        dt = None
    if dt is None and target is None and not copy:
        return input
    if dt is not None and input._requires_grad and dt._category < FLOAT:
        # PyTorch returns an integer tensor with no history here.
        return Tensor._wrap(ToCopy.forward(kernels_for((input,)), input._data, dtype=dt.np, device=target))
    return apply(ToCopy, (input,), (input._data,), dtype=None if dt is None else dt.np,
                 device=target, source=source)


@export(function=False, method=True)
def type_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` converted to ``other``'s dtype and device (itself if they are its own)."""
    return to(input, dtype=other.dtype, device=other.device)


@register
class Clone(Op):
    name, node = "clone", "CloneBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: a.clone(), ((3, 4),)), Sample(lambda m, a: a.t().contiguous(), ((3, 4),)),
               Sample(lambda m, a: a.t().clone(memory_format=m.contiguous_format), ((3, 4),)))

    @staticmethod
    def forward(K, a):
        return K.copy(a)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


@export(method=True)
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy of ``input`` with its own storage, recorded so gradients flow back to ``input``
    (``memory_format``: the copy's layout; by default C-contiguous)."""
    out = apply(Clone, (input,), (input._data,))
    return out if memory_format in (None, preserve_format, contiguous_format) else \
        _in_format(out, memory_format, "clone")


@export(function=False, method=True)
def contiguous(input: Tensor, memory_format=contiguous_format) -> Tensor:
    """``input`` if its data is C-contiguous, else a contiguous copy; ``memory_format=
    channels_last``: in that layout."""
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if memory_format is not contiguous_format:
        return _in_format(input, memory_format, "contiguous")
    data = input._data
    contiguous = data.flags.c_contiguous if isinstance(data, np.ndarray) else data.is_c_contiguous()
    return input if contiguous else clone(input)
