"""The op registry: every differentiable primitive is declared once, as a subclass of ``Op``.

A declaration names the op and PyTorch's node name, gives its forward (arrays in, array out, via
the kernels of the inputs' device), what it saves and its backward formula (tensors in, tensors
out, so that with ``create_graph=True`` the backward pass is itself recorded), and sample inputs
from which the test harness gradchecks it and compares it with PyTorch. ``register`` builds the
node class and records the op; ``apply`` runs it and records the node.
"""
from __future__ import annotations

import functools
import sys
import threading
import textwrap
from typing import Callable, NamedTuple

import numpy as np

from .. import _lowp, dispatch
from .._dtype import float_number as _float_number
from .._dtype import torch_name
from ..autograd import anomaly_mode, grad_mode
from ..autograd.node import OpNode
from ..autograd.node import MADE as _MADE
from ..autograd.node import MAKE as _MAKE
from ..autograd.node import MAKE_NAMES as _MAKE_NAMES
from ..autograd.node import save as _save
from ..kernels import cpu as _cpu_module
from ..kernels.cpu.elementwise import _LOADED, PARALLEL_THRESHOLD, _row_plan
from ..kernels.cpu.elementwise import _kernels as _elementwise_kernels
from ..kernels.cpu.reduction import _sum_rows

_lowp.install(_cpu_module)  # (its kernels called directly on narrow arrays: run on them widened)
from ..tensor import Tensor, _VersionCounter


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
    # Whether the eager fast lane serves its calls on small float CPU tensors, and how (``LANES``:
    # the template of its fast apply, ``op._fast``): "binary", for an op whose forward is
    # ``K.binary(K.<code>, a, b)`` (a tensor with a number, two tensors of one shape, a row added
    # to each row), "division" the same for true division (a number the lane does not serve
    # goes back to the public function, whose promotion makes integers float), "unary" for
    # ``K.unary(K.<code>, x)``, "sum" and "mean" for a reduction of everything; its node is then
    # recorded by its recorders for what the lane knows (``RECORDERS``).
    lane: str | None = None
    _lane = None  # ``lane``, where ``register`` gave it its fast apply and its recorders
    # Its fast apply, where it declares ``lane``: ``op._fast(input, other)`` or ``op._fast(input)``
    # gives the result, or None for a call the lane does not serve (the caller then takes the
    # general path); written from ``LANES``' template for it at its first call (``apply_source``).
    _fast: Callable
    # The op's recorder, ``_record(inputs, out, params, result=None)`` (``_generate``; and the
    # fast lane's, ``RECORDERS``), written from this declaration at its first call.
    _record: Callable
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

    # The backward of its node and of its input's node at once, where the engine finds that node
    # is the input's only consumer and nothing observes the gradient between them (no hooks,
    # no retained grad, no create_graph): ``through(node, child, grad)`` gives the gradients of
    # ``child``'s inputs (the engine goes on from ``child`` as if it had run), or None where
    # the pair is not one it fuses (the two then run one after the other). The values are
    # the two backwards' (``NllLoss``: through log_softmax, without writing the one-hot
    # gradient of the log-probabilities).
    through = None

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
    """Sets ``op`` up (``prepare``) and records it in ``REGISTRY`` (whose ops the test harness
    runs). Returns ``op``."""
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    REGISTRY[prepare(op).name] = op
    return op


def prepare(op: type[Op]) -> type[Op]:
    """Makes ``op`` ready to ``apply``, from its declaration: its node class, the dtypes it
    refuses or widens, its save plan and its recorders; ``register`` does it for every op (a
    test's own op may be prepared alone, outside the registry). Returns ``op``."""
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
    lazy_recorders(op, None)  # (its recorder: written at its first call)
    if op.lane is not None:
        lazy_recorders(op, *LANES[op.lane][1])
        op._fast = functools.partial(_first_fast, op)  # (written at its first call)
        op._lane = op.lane
    return op


