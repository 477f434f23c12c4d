"""The op registry: every differentiable primitive is declared once, as a subclass of ``Op``.

A declaration names the op and PyTorch's node name, gives its forward (arrays in, array out, via
the kernels of the inputs' device), what it saves and its backward formula (tensors in, tensors
out, so that with ``create_graph=True`` the backward pass is itself recorded), and sample inputs
from which the test harness gradchecks it and compares it with PyTorch. ``register`` builds the
node class and records the op; ``apply`` runs it and records the node.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .. import _lowp, dispatch
from .._dtype import torch_name
from ..autograd import anomaly_mode, grad_mode
from ..autograd.graph import pack_all
from ..autograd.node import OpNode, SavedTensor
from ..kernels import cpu as _cpu_module

_lowp.install(_cpu_module)  # (its kernels called directly on narrow arrays: run on them widened)
from ..tensor import Tensor


class Sample(NamedTuple):
    """A test case: ``call(module, *tensors)`` must give the same on numgrad and PyTorch.

    ``shapes`` gives the tensor arguments (float tensors drawn uniformly from [low, high]);
    ``grad`` says whether they are gradchecked, ``gradgrad`` whether second derivatives are,
    with step ``eps`` and tolerance ``atol``.
    """

    call: Callable
    shapes: tuple
    low: float = -2.0
    high: float = 2.0
    grad: bool = True
    gradgrad: bool = True
    eps: float = 1e-6  # the finite-difference step; larger for ops that round (casts)
    atol: float = 1e-5


class Op:
    """Declaration of one primitive. Subclass it and decorate with ``@register``."""

    name: str = ""  # the public name, e.g. "mul"
    node: str = ""  # PyTorch's node name, e.g. "MulBackward0"
    save_inputs: tuple = ()  # indices of the inputs the backward formula needs
    save_output: bool = False  # whether it needs the output
    # {saved input: the input whose gradient alone needs it}: that input is saved only when that
    # gradient is needed (else its slot holds None), as PyTorch saves ``self`` for mul only when
    # ``other`` requires grad. Besides the work, this decides which in-place writes backward
    # reports: writing to ``x`` after ``x * 2`` is allowed, as in PyTorch.
    save_only_for: dict | None = None
    is_view: bool = False  # the output shares the first input's storage (and version counter)
    differentiable: bool = True  # False: the output never requires grad (comparisons)
    # Whether its node may be the one node of several results (``apply_parts``: split's parts,
    # std_mean's pair), as PyTorch's: its ``backward`` then gets a list, a gradient or None per
    # result, where the node has more than one.
    several: bool = False
    samples: tuple = ()  # Sample cases for the test harness
    node_class: type = OpNode
    # Whether forward and backward run on CUDA tensors. An op whose forward or backward still
    # calls NumPy directly says False, and CUDA inputs get a clear NotImplementedError.
    on_cuda: bool = False
    # Whether it takes complex tensors (PyTorch's way, gradients the conjugate Wirtinger
    # derivative); a complex input to an op that does not raises PyTorch's "not implemented for
    # 'ComplexFloat'". By default the ops of the families that only move or copy elements do.
    complex_ok: bool = False
    # Whether its forward takes the narrow dtypes (float16, bfloat16, uint8, int8, int16) as they
    # are; else ``apply`` runs it on them widened (``numgrad._lowp``). By default the views do.
    narrow_ok: bool = False
    _lane = None  # what the eager fast lane saves for this op (``ops/_lane.serve``); None: unserved
    # The dtype codes ``apply`` looks for in its arrays: complex ones unless ``complex_ok``, the
    # narrow ones unless ``narrow_ok`` (``register`` sets it from them); None: neither.
    _special = frozenset("FDG") | _lowp.NARROW_CHARS
    _refuses_complex = True

    @staticmethod
    def forward(K, *arrays, **params):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        """Gradients of the inputs (tensors or None), given ``ctx`` (the node: ``saved_tensors``,
        ``params``, ``needs_input_grad``) and the output's gradient."""
        raise NotImplementedError

    # The forward-mode (jvp) rule, PyTorch's ``result:`` row of derivatives.yaml: called as
    # ``jvp(ctx, *tangents)`` with ``ctx`` an ``autograd.forward_ad.JvpContext`` (``inputs``,
    # ``params``, ``result``, ``saved_tensors``, ``needs_input_grad``) and one tangent or None per
    # input, it returns the output's tangent (None: zero), computed with tensor ops so that it is
    # itself differentiable. The generic rules are in ``ops._jvp``. None: the op
    # has none yet (PyTorch's NotImplementedError under forward AD).
    jvp = None


