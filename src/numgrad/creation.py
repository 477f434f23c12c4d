"""Creation functions: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, ``linspace``…
(the random ones, ``rand``, ``randn``, ``randint`` …, are ``random.py``'s)."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .ops._names import export
from ._dtype import device as _device
from ._dtype import COMPLEX, FLOAT, default_for_category, from_numpy_dtype, int64, to_dtype
from ._dtype import float_number, get_default_dtype, torch_name
from . import _lazy, _lowp, cuda, dispatch
from .kernels import cpu as _cpu_module
from .ops.registry import kernels_of
from .ops._promote import int_in_range, number_as
from .tensor import Tensor

# The default generator's NumPy PCG64 generator (``random._DefaultGenerator`` seeds it; its
# state is part of ``get_rng_state``'s): numgrad's own draws are Philox's (``random.py``).
_rng = np.random.default_rng()


def _is_cuda(device) -> bool:
    """Whether ``device`` (None, a string or a ``numgrad.device``) names the GPU; the device
    string is checked as PyTorch checks it."""
    if device is None:
        return False
    kind = device.type if isinstance(device, _device) else _device(device).type
    return kind == "cuda"


def _place(data: np.ndarray, device):
    """``data`` on ``device``: itself for the CPU, a device copy for CUDA."""
    if not _is_cuda(device):
        return data
    return _cuda_kernels().upload(data)


def _cuda_kernels():
    """The CUDA kernel module; while numgrad.compile traces, what its dispatch mode has the ops
    use (a trace that has recorded nothing yet moves to CUDA; one computing on the CPU
    breaks)."""
    K = cuda.kernels()
    mode = dispatch.current()
    return K if mode is None else mode.use(K)


_default_device = None  # set_default_device's, or None: the CPU


@export
def set_default_device(device) -> None:
    """Where the creation functions put tensors made without a ``device`` (None: the CPU), as
    PyTorch's ``set_default_device``."""
    global _default_device
    _default_device = None if device is None else _device(device)


@export
def get_default_device() -> _device:
    """The device of tensors made without one (``set_default_device``)."""
    return _default_device if _default_device is not None else _device("cpu")