# The CUDA kernel module once CUDA has been used in this process (set by numgrad.cuda.kernels());
# until then every op runs on the CPU without looking at devices.
_cuda_kernels = None
_registry = sys.modules[__name__]  # (the recorders read ``_cuda_kernels`` here)
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
                result = op._record(inputs, out, params)  # (a view's too)
                if _forward_ad is not None and not _narrow_call.widened:
                    return _forward_ad(op, inputs, arrays, params, result)  # (its tangents)
                return result
    result = Tensor._wrap(out)
    if op.is_view:
        _view_of(result, inputs[0], op.node)
    if _forward_ad is not None and not _narrow_call.widened:
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
    forward_ad, given = _forward_ad, params
    for k, v in params.items():  # (a number or an array of a narrow dtype among the parameters:
        #                             ``x - 1``, nll_loss's class weights)
        if isinstance(v, (np.generic, np.ndarray)) and v.dtype.num in _lowp.NARROW:
            if params is given:
                params = dict(given)
            params[k] = _lowp.widened(K, (v,))[0][0]
    if forward_ad is None or _narrow_call.widened:
        result = apply(op, inputs, wide, **params)
    else:  # (forward AD: the tangents once the result is narrow, as the op's, below; this
        #    thread's widened call makes none, another thread's ops theirs meanwhile)
        _narrow_call.widened = True
        try:
            result = apply(op, inputs, wide, **params)
        finally:
            _narrow_call.widened = False
    result._data = _lowp.narrowed(K, result._data, back)
    if params.get("inplace") and wide[0] is not arrays[0]:
        # (an op that writes into its first array, ``index_put_``, a write through a view: it
        # wrote into the widened copy, so the tensor's own array takes the result)
        K.assign(arrays[0], result._data)
        result._data = arrays[0]
    if forward_ad is not None and not _narrow_call.widened:
        # (the rule sees the narrow arrays, result and tangents, as PyTorch's formulas run on
        # Half/BFloat16 tensors: each of its ops rounds to the narrow dtype; run inside the
        # widened call, it saw float32 and made float32 tangents, and bfloat16's "V2" arrays
        # were not taken for floats)
        return forward_ad(op, inputs, arrays, given, result)
    return result


def _not_complex(op, a):
    raise NotImplementedError(f'"{op.name}" not implemented for \'{torch_name(a.dtype)}\'')


# ``autograd.forward_ad.propagate`` while a forward-AD level is open (the outputs' tangents, by
# the ops' ``jvp`` rules), else None
_forward_ad = None


class _NarrowCall(threading.local):
    """``widened``: this thread is inside a float16/bfloat16 op's widened call
    (``_apply_narrow``), whose ops make no tangents (the narrow op makes its own after)."""

    widened = False


_narrow_call = _NarrowCall()


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


def _row(items) -> str:
    """A tuple's source: ``(a, b)``, ``(a,)`` or ``()``."""
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


_HERE = __file__[:-len("registry.py")]
_CODE: dict = {}  # source -> its code object (ops of one shape share the compiled source)


# ------------------------------------------------------------------ the generated recorders
# Each op's recorder, ``op._record(inputs, out, params, result=None)``: makes ``out`` (or
# ``result``, a fresh tensor of it) the output of a new node of ``op.node_class`` over ``inputs``
# (tensors and constants), saving what the op's backward needs. It is Python source written for
# the op from its declaration, as PyTorch writes its autograd functions from derivatives.yaml:
# unrolled for its count of inputs (the count of the first call; an op then called with another
# count takes the form with a loop), its save plan (``save_inputs``, ``save_only_for``,
# ``save_output``) and ``is_view``, and, for the fast lane's recorders (``RECORDERS``), for what
# the caller knows of its inputs; compiled at its first call (``_generate``), its source kept as
# ``op._record_source`` (``record_source``). The rules it is made of, each written once: an
# input's edge, grad need, shape and dtype (``_edge``); the result (``_WRAP``: ``Tensor._wrap``'s
# fields); a saved value (``node.save``); the node (``node.MAKE``/``MADE``, the body of the one
# node constructor ``node.make``, written inline).

# One input ``{x}``'s edge ``e{k}``, whether its gradient is needed ``n{k}``, its shape and dtype
# ``s{k}``, ``t{k}``: for an input that may be anything, a tensor (one that requires grad) or a
# number, as far as the caller knows (its kind: "any", "tensor", "grad", "number").
_EDGE_OF_GRAD = """\
fn = {x}._grad_fn if {x}._base is None else {x}.grad_fn  # (a view's may be stale)
if fn is None:  # (a leaf: its live node, else a new one)
    ref = {x}._accumulator
    fn = ref() if ref is not None else None
    if fn is None:
        fn = {x}._grad_accumulator()
    e{k} = (fn, 0)
elif fn._num_outputs == 1:
    e{k} = (fn, 0)
else:  # (one of a node's several outputs: split's parts)
    e{k} = (fn, getattr({x}, "_output_nr", 0))
n{k} = True"""
_SHAPE = "data = {x}._data\ns{k}, t{k} = data.shape, data.dtype"
_NUMBER = "e{k}, n{k}, s{k}, t{k} = _NO_EDGE, False, None, None"