REGISTRY: dict[str, type[Op]] = {}
# The op families whose values are elements moved or copied, whatever their dtype.
_MOVE_ONLY = {"shape", "strided", "convert", "indexing", "scatter_views", "resize", "complex"}


def register(op: type[Op]) -> type[Op]:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    # PyTorch's C++ nodes have a qualified name() (torch::autograd::CopySlices) but their Python
    # type, which reprs show, has the last part only.
    # (The node of an op of several results has a ``__dict__``: ``_num_outputs`` and
    # ``output_shapes`` are set on the node that becomes one, the class's 1 read otherwise.)
    op.node_class = type(op.node.split("::")[-1], (OpNode,),
                         {"op": op, "_name": op.node} if op.several else
                         {"__slots__": (), "op": op, "_name": op.node})
    if "complex_ok" not in op.__dict__:
        op.complex_ok = op.complex_ok or op.__module__.rpartition(".")[2] in _MOVE_ONLY
    if "narrow_ok" not in op.__dict__:
        op.narrow_ok = op.narrow_ok or op.is_view
    op._special = ((frozenset() if op.complex_ok else _COMPLEX) |
                   (frozenset() if op.narrow_ok else _lowp.NARROW_CHARS)) or None
    op._refuses_complex = not op.complex_ok  # (its complex test runs in any process)
    only_for = op.save_only_for or {}
    op._save_plan = tuple((i, only_for.get(i, -1)) for i in op.save_inputs)
    REGISTRY[op.name] = op
    return op


# The CUDA kernel module once CUDA has been used in this process (set by numgrad.cuda.kernels());
# until then every op runs on the CPU without looking at devices.
_cuda_kernels = None
_grad = grad_mode.state  # (one thread-local object, its flag set in place)


def enable_device_dispatch(cuda_kernels) -> None:
    global _cuda_kernels
    _cuda_kernels = cuda_kernels


def _moded(K):
    """``K``, or what the active dispatch mode (``numgrad.dispatch``: numgrad.compile's trace)
    has the ops use instead."""
    mode = dispatch.current()
    return K if mode is None else mode.use(K)


def cpu():
    """The CPU kernel module the ops of this thread use now."""
    return _moded(_cpu_module) if dispatch._pushed else _cpu_module


def __getattr__(name):
    if name == "cpu_kernels":  # (``registry.cpu_kernels``: the CPU module the ops use now)
        return cpu()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kernels_of(array):
    """The kernel module of the device that holds ``array`` (a NumPy or a device array)."""
    K = _cpu_module if isinstance(array, np.ndarray) else _cuda_kernels
    return _moded(K) if dispatch._pushed else K


def kernels_for(inputs, op: type[Op] | None = None):
    """The kernel module of the device of ``inputs`` (tensors and constants): PyTorch's error
    for tensors on two devices, and a NotImplementedError for an op not yet ported to CUDA."""
    K = _device_kernels(inputs, op)
    return _moded(K) if dispatch._pushed else K


