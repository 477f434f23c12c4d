"""``as_strided`` (a view of a tensor's memory with any sizes, strides and offset, in elements),
``as_strided_copy`` and ``as_strided_scatter``.

``as_strided`` reads the memory the tensor lives in (the whole NumPy buffer its array views),
as PyTorch reads the storage. Where no gradient is recorded it is a view (it shares memory and
the version counter); where one is, it is composed as a gather from a copy of that memory into
which the input's elements are put (``index_put``), so the gradient is PyTorch's (each input
element gets the gradients of every output element that reads it) but the result is a copy,
which writes do not reach the input through. CPU tensors only.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
import numgrad
from ..autograd import grad_mode
from ._names import export
from ._common import _has_tangent
from .registry import _view_of
from .indexing import index_put


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _storage(data: np.ndarray):
    """(the buffer ``data`` views, flat in ``data``'s dtype; the offset in elements of ``data``'s
    first one in it)."""
    root = data
    while True:  # (NumPy's as_strided views hold their array through a wrapper's .base)
        base = root.base
        base = base if isinstance(base, np.ndarray) else getattr(base, "base", None)
        if not isinstance(base, np.ndarray):
            break
        root = base
    if not root.flags.c_contiguous:
        raise NotImplementedError("as_strided: the tensor's memory is not one contiguous buffer")
    flat = root.reshape(-1).view(data.dtype)
    return flat, (_address(data) - _address(root)) // data.itemsize


def _checked(size, stride, storage_offset, storage_size: int, itemsize: int):
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    need = 0 if 0 in size else storage_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > storage_size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset}, and itemsize {itemsize} requiring a storage "
                           f"size of {need * itemsize} are out of bounds for storage of size "
                           f"{storage_size * itemsize}")
    return size, stride


def _positions(size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """The flat positions in memory of the elements of a strided view."""
    out = np.full(size, offset, np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        out += (np.arange(n, dtype=np.int64) * s).reshape([-1 if e == d else 1
                                                           for e in range(len(size))])
    return out


@export(method=True)
def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """The elements of ``input``'s memory at ``storage_offset + sum(i_d stride_d)`` (``input``'s
    own offset by default), as a tensor of ``size``."""
    data = input._data
    if not isinstance(data, np.ndarray):
        raise NotImplementedError("as_strided: numgrad supports it for CPU tensors")
    flat, here = _storage(data)
    offset = here if storage_offset is None else int(storage_offset)
    size, stride = _checked(size, stride, offset, flat.size, data.itemsize)
    view = np.lib.stride_tricks.as_strided(flat[offset:], size,
                                           tuple(s * data.itemsize for s in stride))
    # (a dual tensor takes the gathered path, whose ops carry its tangent: the view's is 0)
    if not (grad_mode.state.enabled and input.requires_grad or _has_tangent(input)):
        out = Tensor._wrap(view)
        _view_of(out, input)
        return out

    where = np.lib.stride_tricks.as_strided(
        np.arange(flat.size, dtype=np.int64)[here:], data.shape,
        tuple(s // data.itemsize * 8 for s in data.strides)) if data.size else np.zeros(
        data.shape, np.int64)
    memory = numgrad.from_numpy(flat.copy())
    memory = index_put(memory, (numgrad.from_numpy(np.ascontiguousarray(where).reshape(-1)),),
                       input.reshape(-1))
    return memory[numgrad.from_numpy(_positions(size, stride, offset))]


@export(method=True)
def as_strided_(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``as_strided`` in place: ``input`` becomes that view of its memory (recorded, the
    gradient flows through it)."""
    from .shape import _restride

    return _restride(input, lambda x: as_strided(x, size, stride, storage_offset))


@export
def as_strided_copy(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``as_strided`` in new memory."""
    return as_strided(input, size, stride, storage_offset).clone()


@export(method=True)
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A copy of ``input`` with ``src`` written into its ``as_strided(size, stride,
    storage_offset)`` view, as PyTorch's (``clone_preserve_strides``): the offset and strides
    address ``input``'s memory, as ``as_strided`` reads it, so a view's elements are where its
    base has them, and what is written elsewhere in that memory is not among the result's
    elements. An input with internal overlap (a stride 0 over more than one element) is copied to
    new contiguous memory first, as PyTorch clones it; so is a CUDA tensor (whose memory numgrad
    does not address)."""
    data = input._data
    flat = None
    if isinstance(data, np.ndarray) and not any(
            n > 1 and s == 0 for n, s in zip(data.shape, data.strides)):
        try:
            flat, here = _storage(data)
        except NotImplementedError:  # (memory that is not one C-ordered buffer: as a copy)
            flat = None
    if flat is None or (here == 0 and flat.size == data.size and data.flags.c_contiguous):
        # (its own contiguous memory, or a copy in new contiguous memory: the same positions)
        offset = 0 if storage_offset is None else int(storage_offset)
        size, stride = _checked(size, stride, offset, input.numel(), data.itemsize)
        _check_slice(src, size, stride)
        where = numgrad.from_numpy(_positions(size, stride, offset).reshape(-1))
        out = index_put(input.reshape(-1), (where,), src.reshape(-1))
        return out.reshape(input.shape)
    offset = here if storage_offset is None else int(storage_offset)
    size, stride = _checked(size, stride, offset, flat.size, data.itemsize)
    _check_slice(src, size, stride)
    # (a copy of the memory with the input's elements put where they are, src written over it,
    # the input's elements read back: each keeps its gradient unless src overwrote it)
    where = numgrad.from_numpy(np.ascontiguousarray(np.lib.stride_tricks.as_strided(
        np.arange(flat.size, dtype=np.int64)[here:], data.shape,
        tuple(s // data.itemsize * 8 for s in data.strides))).reshape(-1))
    memory = index_put(numgrad.from_numpy(flat.copy()), (where,), input.reshape(-1))
    memory = index_put(memory, (numgrad.from_numpy(_positions(size, stride, offset).reshape(-1)),),
                       src.reshape(-1))
    return memory[where].reshape(input.shape)


def _check_slice(src: Tensor, size: tuple, stride: tuple) -> None:
    """PyTorch's checks of the view ``src`` is written into: its size, and no two of its
    elements at one place (copy_'s check of its destination)."""
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    if any(n > 1 and s == 0 for n, s in zip(size, stride)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the tensor "
                           "before performing the operation.")
