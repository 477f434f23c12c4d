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
from ..autograd.node import SavedTensor
from ..kernels import cpu as cpu_kernels
from ..kernels.cpu.elementwise import _LOADED, PARALLEL_THRESHOLD, _kernels, _row_plan
from ..kernels.cpu.reduction import _sum_rows
from ..tensor import Tensor, _VersionCounter
from . import registry

_grad = grad_mode.state
_anomaly = anomaly_mode.state
_ndarray = np.ndarray
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)  # (the arrays' own dtype objects)
_new = object.__new__
_modes = dispatch._local  # (.stack: this thread's dispatch modes)
_NO_EDGE = registry._NO_EDGE
_ONLY_FIRST = (True, False)  # needs_input_grad of a tensor with a number
_BOTH = (True, True)
# How many things need every op to run through ``registry.apply`` now: ``autograd.profiler``
# counts its profile blocks here.
closed = 0


def _tensor(data, requires_grad: bool) -> Tensor:
    """``Tensor._wrap``, inline (a plain function: the classmethod's binding costs more than
    the rest of it on the lane's hot calls)."""
    t = _new(Tensor)
    t._data = data
    t._requires_grad = requires_grad
    t._grad = t._grad_fn = t._hooks = t._accumulator = t._base = None
    t._version_counter = _VersionCounter()
    return t


def _saved_input(t: Tensor) -> SavedTensor:
    """``SavedTensor(t, False)``, inline."""
    s = _new(SavedTensor)
    s.tensor = t
    s.data = None
    s.counter = counter = t._version_counter
    s.version = counter.value
    return s


_OUTPUT = object()  # ``saved`` of ``_recorded`` for an op that saves its output


def _recorded(op, out, edges, needs, shapes, dtypes, saved) -> Tensor:
    """A result that requires grad, wrapping ``out``, with ``op``'s node: the fields
    ``registry._record`` sets. ``saved`` is the node's saved values, or ``_OUTPUT``."""
    result = _new(Tensor)
    result._data = out
    result._requires_grad = True
    result._grad = result._hooks = result._accumulator = result._base = None
    result._version_counter = counter = _VersionCounter()
    if saved is _OUTPUT:  # (``SavedTensor(result, True)``, inline)
        s = _new(SavedTensor)
        s.tensor = None
        s.data = out
        s.requires_grad = True
        s.counter = counter
        s.version = 0
        saved = (s,)
    cls = op.node_class
    node = _new(cls)
    node._pre_hooks = node._retained = node.input_devices = None
    node.next_functions = edges
    node.needs_input_grad = needs
    node.input_shapes = shapes
    node.input_dtypes = dtypes
    node.params = {}
    node._saved = saved
    node._released = False
    result._grad_fn = node
    return result


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


def binary(op, code: int, input: Tensor, other):
    """``op(input, other)`` for a float CPU tensor and a Python int or float, or for two float
    CPU tensors (``with_tensor``), or None."""
    if type(other) is not float and type(other) is not int:
        return with_tensor(op, code, input, other) if isinstance(other, Tensor) else None
    plan = op._lane
    data = input._data
    kernels = _kernels_of(data, code, False) if plan is not None else None
    if kernels is None:
        if plan is None or not dispatch._pushed or (mode := _moded(data)) is None:
            return None
        out = mode.record_scalar(code, data, other)  # (``binary_operands``' scalar)
        return _binary_result(op, out, input, other, plan)
    dt = data.dtype
    if data.ndim == 1:  # (``plain_binary``'s work, inline: this is the commonest call)
        out = dest = np.empty(data.size, dt)
        flat = data
    else:
        out = np.empty(data.shape, dt)
        flat, dest = data.ravel(), out.ravel()
    # (a float64 array takes a Python float as it is: Numba types it float64, the kernel's
    # signature, and it dispatches faster than a NumPy number; other numbers are converted)
    kernels.zip_1d_scalar(flat, other if type(other) is float and dt is _F64 else dt.type(other),
                          dest)
    return _binary_result(op, out, input, other, plan)