def _device_kernels(inputs, op):
    if _cuda_kernels is None:
        return _cpu_module
    on_cuda = on_cpu = False
    for t in inputs:
        if isinstance(t, Tensor):
            if isinstance(t._data, np.ndarray):
                on_cpu = True
            else:
                on_cuda = True
    if not on_cuda:
        return _cpu_module
    if on_cpu:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!"
        )
    if op is not None and not op.on_cuda:
        raise NotImplementedError(f"{op.name} is not implemented for CUDA tensors yet")
    return _cuda_kernels


def apply(op: type[Op], inputs: tuple, arrays: tuple, **params) -> Tensor:
    """Runs ``op`` on ``arrays`` (the data of ``inputs``, already promoted) with the kernels of
    their device and, if grad mode is on and an input requires grad, records a node. ``inputs``
    may hold non-tensor constants."""
    K = _cpu_module if _cuda_kernels is None and not dispatch._pushed else \
        kernels_for(inputs, op)
    special = op._special  # (the dtypes it refuses or computes wider, by their NumPy codes)
    if special is not None and (_lowp.active or op._refuses_complex):
        for a in arrays:
            char = getattr(a, "dtype", _REAL).char
            if char in special:
                if char in _COMPLEX:
                    _not_complex(op, a)
                # (float16, bfloat16, the small integers: computed wider, ``numgrad._lowp``)
                return _apply_narrow(op, K, inputs, arrays, params)
    out = op.forward(K, *arrays, **params)
    if _grad.enabled and op.differentiable:
        for t in inputs:
            if isinstance(t, Tensor) and t._requires_grad:
                result = _record(op, inputs, Tensor._wrap(out, True), params)
                if op.is_view:
                    _view_of(result, inputs[0], op.node)
                if _forward_ad is not None:  # (forward AD: the result's tangents)
                    return _forward_ad(op, inputs, arrays, params, result)
                return result
    result = Tensor._wrap(out)
    if op.is_view:
        _view_of(result, inputs[0], op.node)
    if _forward_ad is not None:
        return _forward_ad(op, inputs, arrays, params, result)
    return result


def apply_parts(calls, inputs: tuple, arrays: tuple) -> tuple:
    """The results of ``apply(op, inputs, arrays, **params)`` for each ``(op, params)`` of
    ``calls``, recorded as outputs 0, 1, ... of one node (the first call's, of an op declared
    ``several``), as PyTorch records one node for all of split's parts and std_mean's pair: each
    result's ``grad_fn`` is that node, its ``output_nr`` its place. The node's backward gets one
    gradient or None per result (``several``)."""
    op, params = calls[0]
    first = apply(op, inputs, arrays, **params)
    node = first._grad_fn
    if node is None or type(node) is not op.node_class:  # (nothing recorded)
        return (first,) + tuple(apply(o, inputs, arrays, **p) for o, p in calls[1:])
    _grad.enabled = False  # (the others recorded by this node: none of their own)
    try:
        parts = (first,) + tuple(apply(o, inputs, arrays, **p) for o, p in calls[1:])
    finally:
        _grad.enabled = True
    node._num_outputs = len(parts)
    node.output_shapes = tuple(p._data.shape for p in parts)
    for i, p in enumerate(parts):
        if getattr(p, "_multi_nr", None) == "":  # (made with grad off here, not by the user)
            del p._multi_nr
        p._requires_grad = True
        p._grad_fn = node  # (a view's history current as of its ``_view_of``)
        p._output_nr = i
    return parts


_REAL = np.dtype(np.float64)  # (the dtype of an input that has none: a number)
_COMPLEX = frozenset("FDG")  # (NumPy's codes of the complex dtypes)


def _apply_narrow(op, K, inputs, arrays, params) -> Tensor:
    """``apply`` for arrays among which some are of a narrow dtype: run on them widened, the
    result rounded back to the narrow dtype where it is of the widened one (``numgrad._lowp``)."""
    wide, back = _lowp.widened(K, arrays)
    result = apply(op, inputs, wide, **params)
    result._data = _lowp.narrowed(K, result._data, back)
    return result