def _edge(kind: str, x: str, k) -> str:
    """The lines that find input ``x``'s ``e{k}``, ``n{k}``, ``s{k}``, ``t{k}``, for its kind."""
    def indented(text):
        return textwrap.indent(text, "    ")

    grad = _EDGE_OF_GRAD
    tensor = f"{_SHAPE}\nif {{x}}._requires_grad:\n{indented(grad)}\nelse:\n" \
             "    e{k}, n{k} = _NO_EDGE, False"
    text = {"grad": f"{_SHAPE}\n{grad}", "tensor": tensor, "number": _NUMBER,
            "any": f"if isinstance({{x}}, Tensor):\n{indented(tensor)}\nelse:\n"
                   f"{indented(_NUMBER)}"}[kind]
    return indented(text.format(x=x, k=k))


# The result: ``Tensor._wrap(out, True)``'s fields, unless the caller gave it.
_WRAP = """\
    if result is None:
        result = _new(Tensor)
        result._data = out
        result._requires_grad = True
        result._grad = result._grad_fn = result._hooks = result._accumulator = None
        result._base = None
        result._version_counter = _Counter()"""


def _source(op, arity, kinds=None) -> str:
    """The recorder of ``op`` for ``arity`` inputs (None: any count, in a loop), of the ``kinds``
    the caller knows them to be (``_edge``; None: anything)."""
    name = op.node.split("::")[-1]
    of = "" if kinds is None else f" ({', '.join(kinds)})"
    lines = [f"def record_{name}{'_'.join(('',) + (kinds or ()))}(inputs, out, params, "
             "result=None):",
             f'    """``out`` (an array; or ``result``, a fresh tensor of it) as the output of '
             f'``{op.name}``\'s\n    node, {name}, over ``inputs``{of}: the result."""']
    if arity is None:
        lines.append("    edges, needs, shapes, dtypes = zip(*map(_meta, inputs)) if inputs "
                     "else ((),) * 4")
        x = "inputs[{}]".format
        need = "needs[{}]".format
        devices = "tuple(isinstance(t._data, _ndarray) if isinstance(t, Tensor) else None " \
                  "for t in inputs)"
    else:
        names = [f"i{k}" for k in range(arity)]
        unpack = f"{', '.join(names)}{',' if arity == 1 else ''} = inputs"
        if kinds is None:
            lines += ["    try:", "        " + unpack,
                      "    except ValueError:  # (another count of inputs: the form with a loop)",
                      "        return _other(inputs, out, params, result)"]
        else:  # (the caller's count, always)
            lines.append("    " + unpack)
        for k, n in enumerate(names):
            lines.append(_edge("any" if kinds is None else kinds[k], n, k))
        x = "i{}".format
        need = "n{}".format

        devices = "(" + ",".join(f"\n        isinstance(i{k}._data, _ndarray) if s{k} is not None "
                                 "else None" for k in range(arity)) + \
            ("," if arity == 1 else "") + ")"
    lines.append(_WRAP)
    saved = []
    lane = kinds is not None  # (a lane caller's recorder: see below)
    kinds = kinds or ("any",) * (arity or 0)
    for i, j in op._save_plan:  # (an input saved only where a gradient that uses it is needed)
        shape = f"shapes[{i}]" if arity is None else f"s{i}"  # (None: not a tensor)
        value = x(i) if arity and kinds[i] == "number" else f"_save({x(i)}, False)" if \
            arity and kinds[i] != "any" else f"_save({x(i)}, False) if {shape} is not None " \
            f"else {x(i)}"
        needed = {"number": False, "grad": True}.get(kinds[j] if arity else "any") if j >= 0 \
            else True
        saved.append(value if needed else "None" if needed is False else
                     f"None if not {need(j)} else ({value})")
    if op.save_output:
        saved.append("_save(result, True)")
    saved_row = _row(saved)
    if len(saved) > 1:
        lines.append("    saved = (")
        lines.extend(f"        {v}," for v in saved)
        lines.append("    )")
        saved_row = "saved"
    # (the lane's callers, ``kinds`` given, record nothing while CUDA, anomaly mode or
    # saved-tensor hooks are in use, ``lane_kernels``: no devices, stack nor packing)
    lines.append("    devices = None" if lane else
                 f"    devices = None if _registry._cuda_kernels is None else {devices}")
    edges, needs, shapes, dtypes = ("edges", "needs", "shapes", "dtypes") if arity is None else \
        [_row(f"{v}{k}" for k in range(arity)) for v in "enst"]
    lines.append(textwrap.indent(_MAKE.format(  # (``node.make``'s body, inline)
        cls="_cls", edges=edges, needs=needs, shapes=shapes, dtypes=dtypes, devices="devices",
        params="params", saved=saved_row, released="False") + "\n" +
        ("result._grad_fn = node" if lane else _MADE.format(output="result")), "    "))
    if op.is_view:
        lines.append(f"    _view_of(result, {x(0)}, _node_name)")
    lines.append("    return result")
    return "\n".join(lines) + "\n"