def _finish(data: np.ndarray, requires_grad: bool, device=None) -> Tensor:
    if device is None:
        device = _default_device
    dispatch.note_created(data)  # (in a compiled function: a constant of it)
    placed = device is None or not isinstance(data, np.ndarray)  # (a draw made on the device)
    t = Tensor._wrap(data if placed else _place(data, device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer(data) -> np.ndarray:
    """An array from Python data, with PyTorch's dtype inference (floats → float32)."""
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, (np.ndarray, np.generic)):  # (a NumPy scalar keeps its dtype too)
        from_numpy_dtype(data.dtype)
        return np.asarray(data)
    if isinstance(data, (list, tuple)):
        data = [_infer(d) if isinstance(d, Tensor) else d for d in data]
    a = np.asarray(data) if not isinstance(data, int) or _INT64_MIN <= data <= _INT64_MAX else None
    if a is None or a.dtype.kind in "uO" or (
            a.dtype.kind == "f" and isinstance(data, (list, tuple)) and _large(a)):
        # NumPy's answer for Python ints beyond int64 (uint64, object, or float64 when mixed with
        # smaller ints): PyTorch infers float if any element is a float, else raises.
        kinds = _kinds(data)
        if kinds is not None and "f" in kinds:
            return np.array(data, dtype=np.float64).astype(default_for_category(FLOAT).np)
        if kinds is not None and "i" in kinds:
            raise ValueError("Overflow when unpacking long long")
    if a is not None:
        if a.dtype.kind == "f":
            if a.dtype == np.float64 and _holds_float64_scalar(data):
                return a  # PyTorch infers a NumPy scalar's own dtype: float64 wins
            return a.astype(default_for_category(FLOAT).np)
        if a.dtype.kind == "c":
            if a.dtype == np.complex128 and _holds_float64_scalar(data, np.complex128):
                return a
            return a.astype(default_for_category(COMPLEX).np)
        if a.dtype.kind in "iu":
            return a if a.dtype == np.int32 else a.astype(np.int64)  # (int32: NumPy int32s only)
        if a.dtype.kind == "b":
            return a
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _holds_float64_scalar(data, np_dtype=np.float64) -> bool:
    """Whether nested Python data holds a NumPy float64 scalar (or 0-d array), which makes
    PyTorch infer float64 for the whole tensor, where Python floats alone give the default."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (np.generic, np.ndarray)) and item.dtype == np_dtype:
            return True
    return False


def _large(a: np.ndarray) -> bool:
    """Whether a float array holds a value of magnitude 2**63 or more (which may have come from a
    Python int out of int64's range)."""
    return bool((np.abs(a) >= 2.0**63).any())


def _kinds(data):
    """The kinds of the numbers in nested Python data: "f" (a float), "i" (an int out of int64's
    range) and "n" (other numbers); None if something else is there."""
    found = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (bool, np.bool_)):
            found.add("n")
        elif isinstance(item, numbers.Integral):
            found.add("n" if _INT64_MIN <= int(item) <= _INT64_MAX else "i")
        elif isinstance(item, numbers.Real):
            found.add("f")
        elif isinstance(item, np.ndarray):
            found.add("f" if item.dtype.kind == "f" else "n")
        else:
            return None
    return found


def _int_overflow(data, np_dtype) -> Exception:
    """PyTorch's error for Python data holding an int that ``np_dtype`` (an integer dtype) cannot
    hold: ValueError beyond int64's range, else RuntimeError."""
    kinds = _kinds(data)
    if kinds is not None and "i" in kinds:
        return ValueError("Overflow when unpacking long long")
    return RuntimeError(f"value cannot be converted to type {np.dtype(np_dtype).name} without "
                        "overflow")


def _is_foreign_cuda(data) -> bool:
    """Whether ``data`` is another library's CUDA array: it has ``__cuda_array_interface__``
    (CuPy, PyTorch CUDA tensors, Numba device arrays, ...)."""
    return (not isinstance(data, (Tensor, np.ndarray, numbers.Number, list, tuple, str))
            and hasattr(data, "__cuda_array_interface__"))


def _from_cuda_interface(data, dtype, device, copy: bool) -> Tensor:
    """A CUDA tensor over the memory ``data`` exports through the CUDA Array Interface, without
    a copy unless ``copy``, another ``dtype``, a non-contiguous layout (CUDA tensors are
    C-contiguous for now) or the CPU ``device`` asks for one."""
    K = cuda.kernels()
    a = _lazy.module("kernels.cuda.interop").import_interface(data)
    from_numpy_dtype(a.dtype)  # numgrad's error for a dtype it does not have
    target = a.dtype if dtype is None else to_dtype(dtype).np
    if device is not None and not _is_cuda(device):
        return Tensor._wrap(K.to_host(a).astype(target, copy=False))
    copied = not a.is_c_contiguous()
    a = K.ascontiguous(a)
    if target != a.dtype:
        a = K.cast(a, target)
    elif copy and not copied:
        a = K.copy(a)
    return Tensor._wrap(a)


@export
def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, a nested sequence, an array, or
    another library's CUDA array, which gives a CUDA tensor)."""
    if _is_foreign_cuda(data):
        return _finish(_from_cuda_interface(data, dtype, device, copy=True)._data, requires_grad)
    if dispatch.current() is not None and isinstance(data, (Tensor, np.ndarray)):
        traced = _traced_copy(data, dtype, requires_grad)
        if traced is not None:
            return traced
    if device is None and isinstance(data, Tensor):
        device = data.device
    if dtype is None:
        a = np.array(_infer(data), copy=True)
    elif to_dtype(dtype).np.kind == "V":  # (bfloat16: the values rounded from float32)
        a = _lowp.cast(np.array(_lowp.to_float(_infer(data)), np.float32), _lowp.BF16)
    elif isinstance(data, (Tensor, np.ndarray)):
        a = _lowp.cast(_infer(data), to_dtype(dtype).np) if _infer(data).dtype.kind == "V" else \
            np.array(_infer(data), dtype=to_dtype(dtype).np, copy=True)
    else:  # straight from the Python numbers, not through float32
        np_dtype = np.dtype(to_dtype(dtype).np)
        if np_dtype.kind in "iu":
            a = _python_ints(data, np_dtype)
        elif isinstance(data, (float, int)) and not -65504.0 <= data <= 65504.0:
            a = np.array(float_number(np_dtype, data))  # (1e300 into float32: inf, no warning)
        else:
            a = np.array(data, np_dtype)
    return _finish(a, requires_grad, device)


def _python_ints(data, np_dtype) -> np.ndarray:
    """Python numbers into an integer dtype, checked as PyTorch converts them: a float must lie
    in the dtype's range (127.9 does not fit int8, NaN and inf nowhere), an integer too, where a
    negative one wraps around into an unsigned dtype down to ``-max`` (-1 into uint8 is 255,
    -256 fails); PyTorch's RuntimeError naming the dtype else (its ValueError beyond int64)."""
    wide = np.asarray(data)
    if wide.dtype.kind in "uO" or (wide.dtype.kind == "f" and _large(wide)
                                   and "i" in (_kinds(data) or ())):
        raise _int_overflow(data, np_dtype)
    info = np.iinfo(np_dtype)
    if wide.size and wide.dtype.kind == "f":
        bad = not (np.isfinite(wide).all() and info.min <= wide.min() and wide.max() <= info.max)
    elif wide.size and wide.dtype.kind == "i":
        low = -info.max if np_dtype.kind == "u" else info.min
        bad = not (low <= wide.min() and wide.max() <= info.max)
    else:
        return np.array(data, np_dtype) if wide.dtype.kind == "c" else wide.astype(np_dtype)
    if bad:
        raise RuntimeError(f"value cannot be converted to type {np_dtype.name} without overflow")
    return wide.astype(np_dtype)


@export
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with a NumPy array or tensor where dtypes agree,
    and with another library's CUDA array (``__cuda_array_interface__``: CuPy, PyTorch, Numba
    device arrays...) as a CUDA tensor."""
    if _is_foreign_cuda(data):
        return _from_cuda_interface(data, dtype, device, copy=False)
    if (isinstance(data, Tensor) and (dtype is None or to_dtype(dtype) is data.dtype)
            and (device is None or _device(device).type == data.device.type)):
        return data
    if dispatch.current() is not None and isinstance(data, (Tensor, np.ndarray)):
        traced = _traced_copy(data, dtype, False)
        if traced is not None:
            return traced
    if dtype is not None and not isinstance(data, (Tensor, np.ndarray)):
        # (Python numbers, as ``tensor`` reads them in ``dtype``: not through float32 first)
        return tensor(data, dtype=dtype, device=device)
    a = _infer(data)
    if dtype is not None and a.dtype != to_dtype(dtype).np:
        a = _cpu_module.cast(a, to_dtype(dtype).np)
    return _finish(a, False, device)


@export
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """``obj`` as a tensor, sharing its memory where it can: a tensor is returned as it is (its
    history kept) unless ``dtype`` or ``device`` differ; a NumPy array, a NumPy number or an
    object with the buffer protocol (``bytes``, ``bytearray``, ``array.array``) is wrapped, its
    bytes read as ``dtype`` (default: the default float dtype, as PyTorch's); numbers and
    sequences are read as ``tensor`` reads them. ``copy=True`` always copies (a tensor's copy
    keeps its history), ``copy=False`` raises PyTorch's ValueError where sharing is impossible."""
    target = None if dtype is None else to_dtype(dtype)
    if isinstance(obj, Tensor):
        same = (target is None or target is obj.dtype) and (
            device is None or _device(device).type == obj.device.type)
        if copy is False and not same:
            raise ValueError(f"can't alias tensor with dtype '{torch_name(obj._data.dtype)}' "
                             f"into dtype '{torch_name(target.np)}'.")
        if copy:
            out = obj.clone() if same else obj.to(dtype=target or obj.dtype, device=device)
        else:
            out = obj if same else obj.to(dtype=target or obj.dtype, device=device)
    elif not isinstance(obj, (np.ndarray, np.generic)) and _buffer(obj):
        # (PyTorch reads a buffer's bytes as ``dtype``, by default the default float dtype)
        out = frombuffer(obj, dtype=target or get_default_dtype())
        if copy:
            out = out.clone()
    else:
        array = obj if isinstance(obj, (np.ndarray, np.generic)) else None
        if array is None:
            if copy is False:
                raise ValueError("can't alias arbitrary sequence into a tensor.")
            out = tensor(obj, dtype=dtype, device=device)
        elif copy:
            out = tensor(np.asarray(array), dtype=dtype, device=device)
        else:
            array = np.asarray(array)
            if copy is False and target is not None and target.np != array.dtype:
                raise ValueError(f"can't alias tensor with dtype '{torch_name(array.dtype)}' "
                                 f"into dtype '{torch_name(target.np)}'.")
            out = as_tensor(array, dtype=dtype, device=device)
    if requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def _buffer(obj) -> bool:
    """Whether ``obj`` has the buffer protocol (and is not a number, str or sequence)."""
    if isinstance(obj, (numbers.Number, str, list, tuple)):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


_UNWRITABLE = {"warned": False}


@export
def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the memory of ``buffer`` (an object with the buffer protocol), read as
    ``dtype`` from byte ``offset``, ``count`` elements (-1: to the end); it shares the memory.
    PyTorch's warning, once, for a buffer that cannot be written (``bytes``)."""
    if dispatch.current() is not None:  # (memory from outside: from_numpy's rule)
        dispatch.graph_break("frombuffer inside the compiled function (make the tensor outside "
                             "and pass it in as an argument)")
    raw = np.asarray(memoryview(buffer)).reshape(-1).view(np.uint8)
    np_dtype = np.dtype(to_dtype(dtype).np)
    size, length = np_dtype.itemsize, raw.nbytes
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    if not raw.flags.writeable and not _UNWRITABLE["warned"]:
        _UNWRITABLE["warned"] = True
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable "
            "tensors. This means you can write to the underlying (supposedly non-writable) "
            "buffer using the tensor. You may want to copy the buffer to protect its data or "
            "make it writable before converting it to a tensor. This type of warning will be "
            "suppressed for the rest of this program.", UserWarning, stacklevel=2)
    out = Tensor._wrap(raw[offset:offset + count * size].view(np_dtype))
    return out.requires_grad_(True) if requires_grad else out


