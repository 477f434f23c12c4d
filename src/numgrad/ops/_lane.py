"""The eager fast lane: the commonest elementwise calls, run and recorded in one or two frames.

``y * 1.001``, ``x + y`` of one shape, ``h + bias`` with a row, ``tanh(h)``: in a training loop
almost every elementwise call is a float CPU tensor with a Python number, with a tensor of its own
dtype and shape (or a row of its last dimension), or alone. The general path for such a call goes
through four frames (the public function, ``registry.apply``, the op's ``forward``,
``kernels.cpu.binary``), each re-deciding what the lane knows from its first checks, and then
records the node field by field in ``registry._record``. Measured on a 200-op chain of 100
float64 (``y * 1.001 + 0.001``), side by side: a recorded op took 2.6-2.8 µs that way and
1.8-2.0 µs here.

Each function here returns the result, or None when the call is not one it serves; the caller
then takes the general path. A call it serves is one that the general path would run with the
same kernel on the same arrays, so the result has the same bits, and its node is the node
``_record`` would make (the same class, edges, ``needs_input_grad``, input shapes and dtypes,
saved values and params): ``tests/test_lane.py`` compares the two field by field. The lane
serves only:

- float arrays that are plain NumPy arrays: not a CUDA array, not a ``TracedArray``, and only
  while no dispatch mode is pushed (``numgrad.dispatch``: a trace records the kernels that
  ``registry.apply`` hands out, which the lane would bypass) and no CUDA kernels are loaded (a
  node then carries its inputs' devices);
- C-contiguous arrays under the size at which kernels go multi-threaded;
- anomaly mode off (it records the forward stack on every node), and no profile block open
  (``autograd.profiler`` times the ops' forward methods, which the lane does not call).
"""
from __future__ import annotations

import numpy as np

from .. import dispatch
from ..autograd import anomaly_mode, grad_mode
from ..kernels import cpu as cpu_kernels
from ..kernels.cpu.elementwise import _LOADED, PARALLEL_THRESHOLD, _kernels, _row_plan
from ..kernels.cpu.reduction import _sum_rows
from ..tensor import Tensor
from . import registry

_grad = grad_mode.state
_anomaly = anomaly_mode.state
_ndarray = np.ndarray
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)  # (the arrays' own dtype objects)
_modes = dispatch._local  # (.stack: this thread's dispatch modes)
# How many things need every op to run through ``registry.apply`` now: ``autograd.profiler``
# counts its profile blocks here.
closed = 0


_wrap = Tensor._wrap  # (bound once: without the binding on each call)


def _kernels_of(data, code: int, unary: bool):
    """The generated kernels of ``code`` for ``data``, where the lane serves it: a plain float32
    or float64 C-contiguous host array (of NumPy's own dtype objects: native byte order) below
    the threading size, with no trace, CUDA, anomaly mode or profile block in the way; else
    None."""
    dt = data.dtype
    if type(data) is not _ndarray or (dt is not _F64 and dt is not _F32) or \
            not data.flags.c_contiguous or data.size >= PARALLEL_THRESHOLD or \
            dispatch._pushed or registry._cuda_kernels is not None or \
            _anomaly.enabled or closed:
        return None
    hit = _RECENT.get(code)  # (op ids are distinct across families: the id names the op)
    if hit is not None and hit[0] is dt:
        return hit[1]
    kernels = _LOADED.get((code, dt, unary)) or _kernels(code, dt, unary)
    _RECENT[code] = (dt, kernels)
    return kernels


_RECENT: dict = {}  # op id -> (dtype, its kernels): the last used, tested by identity


def _moded(data):
    """While this thread's dispatch mode lets the lane serve its ops (``Mode.lane``: the re-run
    path of numgrad.compile, which records the kernel calls): that mode, for a float32 or
    float64 host array with no CUDA, anomaly mode or profile block in the way; else None. The
    lane then hands the mode the kernel call the op's ``forward`` makes (``Mode.record``: a
    served op's forward is ``K.binary(code, a, b)`` or ``K.unary(code, a)``), the call
    ``registry.apply`` would make, and records the node as ever."""
    stack = getattr(_modes, "stack", None)  # (``dispatch.current()``, inline)
    if not stack:
        return None
    mode = stack[-1]
    if not mode.lane or not mode.active:
        return None
    dt = data.dtype
    if (dt is not _F64 and dt is not _F32) or not isinstance(data, _ndarray) or \
            registry._cuda_kernels is not None or _anomaly.enabled or closed:
        return None
    return mode


def binary(op, code: int, input: Tensor, other, floating: bool = False):
    """``op(input, other)`` (an op declared ``lane="binary"``) for a float CPU tensor and a
    Python int or float, or for two float CPU tensors (``with_tensor``), or None. A float tensor
    with a number that the lane does not serve goes to ``registry.apply`` from here, with the
    operands ``binary_operands(input, other, floating)`` gives (its first case, without its
    call; not for ``floating``, true division, which takes its general rules)."""
    if type(other) is not float and type(other) is not int:
        return with_tensor(op, code, input, other) if isinstance(other, Tensor) else None
    data = input._data
    kernels = _kernels_of(data, code, False)
    if kernels is None:
        if not dispatch._pushed or (mode := _moded(data)) is None:
            if data.dtype.kind == "f" and not floating:  # (x * 0.5, large or strided)
                return registry.apply(op, (input, other), (data, data.dtype.type(other)))
            return None
        out = mode.record_scalar(code, data, other)  # (``binary_operands``' scalar)
    else:
        dt = data.dtype
        if data.ndim == 1:  # (``plain_binary``'s work, inline: this is the commonest call)
            out = dest = np.empty(data.size, dt)
            flat = data
        else:
            out = np.empty(data.shape, dt)
            flat, dest = data.ravel(), out.ravel()
        # (a float64 array takes a Python float as it is: Numba types it float64, the kernel's
        # signature, and it dispatches faster than a NumPy number; other numbers are converted)
        kernels.zip_1d_scalar(flat, other if type(other) is float and dt is _F64 else
                              dt.type(other), dest)
    if _grad.enabled and input._requires_grad:  # (its node, by the op's recorder)
        return op._record_number((input, other), out, {})
    return _wrap(out)