# The recorders an op may have, by what their callers know of the inputs: the general path's
# (anything) and the fast applies' (``LANES``: a tensor that requires grad with a number, two
# tensors, one tensor that requires grad).
RECORDERS = {None: "_record", ("grad", "number"): "_record_number",
             ("tensor", "tensor"): "_record_pair", ("grad",): "_record_one"}


def _generate(op, arity, kinds=None) -> Callable:
    """Compiles ``op``'s recorder for ``arity`` inputs of ``kinds`` (``_source``) and installs it
    on ``op`` (``RECORDERS``)."""
    source = _source(op, arity or None, kinds)
    record = _compiled(source, op)
    attr = RECORDERS[kinds]
    setattr(op, attr, record)
    setattr(op, attr + "_source", source)
    return record


def _first_record(op, kinds, inputs, out, params, result=None) -> Tensor:
    """An op's recorder until its first call: writes and compiles it (``_generate``), for the
    count of inputs of that call, and records with it."""
    return _generate(op, len(inputs), kinds)(inputs, out, params, result)


def lazy_recorders(op, *kinds) -> None:
    """Gives ``op`` the recorders for callers that know ``kinds`` (``RECORDERS``), each written
    at its first call."""
    for k in kinds:
        setattr(op, RECORDERS[k], functools.partial(_first_record, op, k))


def _compiled(source: str, op=None) -> Callable:
    """The function that ``source`` defines, compiled (once per distinct source) with the names
    the rules use (and ``op``'s own: its node class and name)."""
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = compile(  # (a file name in the package: numgrad's own frame,
            #                                     which anomaly mode's forward stack leaves out)
            source, _HERE + f"<recorder of {op.name if op else 'one input'}>", "exec")
    names = {"Tensor": Tensor, "_NO_EDGE": _NO_EDGE, "_ndarray": np.ndarray, "_save": _save,
             "_registry": _registry, "_new": object.__new__, "_Counter": _VersionCounter,
             **_MAKE_NAMES}
    if op is not None:
        names.update(_meta=_meta, _view_of=_view_of, _cls=op.node_class, _node_name=op.node,
                     _other=lambda inputs, out, params, result: _generate(op, None)(
                         inputs, out, params, result))
    exec(code, names)
    return names[source[4:source.index("(")]]


# (edge, needs grad, shape, dtype) of one input ``x`` of a recorded op: ``_edge``, returned
_meta = _compiled("def _meta(x):\n" + _edge("any", "x", "") + "\n    return e, n, s, t\n")


def _record(op, inputs, result, params) -> Tensor:
    """Makes ``result`` (a fresh tensor that requires grad) the output of ``op``'s node over
    ``inputs``: ``op``'s generated recorder."""
    return op._record(inputs, result._data, params, result)


def record_source(op, arity: int | None = None) -> str:
    """The source of ``op``'s recorder: the one its calls use, or, before its first recorded
    call, the one ``arity`` inputs would get (None: the form with a loop)."""
    if "_record_source" in op.__dict__:
        return op._record_source
    return _source(op, arity)