def _traced_copy(data, dtype, requires_grad: bool):
    """``tensor(data)`` in a compiled function: a tensor's data is copied by a recorded kernel;
    a NumPy array made outside the trace cannot be (its values would be frozen into it): a
    break, after which the caller goes on eagerly (None)."""
    array = data._data if isinstance(data, Tensor) else data
    mode = dispatch.current()
    if not mode.stands_for(array):
        mode.graph_break("a tensor made from a NumPy array inside the compiled function (make it "
                    "outside and pass it in as an argument)")
        return None
    K = kernels_of(array)
    out = K.copy(array) if dtype is None else K.cast(array, to_dtype(dtype).np)
    t = Tensor._wrap(out)
    if requires_grad:
        t.requires_grad_(True)
    return t


@export
def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    from_numpy_dtype(ndarray.dtype)
    if dispatch.current() is not None:
        dispatch.graph_break("from_numpy inside the compiled function (make the tensor outside and pass it "
                    "in as an argument)")
    return Tensor._wrap(ndarray)


def _shape(size, name: str = "") -> tuple:
    """``size`` (ints, or one sequence of them) as a tuple of ints; PyTorch's error for a
    negative one (``zeros`` words its own)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if type(s) is not int or s < 0:
            shape = tuple(int(s) for s in size)
            negative(shape, name)
            return shape
    return size if type(size) is tuple else tuple(size)  # (Python ints already: as they are)


def negative(shape: tuple, name: str = "") -> None:
    """PyTorch's error for a shape with a negative size."""
    for s in shape:
        if s < 0:
            if name == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")