def with_tensor(op, code: int, input: Tensor, other: Tensor):
    """``op(input, other)`` for two float CPU tensors of one dtype, of one shape or the second a
    row of the first's last dimension, or None."""
    a, b = input._data, other._data
    shape = a.shape
    dt = a.dtype
    if dispatch._pushed:
        mode = _moded(a) if b.dtype is dt and isinstance(b, _ndarray) else None
        if mode is None or not (b.shape == shape or b.ndim == 1 and a.ndim > 1 and a.size and
                                shape[-1] == b.shape[0] > 1):
            return None
        out = mode.record_pair(code, a, b)  # (``registry.apply``'s call: ``binary_operands``
        #                                       gives both)
    elif b.shape == shape:
        out = plain_binary(code, a, b)
        if out is None:
            return None
    elif type(b) is _ndarray and b.ndim == 1 and a.ndim > 1 and a.size and \
            shape[-1] == b.shape[0] > 1 and b.dtype == dt and b.flags.c_contiguous and \
            (kernels := _kernels_of(a, code, False)) is not None:
        out = np.empty(shape, dt)  # (a row added to each row: ``kernels.cpu.binary``'s loop)
        dims, sa, sb = _row_plan(a.size // b.shape[0], b.shape[0], False)
        kernels.zip_strided(a.ravel(), sa, b, sb, dims, out.ravel())
    else:
        return None
    if _grad.enabled and (input._requires_grad or other._requires_grad):
        return op._record_pair((input, other), out, {})
    return _wrap(out)


def unary(op, code: int, input: Tensor):
    """``op(input)`` for a float CPU tensor (an op whose forward is ``K.unary(code, x)``, served:
    ``serve``), or None."""
    data = input._data
    kernels = _kernels_of(data, code, True)
    if kernels is None:
        if not dispatch._pushed or (mode := _moded(data)) is None:
            return None
        out = mode.record_unary(code, data)
    else:
        dt = data.dtype
        if data.ndim == 1:
            out = dest = np.empty(data.size, dt)
            kernels.map_1d(data, dest)
        else:
            out = np.empty(data.shape, dt)
            kernels.map_1d(data.ravel(), out.ravel())
    if _grad.enabled and input._requires_grad:
        return op._record_one((input,), out, {})
    return _wrap(out)


_ALL_DIMS = tuple(tuple(range(n)) for n in range(33))  # (``dims`` of a reduction of everything)


def reduce_all(op, input: Tensor, mean: bool):
    """``input.sum()`` (``op`` SumAll) or ``input.mean()`` (MeanAll) of a float32 or float64
    CPU tensor that is not empty, where the lane serves it; else None. What the general path
    runs: ``kernels.cpu.sum_dims``'s first case (below the threading size: larger sums add in
    another order), and for a mean ``_Mean.forward``'s quotient by Python's division (its count
    is exact, below 2**24), filled into the sum's array."""
    data = input._data
    dt = data.dtype
    n = data.size
    if type(data) is not _ndarray or not (dt == np.float32 or dt == np.float64) or not n or \
            n >= PARALLEL_THRESHOLD or not data.flags.c_contiguous or not _open():
        return None
    total = np.empty(1, dt)
    _sum_rows(data.reshape(1, n), total)
    out = total.reshape(())
    if mean:
        out.fill(out.item() / n)
    if _grad.enabled and input._requires_grad:
        return op._record_one((input,), out, {"dims": _ALL_DIMS[data.ndim], "keepdim": False})
    return _wrap(out)


def _open() -> bool:
    """Whether nothing needs every op to go through ``registry.apply`` now: no trace, CUDA,
    anomaly mode or profile block (``_kernels_of`` tests the same, inline)."""
    return not dispatch._pushed and registry._cuda_kernels is None and \
        not _anomaly.enabled and not closed


def plain_binary(code: int, a, b):
    """``kernels.cpu.binary(code, a, b)`` for a backward formula or the engine (no node): a plain
    float host array ``a`` with a number (a NumPy number of its dtype, or a Python int or float,
    converted as ``binary`` converts it), or with an array of its dtype and shape, both
    C-contiguous (not 0-d), where the lane serves ``a`` (``_kernels_of``); None for anything
    else. The same kernel on the same arrays as ``kernels.cpu.binary``."""
    kernels = _kernels_of(a, code, False)
    if kernels is None:
        return None
    dt = a.dtype
    pair = type(b) is _ndarray
    if not pair and (type(b) is float or type(b) is int):
        b = b if type(b) is float and dt is _F64 else dt.type(b)  # (as ``binary``)
    if (b.shape != a.shape or b.dtype != dt or not b.ndim or not b.flags.c_contiguous) if pair \
            else type(b) is not dt.type and (type(b) is not float or dt is not _F64):
        return None
    if a.ndim == 1:
        out = dest = np.empty(a.size, dt)
    else:
        out = np.empty(a.shape, dt)
        a, dest = a.ravel(), out.ravel()
        if pair:
            b = b.ravel()
    if pair:
        kernels.zip_1d(a, b, dest)
    else:
        kernels.zip_1d_scalar(a, b, dest)
    return out