def _not_complex(op, a):
    raise NotImplementedError(f'"{op.name}" not implemented for \'{torch_name(a.dtype)}\'')


# ``autograd.forward_ad.propagate`` while a forward-AD level is open (the outputs' tangents, by
# the ops' ``jvp`` rules), else None
_forward_ad = None


def _view_of(result: Tensor, base: Tensor, node: str | None = None) -> None:
    """Makes ``result`` a view of ``base``: its root base, storage and version counter. Its
    ``_multi_nr`` says how PyTorch would refuse an in-place write into it in grad mode
    (``check_multi_view``): an int, as one of split's parts or a view of one; "" made in no_grad
    mode; the name of the view op (``node``) that made it of a view made in no_grad mode."""
    counter = result._version_counter = base._version_counter
    result._base = base if base._base is None else base._base
    result._view_version = counter.value  # (its history is current as of this version)
    nr = getattr(base, "_multi_nr", None) if base._base is not None else None
    if nr is not None:  # (a view of split's part: PyTorch's MULTI_OUTPUT_NODE, inherited; of
        #                  a view made in no_grad mode: PyTorch's name for it, the op's)
        result._multi_nr = 0 if type(nr) is int else (
            node or "View").split("::")[-1].partition("Backward")[0]
    elif not _grad.enabled:
        result._multi_nr = ""  # (made in no_grad mode: PyTorch's CreationMeta::NO_GRAD_MODE)


_NO_GRAD_VIEW = ("Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                 "clarify your code by moving both the view and the inplace either both inside "
                 "the no_grad block (if you don't want the inplace to be tracked) or both outside "
                 "(if you want the inplace to be tracked).")
_MULTI_VIEW = ("This view is the output of a function that returns multiple views. Such functions "
               "do not allow the output views to be modified inplace. You should replace the "
               "inplace operation by an out-of-place one.")


def check_multi_view(t: Tensor, via: str | None = None) -> None:
    """PyTorch's error for a recorded in-place write into a view ``t`` (``t._base`` set) that is
    one of the outputs of split/chunk/unbind or a view of one (``_multi_nr`` set by them in grad
    mode, inherited by ``_view_of``; unsafe_split's parts have none). ``via``: the name of the
    view of ``t`` that the write goes through (an indexed write's Select, Slice, ...)."""
    nr = getattr(t, "_multi_nr", None)
    if nr is None:
        return
    if type(nr) is str:  # (a view made in no_grad mode, or a view of one: PyTorch's words)
        if nr or via is not None:
            raise RuntimeError(f"Output 0 of {via or nr} is a view of a view which was created "
                               "in no_grad mode and is being modified inplace with grad mode "
                               "enabled. " + _NO_GRAD_VIEW)
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. " + _NO_GRAD_VIEW)
    fn = t.grad_fn
    if fn is None:  # (the view does not require grad; what is written does)
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with "
                           "grad mode enabled. " + _MULTI_VIEW)
    if via is not None:
        nr, name = 0, via
    else:
        name = fn.name()
        name = name[:name.rindex("Backward")] if "Backward" in name else name
    raise RuntimeError(f"Output {nr} of {name} is a view and is being modified inplace. "
                       + _MULTI_VIEW)


_NO_EDGE = (None, 0)
_anomaly = anomaly_mode.state  # (one object, its flag set in place)


def _meta(t):
    """(edge, needs grad, shape, dtype) of one input of a recorded op."""
    if isinstance(t, Tensor):
        data = t._data
        if t._requires_grad:
            fn = t._grad_fn if t._base is None else t.grad_fn  # (a view's may be stale)
            if fn is None:
                return (t._grad_accumulator(), 0), True, data.shape, data.dtype
            nr = 0 if fn._num_outputs == 1 else getattr(t, "_output_nr", 0)  # (split's parts)
            return (fn, nr), True, data.shape, data.dtype
        return _NO_EDGE, False, data.shape, data.dtype
    return _NO_EDGE, False, None, None