def _float_dtype(dtype) -> np.dtype:
    return (to_dtype(dtype) if dtype is not None else default_for_category(FLOAT)).np


def _filled(shape: tuple, value, np_dtype, requires_grad: bool, device) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (None: uninitialised). On CUDA it is filled
    by a kernel, not uploaded: an upload from pageable host memory would wait for the GPU (the
    backward makes its seed gradient, ``ones_like``, this way)."""
    if device is None:
        device = _default_device
    if np_dtype.kind == "V" and value is not None:  # (bfloat16: its bits, rounded from float32)
        value = _lowp.f32_to_bf16(np.float32(value))[()]
    if device is None or not _is_cuda(device):
        mode = dispatch.current()
        K = _cpu_module if mode is None else mode.use(_cpu_module)
        if K is _cpu_module:  # (no trace, or a step on CUDA: a constant of it)
            if value is None:
                data = np.empty(shape, np_dtype)
            elif type(value) is int or type(value) is float or type(value) is bool:
                data = np.empty(shape, np_dtype)
                data.fill(value)  # (np.full's Python layers cost more than the fill: 0.5 us)
            else:
                data = np.full(shape, value, np_dtype)
            if device is None and mode is None and (not requires_grad or np_dtype.kind == "f"):
                # (``_finish`` inline for the CPU outside a trace: a leaf that may require grad)
                return Tensor._wrap(data, bool(requires_grad))
        else:  # (numgrad.compile records the fill, so that each replay makes a new array)
            data = K.empty(shape, np_dtype) if value is None else K.full(shape, value, np_dtype)
        return _finish(data, requires_grad)
    K = _cuda_kernels()
    if value is None:
        data = K.empty(shape, np_dtype)
    else:
        data = K.full(shape, np.full((), value, np_dtype)[()], np_dtype)
    return _finish(data, requires_grad)


@export
def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _filled(_shape(size, "zeros"), 0, _float_dtype(dtype), requires_grad, device)


@export
def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _filled(_shape(size), 1, _float_dtype(dtype), requires_grad, device)


@export
def empty(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor whose values are not initialised."""
    return _filled(_shape(size), None, _float_dtype(dtype), requires_grad, device)