# ------------------------------------------------------------------ the eager fast lane
# ``y * 1.001``, ``x + y`` of one shape, ``h + bias`` with a row, ``tanh(h)``, ``loss.mean()``: in
# a training loop almost every such call is on a small float CPU tensor. ``apply`` re-decides for
# each what these calls share (the kernel module, the dtypes it refuses, the forward's own
# dispatch in ``kernels.cpu.binary``); an op that declares ``lane`` gets a fast apply instead,
# ``op._fast``, written for it from its lane's template (``LANES``), which runs the kernel that
# ``apply`` would run on the same arrays (the same bits) and records the node by the op's
# recorders for what it knows of the inputs (the same node: ``tests/test_lane.py`` compares the
# two field by field), or returns None where the call is not one it serves. It serves float32
# and float64 arrays that are plain C-contiguous NumPy arrays below the size at which kernels go
# multi-threaded, while nothing needs every op to run through ``apply``: no dispatch mode pushed
# (a trace records the kernels ``apply`` hands out; a mode that sees kernel calls alone,
# ``Mode.lane``, is handed the lane's: ``lane_mode``), no CUDA kernels loaded (a node then
# carries its inputs' devices), anomaly mode off (it records the forward stack), and no
# profile block, saved-tensor hooks or forward-AD level open (``closed``).

# How many things need every op to run through ``apply`` now: ``autograd.profiler``'s profile
# blocks, ``autograd.graph``'s saved-tensor hooks and ``autograd.forward_ad``'s levels count here.
closed = 0
_anomaly = anomaly_mode.state
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)  # (the arrays' own dtype objects)
_modes = dispatch._local  # (.stack: this thread's dispatch modes)
_wrap = Tensor._wrap  # (bound once: without the binding on each call)
_RECENT: dict = {}  # kernel id -> (dtype, its kernels): the last used, tested by identity


def lane_kernels(data, code: int, unary: bool):
    """The generated kernels of ``code`` (``kernels.cpu.elementwise``) for ``data``, where the
    lane serves it: a plain float32 or float64 C-contiguous host array (of NumPy's own dtype
    objects: native byte order) below the threading size, with no trace, CUDA, anomaly mode or
    profile block in the way (``closed``); else None."""
    dt = data.dtype
    if type(data) is not np.ndarray or (dt is not _F64 and dt is not _F32) or \
            not data.flags.c_contiguous or data.size >= PARALLEL_THRESHOLD or \
            dispatch._pushed or _cuda_kernels is not None or _anomaly.enabled or closed:
        return None
    hit = _RECENT.get(code)  # (kernel ids are distinct across families: the id names it)
    if hit is not None and hit[0] is dt:
        return hit[1]
    kernels = _LOADED.get((code, dt, unary)) or _elementwise_kernels(code, dt, unary)
    _RECENT[code] = (dt, kernels)
    return kernels


def lane_mode(data):
    """While this thread's dispatch mode lets the lane serve its ops (``Mode.lane``: the re-run
    path of numgrad.compile, which records the kernel calls): that mode, for a float32 or
    float64 host array with no CUDA, anomaly mode or profile block in the way; else None. The
    lane then hands the mode the kernel call the op's ``forward`` makes (``Mode.record``: a
    served op's forward is ``K.binary(code, a, b)`` or ``K.unary(code, a)``), the call ``apply``
    would make, and records the node as ever."""
    stack = getattr(_modes, "stack", None)  # (``dispatch.current()``, inline)
    if not stack:
        return None
    mode = stack[-1]
    if not mode.lane or not mode.active:
        return None
    dt = data.dtype
    if (dt is not _F64 and dt is not _F32) or not isinstance(data, np.ndarray) or \
            _cuda_kernels is not None or _anomaly.enabled or closed:
        return None
    return mode


def lane_open() -> bool:
    """Whether nothing needs every op to go through ``apply`` now: no trace, CUDA, anomaly mode
    or profile block (``lane_kernels`` tests the same, inline)."""
    return not dispatch._pushed and _cuda_kernels is None and not _anomaly.enabled and \
        not closed


def plain_binary(code: int, a, b):
    """``kernels.cpu.binary(code, a, b)`` for a backward formula or the engine (no node): a plain
    float host array ``a`` with a number (a NumPy number of its dtype, or a Python int or float,
    converted as the binary fast apply converts it), or with an array of its dtype and shape,
    both C-contiguous (not 0-d), where the lane serves ``a`` (``lane_kernels``); None for
    anything else. The same kernel on the same arrays as ``kernels.cpu.binary``."""
    kernels = lane_kernels(a, code, False)
    if kernels is None:
        return None
    dt = a.dtype
    pair = type(b) is np.ndarray
    if not pair and (type(b) is float or type(b) is int):
        b = b if type(b) is float and dt is _F64 else dt.type(b) if -65504.0 <= b <= 65504.0 \
            else _float_number(dt, b)  # (as the fast apply)
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


