"""The ``out=`` keyword of PyTorch's functions (``numgrad.matmul(a, b, out=c)``): the result is
written into ``out`` (resized, with PyTorch's warning, where its shape differs; cast where its
dtype can hold the result) and ``out`` is returned. As in PyTorch, it refuses to run when autograd
would have to record it (an argument that requires grad, in grad mode). Only the module-level
functions take it; Tensor methods do not, as in PyTorch."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ._dtype import c_name, from_numpy_dtype, torch_name
from .autograd import grad_mode
from .ops import _names
from .ops.registry import kernels_of
from .tensor import Tensor

_RESIZED = (
    "An output with one or more elements was resized since it had shape {}, which does not "
    "match the required output shape {}. This behavior is deprecated, and in a future PyTorch "
    "release outputs will not be resized unless they have zero elements. You can explicitly "
    "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."
)

_ARANGE_RESIZED = (
    "The number of elements in the out tensor of shape {} is {} which does not match the "
    "computed number of elements {}. Note that this may occur as a result of rounding error. "
    "The out tensor will be resized to a tensor of shape ({},)."
)


def _tensors(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))


_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation.")


def _overlaps(out: Tensor, args, kwargs, size: int | None = None) -> bool:
    """Whether ``out`` shares memory with an argument, as PyTorch tells: only between tensors
    laid out contiguously (it does not look into others). ``size``: the number of elements
    ``out`` is resized to, in place in its buffer where that has room, as PyTorch's storage."""
    o = out._data
    if not isinstance(o, np.ndarray) or not o.flags.c_contiguous:
        return False
    if size is not None:
        base = o  # (the array owning the memory; NumPy's as_strided puts an object between)
        while True:
            up = base.base if isinstance(base.base, np.ndarray) else getattr(base.base, "base",
                                                                              None)
            if not isinstance(up, np.ndarray):
                break
            base = up
        if not base.flags.c_contiguous:
            return False
        offset = o.ctypes.data - base.ctypes.data
        if offset + size * o.itemsize > base.nbytes:
            return False  # (no room: PyTorch gives out new memory)
        o = base.reshape(-1).view(np.uint8)[offset:offset + size * o.itemsize]
    return any(isinstance(t._data, np.ndarray) and t._data.flags.c_contiguous
               and np.shares_memory(t._data, o) for t in _tensors(args, kwargs))


def _check_out(name: str, spec: _names.Out, out, args, kwargs) -> None:
    """PyTorch's refusals of an out= tensor before anything runs."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if any(st == 0 and n > 1 for n, st in zip(out._data.shape, out._data.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    if spec.no_overlap and _overlaps(out, args, kwargs):
        raise RuntimeError(_OVERLAP)
    if spec.dtype_first and out._data.dtype.name != spec.dtype_first[0]:
        raise RuntimeError(spec.dtype_first[1].format(out=torch_name(out._data.dtype)))


def _check_dtype(spec: _names.Out, out: Tensor, result: Tensor) -> None:
    if spec.same_dtype and out._data.dtype != result._data.dtype:
        message = spec.same_dtype if isinstance(spec.same_dtype, str) else (
            "Expected out tensor to have dtype {result_c}, but got {out_c} instead")
        raise RuntimeError(message.format(
            out=torch_name(out._data.dtype), result=torch_name(result._data.dtype),
            out_c=c_name(out._data.dtype), result_c=c_name(result._data.dtype)))


def with_out(fn, name: str, spec: _names.Out = _names.Out()):
    """``fn`` taking ``out=`` as well (a tuple of tensors for a function of several results),
    by the rule ``spec`` (``@export(out=Out(...))``, ``ops/_names.py``)."""

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        several = spec.several
        if several and not isinstance(out, (tuple, list)):
            raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                            f"{type(out).__name__}")
        outs = tuple(out) if several else (out,)
        if grad_mode.state.enabled and (
                any(isinstance(o, Tensor) and o._requires_grad for o in outs)
                or any(t._requires_grad for t in _tensors(args, kwargs))):
            raise RuntimeError(
                f"{name}(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad.")
        for o in outs:
            _check_out(name, spec, o, args, kwargs)
        if name == "arange":  # (its dtype is out's: the bounds and step converted to it)
            given = kwargs.get("dtype")
            if given is not None and given is not out.dtype:
                raise RuntimeError(f"dtype {torch_name(given.np)} does not match dtype of out "
                                   f"parameter ({torch_name(out._data.dtype)})")
            kwargs["dtype"] = out.dtype
        result = fn(*args, **kwargs)
        results = tuple(result) if several else (result,)
        for o, r in zip(outs, results):
            _check_dtype(spec, o, r)
            if spec.no_overlap and o._data.shape != r._data.shape and \
                    _overlaps(o, args, kwargs, r._data.size):
                raise RuntimeError(_OVERLAP)  # (out resized in its storage, as PyTorch's)
        if name == "arange" and out._data.shape != result._data.shape and out._data.size:
            warnings.warn(_ARANGE_RESIZED.format(list(out._data.shape), out._data.size,
                                                 result._data.size, result._data.size),
                          UserWarning, stacklevel=2)
            out._data = out._data.reshape(-1)[:0]  # (resized by write, without its warning)
        for o, r in zip(outs, results):
            write(o, r, any_dtype=spec.any_dtype)
        return type(result)(*outs) if several else out

    call._out_name = name  # (installed: ``install`` leaves it as it is)
    return call


def write(out: Tensor, result: Tensor, any_dtype: bool = False) -> None:
    """``result``'s values into ``out``, as PyTorch's out= functions leave it."""
    data = result._data
    if not any_dtype and from_numpy_dtype(data.dtype)._category > out.dtype._category:
        raise RuntimeError(
            f"result type {torch_name(data.dtype)} can't be cast to the desired "
            f"output type {torch_name(out._data.dtype)}")
    K = kernels_of(out._data)
    if out._data.shape != data.shape:
        if out._data.size:
            warnings.warn(_RESIZED.format(list(out._data.shape), list(data.shape)), UserWarning,
                          stacklevel=3)
        out._data = K.empty(data.shape, out._data.dtype)
    K.assign(out._data, data if data.dtype == out._data.dtype else K.cast(data, out._data.dtype))
    out._version_counter.value += 1


def install(namespace: dict) -> None:
    """Replaces each function declared with ``out=True`` (``@export``, ``ops/_names.py``) in
    ``namespace`` (numgrad's) by its out= form, once: numgrad's ``__init__`` calls it again after
    ``numgrad.random`` is imported."""
    for name, spec in _names.out_specs().items():
        fn = namespace.get(name)
        if fn is not None and not hasattr(fn, "_out_name"):
            namespace[name] = with_out(fn, name, spec)