def _check_strided(layout) -> None:
    if layout is not None and getattr(layout, "name", None) != "strided":
        raise RuntimeError(f"empty_strided: numgrad's tensors are strided, got layout {layout}")


@export
def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with the strides ``stride`` (in elements) over memory
    of its own (on CUDA: contiguous)."""
    _check_strided(layout)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    negative(size)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    np_dtype = _float_dtype(dtype)
    if (device is not None and _is_cuda(device)) or (device is None and _default_device
                                                      is not None and _is_cuda(_default_device)):
        return _filled(size, None, np_dtype, requires_grad, device)
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    buf = np.empty(n, np_dtype)
    data = np.lib.stride_tricks.as_strided(buf, size, tuple(st * buf.itemsize for st in stride))
    return _finish(data, requires_grad, device)


@export
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose dimensions lie in memory in the order
    ``physical_layout`` (outermost first)."""
    _check_strided(layout)
    size, order = tuple(int(s) for s in size), tuple(int(d) for d in physical_layout)
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           "physical_layout")
    seen = set()
    for d in order:
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be in range of "
                               f"[{-len(size)}, {len(size) - 1}], but got {d})")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    base = empty(*(size[d] for d in order), dtype=dtype, device=device)
    inverse = sorted(range(len(order)), key=order.__getitem__)
    out = base.permute(*inverse) if order else base
    return out.requires_grad_(True) if requires_grad else out


@export(function=False, method=True)
def new_empty_strided(self: Tensor, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``empty_strided`` with this tensor's dtype and device by default."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, layout=layout,
                         device=device or self.device, requires_grad=requires_grad)


@export
def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype inferred from the value if not given)."""
    if dtype is None:
        if isinstance(fill_value, int) and not isinstance(fill_value, bool):
            dtype = int64  # (not through _infer: PyTorch's errors for an int out of range differ)
        elif type(fill_value) is float:  # (not through _infer: its cast would warn on 1e300)
            dtype = get_default_dtype()
        else:
            dtype = _infer(fill_value).dtype
    np_dtype = to_dtype(dtype).np
    if isinstance(fill_value, numbers.Number):
        check_scalar(fill_value, np_dtype)
        if isinstance(fill_value, numbers.Complex) and not isinstance(fill_value, numbers.Real) \
                and np_dtype.kind in "iuf":
            fill_value = fill_value.real
        if np_dtype.kind == "b":
            fill_value = bool(fill_value)
        elif np_dtype.kind == "u" and isinstance(fill_value, numbers.Integral):
            fill_value = number_as(fill_value, np_dtype)  # (-1 into uint8: 255, as PyTorch)
    _check_size("full", size)
    return _filled(_shape((size,)), fill_value, np_dtype, requires_grad, device)


def _check_size(name: str, size) -> None:
    """PyTorch's parser for the ``size`` of ``full``/``new_full``, which takes no bare number
    (``full(2, 7)``) and no float in the sequence."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    for k, n in enumerate(size):
        if isinstance(n, float):
            raise TypeError(
                f"{name}(): argument 'size' (position 1) must be tuple of ints, but found "
                f"element of type float at pos 0" if k == 0 else  # (PyTorch's two wordings)
                f"{name}(): argument 'size' failed to unpack the object at pos {k + 1} with "
                f'error "type must be tuple of ints,but got float"')