# The fast applies' templates, one per kind of lane, filled in for the op (``_fast_source``):
# ``{fn}`` its name, ``{code}`` the name of its kernel's id (``kernels.cpu.<code>``, the
# object its ``forward`` hands the kernels, bound under that name), ``{about}`` its
# docstring's first line, ``{number_elsewhere}`` what the binary one does with a number it does
# not serve, ``{mean}`` the mean's quotient. What the general path runs for the same call:
# ``kernels.cpu.binary``'s and ``unary``'s first cases (a row added to each row: its row loop),
# ``kernels.cpu.sum_dims``'s first case and ``_Mean.forward``'s quotient by Python's division
# (its count is exact, below 2**24), filled into the sum's array.
_BINARY = '''\
def {fn}(input, other):
    """{about}
    For a float CPU tensor with a Python int or float, or two float CPU tensors of one dtype,
    of one shape or the second a row of the first's last dimension; else None."""
    if type(other) is not float and type(other) is not int:
        if not isinstance(other, Tensor):
            return None
        a, b = input._data, other._data
        shape = a.shape
        dt = a.dtype
        if _dispatch._pushed:
            mode = lane_mode(a) if b.dtype is dt and isinstance(b, _ndarray) else None
            if mode is None or not (b.shape == shape or b.ndim == 1 and a.ndim > 1 and a.size
                                    and shape[-1] == b.shape[0] > 1):
                return None
            out = mode.record_pair({code}, a, b)  # (``apply``'s call: ``binary_operands``
            #                                        gives both)
        elif b.shape == shape:
            out = plain_binary({code}, a, b)
            if out is None:
                return None
        elif type(b) is _ndarray and b.ndim == 1 and a.ndim > 1 and a.size and \\
                shape[-1] == b.shape[0] > 1 and b.dtype == dt and b.flags.c_contiguous and \\
                (kernels := lane_kernels(a, {code}, False)) is not None:
            out = _empty(shape, dt)  # (a row added to each row: ``kernels.cpu.binary``'s loop)
            rows = a.size // b.shape[0]
            kernels.zip_rows(a.reshape(rows, b.shape[0]), b, out.reshape(rows, b.shape[0]))
        else:
            return None
        if _grad.enabled and (input._requires_grad or other._requires_grad):
            return _op._record_pair((input, other), out, {{}})
        return _wrap(out)
    data = input._data
    kernels = lane_kernels(data, {code}, False)
    if kernels is None:
        if not _dispatch._pushed or (mode := lane_mode(data)) is None:
{number_elsewhere}
        out = mode.record_scalar({code}, data, other)  # (``binary_operands``' scalar)
    else:
        dt = data.dtype
        if data.ndim == 1:  # (``plain_binary``'s work, inline: this is the commonest call)
            out = dest = _empty(data.size, dt)
            flat = data
        else:
            out = _empty(data.shape, dt)
            flat, dest = data.ravel(), out.ravel()
        # (a float64 array takes a Python float as it is: Numba types it float64, the kernel's
        # signature, and it dispatches faster than a NumPy number; other numbers are converted)
        kernels.zip_1d_scalar(flat, other if type(other) is float and dt is _F64 else
                              dt.type(other) if -65504.0 <= other <= 65504.0 else
                              _float_number(dt, other), dest)
    if _grad.enabled and input._requires_grad:
        return _op._record_number((input, other), out, {{}})
    return _wrap(out)
'''
# (a float tensor with a number that ``lane_kernels`` does not serve, large or strided: ``apply``
# from here, with the operands ``binary_operands`` gives, its first case without its call; true
# division takes its general rules)
_NUMBER_TO_APPLY = '''\
            if data.dtype.kind == "f" and data.dtype.itemsize > 2:  # (x * 0.5, large or strided;
                #  float16: the public function's rules, ``_promote.half_number``)
                return _registry.apply(_op, (input, other), (data, data.dtype.type(other) if
                    -65504.0 <= other <= 65504.0 else _float_number(data.dtype, other)))
            return None'''