def _record(op, inputs, result, params) -> Tensor:
    cls = op.node_class
    node = cls.__new__(cls)
    node._pre_hooks = node._retained = None
    n = len(inputs)
    if n == 2:  # (most ops, and a tensor with a number: ``_meta`` unrolled, for both inputs)
        a, b = inputs
        if isinstance(a, Tensor):
            data = a._data
            if a._requires_grad:
                fn = a._grad_fn if a._base is None else a.grad_fn  # (a view's may be stale)
                if fn is None:  # (a leaf: its live node, else a new one)
                    ref = a._accumulator
                    fn = ref() if ref is not None else None
                    if fn is None:
                        fn = a._grad_accumulator()
                    ea = (fn, 0)
                elif fn._num_outputs == 1:
                    ea = (fn, 0)
                else:  # (one of a node's several outputs: split's parts)
                    ea = (fn, getattr(a, "_output_nr", 0))
                na = True
            else:
                ea, na = _NO_EDGE, False
            sa, ta = data.shape, data.dtype
        else:
            ea, na, sa, ta = _NO_EDGE, False, None, None
        if isinstance(b, Tensor):
            data = b._data
            if b._requires_grad:
                fn = b._grad_fn if b._base is None else b.grad_fn
                if fn is None:  # (a leaf: its live node, else a new one)
                    ref = b._accumulator
                    fn = ref() if ref is not None else None
                    if fn is None:
                        fn = b._grad_accumulator()
                    eb = (fn, 0)
                elif fn._num_outputs == 1:
                    eb = (fn, 0)
                else:  # (one of a node's several outputs: split's parts)
                    eb = (fn, getattr(b, "_output_nr", 0))
                nb = True
            else:
                eb, nb = _NO_EDGE, False
            sb, tb = data.shape, data.dtype
        else:
            eb, nb, sb, tb = _NO_EDGE, False, None, None
        node.next_functions = (ea, eb)
        needs = node.needs_input_grad = (na, nb)
        node.input_shapes = (sa, sb)
        node.input_dtypes = (ta, tb)
    elif n == 1:
        ea, na, sa, ta = _meta(inputs[0])
        node.next_functions = (ea,)
        needs = node.needs_input_grad = (na,)
        node.input_shapes = (sa,)
        node.input_dtypes = (ta,)
    else:
        edges, needs, shapes, dtypes = zip(*map(_meta, inputs)) if inputs else ((),) * 4
        node.next_functions = edges
        node.needs_input_grad = needs
        node.input_shapes = shapes
        node.input_dtypes = dtypes
    # Where CUDA is in use, whether each input is on the host, for the engine's device check.
    node.input_devices = None if _cuda_kernels is None else tuple(
        isinstance(t._data, np.ndarray) if isinstance(t, Tensor) else None for t in inputs)
    node.params = params
    plan = op._save_plan
    if plan:
        # (input, the input whose gradient alone needs it or -1), see ``register``
        saved = []
        for i, j in plan:
            if j >= 0 and not needs[j]:
                saved.append(None)
            else:
                t = inputs[i]
                saved.append(SavedTensor(t, False) if isinstance(t, Tensor) else t)
        if op.save_output:
            saved.append(SavedTensor(result, True))
        node._saved = tuple(saved)
    else:
        node._saved = (SavedTensor(result, True),) if op.save_output else ()
    node._released = False
    if _anomaly.enabled:
        anomaly_mode.record(node)
    result._grad_fn = node  # (a fresh result: not a view yet, so no version to note)
    return result


_record_plain = _record


def _record_packing(op, inputs, result, params) -> Tensor:
    """``_record`` while saved-tensor hooks are open in some thread (``autograd.graph`` swaps it
    in, and the fast lane out): the node's saved tensors packed by this thread's innermost
    hooks."""
    result = _record_plain(op, inputs, result, params)
    node = result._grad_fn
    if node._saved:
        node._saved = pack_all(node._saved, node)
    return result