# (PyTorch's names of the C types in its overflow errors)
_C_NAMES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "float32": "float", "float64": "double"}


def check_scalar(value, np_dtype) -> None:
    """PyTorch's error for a number written into a tensor (a fill, ``masked_fill``, ``clamp``'s
    bounds, ``where``'s operand, an indexed write) that its dtype cannot hold: an integer out of
    an integer dtype's range (into an unsigned one a negative number wraps, down to ``-max``), a
    float beyond an integer dtype's range (inf and NaN included) or a finite one beyond a float
    dtype's; a complex number with an imaginary part into a real tensor; past int64 and uint64,
    the OverflowError of a number no Scalar holds."""
    if type(value) is float:
        if -65504.0 <= value <= 65504.0 and np.dtype(np_dtype).kind == "f":
            return  # (every float dtype holds it: the common case, decided first)
    elif type(value) is int and -128 <= value <= 127:
        return  # (every dtype holds it, or wraps it: -1 into uint8)
    np_dtype = np.dtype(np_dtype)
    kind = "f" if np_dtype == _lowp.BF16 else np_dtype.kind  # (bfloat16: NumPy's "V2")
    if isinstance(value, (bool, np.bool_)) or kind not in "iuf":
        return
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if value.imag != 0:
            _overflow(np_dtype)
        value = value.real
    if isinstance(value, numbers.Integral):
        value = int(value)
        int_in_range(value)
        if kind in "iu":
            info = np.iinfo(np_dtype)
            if not (-info.max if kind == "u" else info.min) <= value <= info.max:
                _overflow(np_dtype)
        elif abs(value) > _float_max(np_dtype):  # (70000 into float16)
            _overflow(np_dtype)
    elif isinstance(value, numbers.Real):
        v = float(value)
        if kind in "iu":
            info = np.iinfo(np_dtype)
            if not (v == v and info.min <= v <= info.max):
                _overflow(np_dtype)
        elif math.isfinite(v) and abs(v) > _float_max(np_dtype):
            _overflow(np_dtype)


_BF16_MAX = 3.3895313892515355e38  # (bfloat16's largest finite value, (2 - 2**-7) * 2**127)


def _float_max(np_dtype) -> float:
    """The largest finite value of a float dtype, bfloat16's (NumPy's "V2") included."""
    return _BF16_MAX if np_dtype == _lowp.BF16 else float(np.finfo(np_dtype).max)


def _overflow(np_dtype):
    name = "c10::BFloat16" if np_dtype == _lowp.BF16 else _C_NAMES.get(np_dtype.name, "int")
    raise RuntimeError(f"value cannot be converted to type {name} "
                       "without overflow")


@export(out=True)
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) in steps of ``step``."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    for v in (start, end):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:  # (PyTorch's refusal, where NumPy gives an empty range)
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        is_int = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = int64 if is_int else default_for_category(FLOAT)
    np_dtype = to_dtype(dtype).np
    if np_dtype.kind == "b":
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if np_dtype.kind in "iu":
        return _finish(_integer_range(start, end, step, np_dtype), requires_grad, device)
    return _finish(_cpu_module.cast(np.arange(start, end, step), np_dtype), requires_grad, device)


def _integer_range(start, end, step, np_dtype) -> np.ndarray:
    """PyTorch's integer ``arange``: the bounds and step truncated to int64 first, the values
    ``start + i * step`` wrapped into ``np_dtype``; the count in integers for int64, from the
    bounds as given for the narrower types (so ``arange(0, 3, 0.5, dtype=int32)`` is zeros)."""
    lo, hi, st = int(start), int(end), int(step)
    if np_dtype == np.int64:
        if st == 0:
            raise ValueError("step must be nonzero")
        q = hi - lo + st - ((st > 0) - (st < 0))
        n = abs(q) // abs(st) * (1 if (q >= 0) == (st > 0) else -1)  # (C's division)
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    return (lo + np.arange(max(n, 0), dtype=np.int64) * st).astype(np_dtype)


