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
import textwrap
from typing import Callable, NamedTuple

import numpy as np

from .. import _lowp, dispatch
from .._dtype import torch_name
from ..autograd import grad_mode
from ..autograd.node import OpNode
from ..autograd.node import MADE as _MADE
from ..autograd.node import MAKE as _MAKE
from ..autograd.node import MAKE_NAMES as _MAKE_NAMES
from ..autograd.node import save as _save
from ..kernels import cpu as _cpu_module

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
    # Whether the eager fast lane (``ops/_lane.py``) serves its calls on small float CPU tensors:
    # "binary", for an op whose forward is ``K.binary(K.<code>, a, b)`` (a tensor with a number,
    # two tensors of one shape, a row added to each row), "unary" for ``K.unary(K.<code>, x)``,
    # "reduce" for a reduction of everything (``_lane.reduce_all``); its node is then recorded
    # by its recorders for what the lane knows (``RECORDERS``).
    lane: str | None = None
    _lane = None  # ``lane``, where ``register`` gave it its lane's recorders
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
        lazy_recorders(op, *_LANE_KINDS[op.lane])
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
    # saved-tensor hooks are in use, ``ops/_lane._kernels_of``: no devices, stack nor packing)
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
# (anything) and the fast lane's (``ops._lane``: a tensor that requires grad with a number, two
# tensors, one tensor that requires grad).
RECORDERS = {None: "_record", ("grad", "number"): "_record_number",
             ("tensor", "tensor"): "_record_pair", ("grad",): "_record_one"}
_LANE_KINDS = {"binary": (("grad", "number"), ("tensor", "tensor")), "unary": (("grad",),),
               "reduce": (("grad",),)}


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