def _binary_result(op, out, input: Tensor, other, plan) -> Tensor:
    """The result of ``op(input, other)`` with a number, its node recorded where one is."""
    if not (_grad.enabled and input._requires_grad):
        return _tensor(out, False)
    data = input._data
    fn = input._grad_fn if input._base is None else input.grad_fn  # (``_edge``, inline)
    if fn is None:
        edge = input._grad_accumulator(), 0
    else:
        edge = fn, (0 if fn._num_outputs == 1 else getattr(input, "_output_nr", 0))
    return _recorded(op, out, (edge, _NO_EDGE),
                     _ONLY_FIRST, (data.shape, None), (data.dtype, None),
                     (None, other) if plan else ())


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
    na, nb = input._requires_grad, other._requires_grad
    if not (_grad.enabled and (na or nb)):
        return _tensor(out, False)
    plan = op._save_plan
    if input is other:  # (``y * y``: one saved value and one edge, each given twice)
        edge = _edge(input)
        saved = (_saved_input(input),) * len(plan) if plan else ()
        return _recorded(op, out, (edge, edge), _BOTH, (shape, shape), (dt, dt), saved)
    needs = (na, nb)
    if plan:  # (as ``registry._record``: an input saved only where a needed gradient uses it)
        (i, j), (k, m) = plan  # (each served op that saves inputs saves both)
        inputs = (input, other)
        saved = (None if j >= 0 and not needs[j] else _saved_input(inputs[i]),
                 None if m >= 0 and not needs[m] else _saved_input(inputs[k]))
    else:
        saved = ()
    return _recorded(op, out, (_edge(input) if na else _NO_EDGE,
                               _edge(other) if nb else _NO_EDGE),
                     needs, (shape, b.shape), (dt, dt), saved)


def _edge(t: Tensor) -> tuple:
    """The edge to the history of ``t`` (which requires grad), as ``registry._record`` makes
    it."""
    fn = t._grad_fn if t._base is None else t.grad_fn  # (a view's may be stale)
    if fn is None:
        return t._grad_accumulator(), 0  # (a leaf: its live node)
    return fn, (0 if fn._num_outputs == 1 else getattr(t, "_output_nr", 0))  # (split's parts)


def unary(op, code: int, input: Tensor):
    """``op(input)`` for a float CPU tensor (an op whose forward is ``K.unary(code, x)``, served:
    ``serve``), or None."""
    data = input._data
    kernels = _kernels_of(data, code, True)
    if kernels is None:
        if not dispatch._pushed or op._lane is None or (mode := _moded(data)) is None:
            return None
        return _unary_result(op, mode.record_unary(code, data), input)
    dt = data.dtype
    if data.ndim == 1:
        out = dest = np.empty(data.size, dt)
        kernels.map_1d(data, dest)
    else:
        out = np.empty(data.shape, dt)
        kernels.map_1d(data.ravel(), out.ravel())
    return _unary_result(op, out, input)


def _unary_result(op, out, input: Tensor) -> Tensor:
    """The result of unary ``op(input)``, its node recorded where one is."""
    if not (_grad.enabled and input._requires_grad):
        return _tensor(out, False)
    plan = op._lane
    data = input._data
    saved = _OUTPUT if plan == "output" else (_saved_input(input),) if plan == "input" else ()
    return _recorded(op, out, (_edge(input),), (True,), (data.shape,), (data.dtype,), saved)


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
    if not (_grad.enabled and input._requires_grad):
        return _tensor(out, False)
    result = _recorded(op, out, (_edge(input),), (True,), (data.shape,), (dt,), ())
    result._grad_fn.params = {"dims": _ALL_DIMS[data.ndim], "keepdim": False}
    return result


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


def serve(op, unary: bool = False) -> type:
    """Marks ``op`` as served by the lane, with what its node saves (``_lane``), read from its
    declaration once: for a binary op with a number, () or (None, the number), for a unary op
    "output", "input" or (). An op that saves anything else gets None: the lane leaves it to the
    general path. Returns ``op``."""
    if unary:
        plan = ("output" if op.save_output and not op.save_inputs else
                "input" if op.save_inputs == (0,) and not op.save_output else
                () if not (op.save_inputs or op.save_output) else None)
    else:  # (``registry._record``'s rule, for needs_input_grad (True, False))
        if len(op._save_plan) not in (0, 2):  # (``with_tensor`` saves none or both inputs)
            raise TypeError(f"the lane serves binary ops that save no input or both: {op.name}")
        kept = tuple(None if j >= 0 and not _ONLY_FIRST[j] else i for i, j in op._save_plan)
        plan = {(): (), (None, 1): (None, 1)}.get(kept) if not op.save_output else None
    op._lane = plan
    return op