@export
def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _check_space_args("linspace", start, end, steps)
    np_dtype = _float_dtype(dtype)
    steps = int(steps)
    if np_dtype.kind == "b" and steps:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    if np_dtype.kind in "iu" and steps > 1:
        # PyTorch's integer rule: the ends cast first, the first half counted up from the start
        # and the second half down from the end, each value one fused multiply-add (rounded
        # once: computed exactly in long double, then rounded to double) and truncated.
        lo, hi = int(start), int(end)
        step = np.longdouble((hi - lo) / (steps - 1))
        i = np.arange(steps)
        values = np.where(i < steps // 2, lo + step * i, hi - step * (steps - 1 - i))
        return _finish(np.trunc(values.astype(np.float64)).astype(np_dtype), requires_grad, device)
    return _finish(_cpu_module.cast(np.linspace(start, end, steps), np_dtype), requires_grad,
                   device)


def _check_space_args(name: str, start, end, steps) -> None:
    """PyTorch's refusals of linspace's and logspace's arguments: a count that is not an int, a
    negative count, bounds that are tensors of more than 0 dimensions."""
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        kinds = ", ".join(type(v).__name__ if not isinstance(v, Tensor) else "Tensor"
                          for v in (start, end, steps))
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({kinds})")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dims = [v.ndim if isinstance(v, Tensor) else 0 for v in (start, end)]
    if any(dims):
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                           f"start with {dims[0]} dimension(s) and end with {dims[1]} "
                           "dimension(s).")


@export
def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal and zeros elsewhere."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return _finish(_cpu_module.cast(np.eye(n, m), _float_dtype(dtype)), requires_grad, device)


@export
def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """A 0-d tensor of the number ``s``, of the default float dtype unless ``dtype`` says."""
    return full((), s, dtype=dtype or get_default_dtype(), device=device,
                requires_grad=requires_grad)


def _like(fn):
    def like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
             memory_format=None) -> Tensor:
        return fn(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                  requires_grad=requires_grad)

    like.__name__ = like.__qualname__ = fn.__name__ + "_like"
    like.__doc__ = f"``{fn.__name__}`` with the shape (and by default the dtype) of ``input``."
    return like


if TYPE_CHECKING:  # (what _like makes, for type checkers)
    def zeros_like(input: Tensor, *, dtype: object = None, layout: object = None,
                   device: object = None, requires_grad: bool = False,
                   memory_format: object = None) -> Tensor: ...
    ones_like = empty_like = zeros_like
else:
    zeros_like = export(_like(zeros), "zeros_like")
    ones_like = export(_like(ones), "ones_like")
    empty_like = export(_like(empty), "empty_like")


@export
def full_like(input: Tensor, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """``full`` with the shape (and by default the dtype) of ``input``."""
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


# ``x.new_zeros(...)`` and its kin: a new tensor with ``x``'s dtype and device unless given.
@export(function=False, method=True)
def new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``zeros`` with this tensor's dtype and device by default."""
    return zeros(_shape(size), dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)  # (_shape: PyTorch's error, not zeros's)


@export(function=False, method=True)
def new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``ones`` with this tensor's dtype and device by default."""
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@export(function=False, method=True)
def new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``empty`` with this tensor's dtype and device by default."""
    return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


@export(function=False, method=True)
def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``full`` with this tensor's dtype and device by default (a float value is truncated into
    an integer dtype, as PyTorch does)."""
    _check_size("new_full", size)
    dtype = to_dtype(dtype or self.dtype)
    if dtype.np.kind in "iu" and isinstance(fill_value, float):
        check_scalar(fill_value, dtype.np)
        fill_value = int(fill_value)
    return full(size, fill_value, dtype=dtype, device=device or self.device,
                requires_grad=requires_grad)


_NEW_TENSOR_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than "
    "tensor.new_tensor(sourceTensor)."
)


@export(function=False, method=True)
def new_tensor(self: Tensor, data, *, dtype=None, device=None,
               requires_grad: bool = False) -> Tensor:
    """``tensor(data)`` (a copy, no history) with this tensor's dtype and device by default."""
    if isinstance(data, Tensor):
        warnings.warn(_NEW_TENSOR_WARNING, UserWarning, stacklevel=2)
        data = data.detach()
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)