_NUMBER_BACK = "            return None  # (true division: the public function's promotion)"
_UNARY = '''\
def {fn}(input):
    """{about}
    For a float CPU tensor; else None."""
    data = input._data
    kernels = lane_kernels(data, {code}, True)
    if kernels is None:
        if not _dispatch._pushed or (mode := lane_mode(data)) is None:
            return None
        out = mode.record_unary({code}, data)
    else:
        dt = data.dtype
        if data.ndim == 1:
            out = dest = _empty(data.size, dt)
            kernels.map_1d(data, dest)
        else:
            out = _empty(data.shape, dt)
            kernels.map_1d(data.ravel(), out.ravel())
    if _grad.enabled and input._requires_grad:
        return _op._record_one((input,), out, {{}})
    return _wrap(out)
'''
_REDUCE = '''\
def {fn}(input):
    """{about}
    For a float32 or float64 CPU tensor that is not empty, below the threading size (larger
    sums add in another order); else None."""
    data = input._data
    dt = data.dtype
    n = data.size
    if type(data) is not _ndarray or not (dt == _F32 or dt == _F64) or not n or \\
            n >= PARALLEL_THRESHOLD or not data.flags.c_contiguous or not lane_open():
        return None
    total = _empty(1, dt)
    _sum_rows(data.reshape(1, n), total)
    out = total.reshape(()){mean}
    if _grad.enabled and input._requires_grad:
        return _op._record_one((input,), out, {{"dims": _ALL_DIMS[data.ndim], "keepdim": False}})
    return _wrap(out)
'''
_ALL_DIMS = tuple(tuple(range(n)) for n in range(33))  # (``dims`` of a reduction of everything)
# Each kind of lane: its template, the recorders it calls (``RECORDERS``) and what fills its
# blanks besides the op's name and kernel.
LANES = {
    "binary": (_BINARY, (("grad", "number"), ("tensor", "tensor")),
               {"number_elsewhere": _NUMBER_TO_APPLY}),
    "division": (_BINARY, (("grad", "number"), ("tensor", "tensor")),
                 {"number_elsewhere": _NUMBER_BACK}),
    "unary": (_UNARY, (("grad",),), {}),
    "sum": (_REDUCE, (("grad",),), {"mean": ""}),
    "mean": (_REDUCE, (("grad",),), {"mean": "\n    out.fill(out.item() / n)  # (the mean)"}),
}


def _fast_source(op) -> str:
    """The source of ``op``'s fast apply: its lane's template (``LANES``) filled in for it."""
    template, _, blanks = LANES[op.lane]
    code = op.code if template is not _REDUCE else None  # (the name of its kernel's id)
    kernel = "" if code is None else f"kernel ``kernels.cpu.{code}``; "
    arguments = "input" if template is not _BINARY else "input, other"
    return template.format(
        fn=f"fast_{op.name}", code=code, **blanks,
        about=f"``{op.name}({arguments})`` on the fast lane ({kernel}node {op.node}).")


def _first_fast(op, *args):
    """An op's fast apply until its first call: writes and compiles it, installs it as
    ``op._fast`` (its source as ``op._fast_source``) and runs it."""
    source = _fast_source(op)
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = compile(source, _HERE + f"<fast apply of {op.name}>", "exec")
    names = dict(_FAST_NAMES, _op=op)
    if op.lane not in ("sum", "mean"):  # (its kernel's id, the object ``forward`` hands on)
        names[op.code] = getattr(_cpu_module, op.code)
    exec(code, names)
    fast = names[f"fast_{op.name}"]
    op._fast, op._fast_source = fast, source
    return fast(*args)


# The names the fast applies use, each the registry's own
_FAST_NAMES = {"Tensor": Tensor, "_ndarray": np.ndarray, "_empty": np.empty, "_F64": _F64,
               "_F32": _F32, "_grad": _grad, "_dispatch": dispatch, "_registry": _registry,
               "_wrap": _wrap, "lane_kernels": lane_kernels, "lane_mode": lane_mode,
               "lane_open": lane_open, "plain_binary": plain_binary, "_row_plan": _row_plan,
               "_sum_rows": _sum_rows, "_ALL_DIMS": _ALL_DIMS,
               "PARALLEL_THRESHOLD": PARALLEL_THRESHOLD, "_float_number": _float_number}


def apply_source(op) -> str:
    """The source of ``op``'s fast apply (an op that declares ``lane``): the one its calls use,
    or, before its first call, the one it will get."""
    if "_fast_source" in op.__dict__:
        return op._fast_source
    return _fast_source(op)
