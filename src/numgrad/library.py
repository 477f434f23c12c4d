"""Users' own kernels as numgrad ops, with ``torch.library``'s API.

- ``custom_op(name, fn, mutates_args=..., device_types=...)`` (a decorator, or a call) makes an
  op of a kernel: any Python callable on arrays (NumPy arrays on the CPU, device arrays on CUDA),
  an ``@njit`` function included. Its parameters are annotated as PyTorch's are (``Tensor`` or
  ``numpy.ndarray`` for an array, ``float``, ``int``, ``bool``, ``list[Tensor]`` ...), which gives
  its schema. ``register_kernel(device)``, ``register_autograd(backward, setup_context=...)``,
  ``register_fake`` and ``register_vmap`` add to it, with PyTorch's semantics; ``opcheck`` checks
  it. It is reachable as ``numgrad.ops.<namespace>.<name>``.
- ``elementwise(name, formula, grad=..., dtypes=...)`` makes an elementwise op of a scalar
  formula of one or more numbers (Numba-compilable, as numgrad's own formulas are): its CPU and
  CUDA loops are generated from numgrad's templates, with broadcasting and type promotion, its
  backward from the partial derivatives ``grad`` (formulas too), its in-place form
  (``numgrad.ops.<ns>.<name>_``), ``out=``, its jvp and batching rules. numgrad.compile fuses a
  formula of one or two numbers into its loops as any formula of the table; one of three or more
  is one loop of its own (a ``K.custom_call``), called as it is. The formula (and each partial
  derivative) enters the formula table through ``kernels.formulas.declare``, the one function
  numgrad's own formulas are declared with. ``elementwise`` is also the function numgrad's own
  elementwise ops (``exp``, ``atan2``, ``clamp`` ...) are declared with, one call each where their
  module loads (with their formula's name in the table, or a term of several, and PyTorch's
  node): it is defined in ``ops/_formula.py``, which ``import numgrad`` loads, and is this
  module's ``elementwise``.
- ``Library(ns, kind)``, ``define`` and ``impl``: the older API, over the same ops.

Inside ``numgrad.compile`` a custom op is one opaque kernel call of the trace
(``K.custom_call``), never a break or an eager fallback: its kernel runs again in the compiled
program. As in PyTorch, compiling one needs its fake (``register_fake``), which gives the shape and
dtype of its results; a kernel whose results differ from its fake's is an error.
"""
from __future__ import annotations

import hashlib
import inspect
import sys
import types
import typing
import ast
import math

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher

from . import dispatch
from .autograd import grad_mode
from .autograd.function import Function
from .tensor import Tensor
from .compiler.tracer import Trace
from . import overrides, testing
from .ops.inplace import _check_leaf, _write
from .ops import registry, _formula
from .ops._formula import elementwise
from .func import _vmap
import numgrad
from .autograd import gradcheck
from .kernels.cpu import mathfuncs as mf
from .kernels import formulas, user, codegen
from .kernels.formulas import ALL, COMPLEX
from ._out import with_out
from ._dtype import from_numpy_dtype, FLOAT, default_for_category, torch_name, result_type
from .ops._jvp import _sum_to
from .ops._promote import binary_operands, _as, _SCALARS, broadcast_shapes
from . import _lazy

__all__ = ["custom_op", "register_kernel", "register_autograd", "register_fake", "register_vmap",
           "opcheck", "elementwise", "Library", "define", "impl", "CustomOpDef", "OpCheckError"]

_OPS: dict = {}  # "ns::name" -> CustomOpDef
_DEVICES = ("cpu", "cuda")
_TORCH_DEVICES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                  "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                  "privateuseone")


class OpCheckError(Exception):
    """``opcheck`` found a problem (PyTorch's ``OpCheckError``)."""


# ------------------------------------------------------------------------------ schemas
class _Param(typing.NamedTuple):
    name: str
    kind: str  # "Tensor", "Tensor?", "Tensor[]", "float", "int", "bool", "str", "int[]" ...
    default: object


_ARRAYS = (Tensor, np.ndarray)


def _kind(annotation) -> str | None:
    """The schema type of an annotation (None: not one a custom op takes)."""
    if annotation in _ARRAYS or annotation == "Tensor":
        return "Tensor"
    for t, name in ((float, "float"), (int, "int"), (bool, "bool"), (str, "str")):
        if annotation is t:
            return name
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or (types.UnionType is not None and origin is types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            inner = _kind(rest[0])
            return None if inner is None or inner.endswith("?") else inner + "?"
        return None
    if origin in (list, tuple, typing.Sequence, __import__("collections.abc").abc.Sequence):
        if len(args) == 2 and args[1] is Ellipsis:
            args = args[:1]
        if len(args) == 1:
            inner = _kind(args[0])
            if inner in ("Tensor", "int", "float", "bool"):
                return inner + "[]"
    return None


def _hints(fn) -> dict:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # (annotations that do not resolve: read as written)
        return dict(getattr(fn, "__annotations__", {}))


def _infer_schema(fn, mutates_args) -> tuple:
    """(params, returns, schema text) from ``fn``'s annotations, PyTorch's errors where they do
    not make one."""
    sig = inspect.signature(fn)
    hints = _hints(fn)
    where = f"Got func with signature {sig})"

    def error(what):
        return ValueError(f"infer_schema(func): {what} {where}")

    params = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise error("We do not support positional-only args, varargs, or varkwargs.")
        if p.name not in hints:
            raise error(f"Parameter {p.name} must have a type annotation.")
        kind = _kind(hints[p.name])
        if kind is None:
            raise error(f"Parameter {p.name} has unsupported type {hints[p.name]}.")
        params.append(_Param(p.name, kind, p.default))
    if "return" not in hints:
        raise error("No return type annotation was provided. Please add one.")
    ret = hints["return"]
    if ret is None or ret is type(None):
        returns = ()
    elif _kind(ret) == "Tensor":
        returns = ("Tensor",)
    elif typing.get_origin(ret) is tuple and all(
            _kind(a) == "Tensor" for a in typing.get_args(ret)):
        returns = ("Tensor",) * len(typing.get_args(ret))
    else:
        raise error(f"Return has unsupported type {ret}.")
    names = {p.name for p in params}
    if mutates_args != "unknown":
        if isinstance(mutates_args, str):
            mutates_args = (mutates_args,)
        missing = set(mutates_args) - names
        if missing:
            raise error(f"{missing} in mutates_args were not found in the custom op's signature. "
                        "mutates_args should contain the names of all args that the custom op "
                        "mutates, or just the string 'unknown' if you don't know.")
        for m in mutates_args:
            kind = next(p.kind for p in params if p.name == m)
            if not kind.startswith("Tensor"):
                raise error(f"mutates_args contains a non-Tensor-like type: {m}")
    mutated = set(names if mutates_args == "unknown" else mutates_args)
    text = "(" + ", ".join(
        f"{p.kind.replace('Tensor', 'Tensor(a!)', 1) if p.name in mutated else p.kind} {p.name}"
        + ("" if p.default is inspect.Parameter.empty else f"={p.default!r}")
        for p in params) + ") -> " + (
        "()" if not returns else returns[0] if len(returns) == 1 else
        "(" + ", ".join(returns) + ")")
    return params, returns, text, tuple(p.name for p in params if p.name in mutated)


def _split_name(qualname: str) -> tuple:
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator name "
                         "should look something like ns::foo")
    ns, name = qualname.split("::", 1)
    if "." in name:
        raise ValueError(f"The torch.custom_ops APIs do not handle overloads, i.e. operator names "
                         f"with '.' in them. Please name your operator something like {ns}::"
                         f"{name.replace('.', '_')}. Got {qualname}")
    if not ns.isidentifier() or not name.isidentifier():
        raise ValueError(f"Expected {qualname} to be a valid operator name: a namespace and a "
                         "name, both Python identifiers")
    return ns, name


def _where() -> str:
    """``file:line`` of the user's call that registers an op (PyTorch's "registered at")."""
    frame = sys._getframe(1)
    here = (__file__, _formula.__file__)  # (``elementwise`` is _formula's)
    while frame is not None and frame.f_code.co_filename in here:
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"


def _claim(qualname: str, schema: str, op, at: str | None = None) -> None:
    """Records ``op`` under ``qualname`` (None: only checks it is free); PyTorch's error for a
    name already registered."""
    old = _OPS.get(qualname)
    if old is not None:
        at = at or op._registered_at
        raise RuntimeError(
            f"Tried to register an operator ({qualname}{schema}) with the same name and overload "
            "name multiple times. Each overload's schema should only be registered with a single "
            f"call to def(). Duplicate registration: registered at {at}. "
            f"Original registration: registered at {old._registered_at}")
    if op is not None:
        _OPS[qualname] = op


# ------------------------------------------------------------------------------ custom ops
def _device_types(device_types) -> tuple:
    if device_types is None:
        return _DEVICES
    if isinstance(device_types, str):
        device_types = (device_types,)
    out = []
    for d in device_types:
        if d not in _TORCH_DEVICES:
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICES)} device type at start "
                               f"of device string: {d}")
        out.append(d)
    return tuple(out)


def _flat_tensors(values) -> list:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, Tensor))
    return out


def _arrays(values) -> tuple:
    def one(v):
        if isinstance(v, Tensor):
            return v._data
        if isinstance(v, (list, tuple)):
            return [one(a) for a in v]
        return v
    return tuple(one(v) for v in values)


def _in_trace() -> bool:
    mode = dispatch.current()
    if mode is None:
        return False
    return isinstance(mode, Trace)


class CustomOpDef:
    """A custom op (``custom_op``'s result): call it as the function it was made from, with
    tensors for its arrays."""

    def __init__(self, namespace: str, name: str, fn, mutates_args, device_types, schema=None):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._init_fn = fn
        py = getattr(fn, "py_func", fn)  # (an @njit dispatcher: its Python function's signature)
        if schema is not None:
            params, returns, text, mutated = _parse_schema(schema)
        else:
            params, returns, text, mutated = _infer_schema(py, mutates_args)
        self._params, self._returns, self._schema, self._mutated = params, returns, text, mutated
        self._signature = inspect.Signature([
            inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
            for p in params])
        self._kernels = {d: fn for d in _device_types(device_types)} if fn is not None else {}
        self._backward = self._setup_context = self._fake = self._vmap = None
        self._registered_at = _where()
        self._function = self._make_function()
        self.__name__ = name
        self.__qualname__ = name
        self.__doc__ = getattr(py, "__doc__", None)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    # -------------------------------------------------------------- registration
    def register_kernel(self, device_types, fn=None, /):
        """The kernel of this op on ``device_types`` ("cpu", "cuda"): ``fn``, or the function
        decorated."""
        devices = _device_types(device_types)

        def register(fn):
            for d in devices:
                self._kernels[d] = fn
            return fn
        return register if fn is None else register(fn)

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        """``backward(ctx, *grads)`` gives one gradient per input (None for non-tensors);
        ``setup_context(ctx, inputs, output)`` saves what it needs (``ctx.save_for_backward``,
        attributes of ``ctx``)."""
        if not callable(backward):
            raise TypeError(f"Expected backward to be a function, got {type(backward)}")
        if self._mutated and self._returns == ():
            raise RuntimeError(f"{self._qualname}: register_autograd is not supported for an op "
                               "that mutates its inputs and returns nothing")
        self._backward, self._setup_context = backward, setup_context

    def register_fake(self, fn=None, /):
        """The fake of this op: a function of its arguments giving results of the real shape and
        dtype (``x.new_empty(...)``, ``numgrad.empty_like(x)``), not their values."""
        def register(fn):
            self._fake = fn
            return fn
        return register if fn is None else register(fn)

    def register_vmap(self, fn=None, /):
        """``fn(info, in_dims, *args) -> (output, out_dims)``: the op on a batch (``info.
        batch_size``), each argument batched along its ``in_dims`` entry (None: unbatched)."""
        def register(fn):
            self._vmap = fn
            self._function.vmap = staticmethod(fn)
            self._function.generate_vmap_rule = False
            _install_vmap_rule(self)
            return fn
        return register if fn is None else register(fn)

    # -------------------------------------------------------------- calling
    def _make_function(self):
        op = self

        class _Custom(Function):
            @staticmethod
            def forward(*values):
                return op._run(values)

            @staticmethod
            def setup_context(ctx, inputs, output):
                if op._setup_context is not None:
                    op._setup_context(ctx, inputs, output)

            @staticmethod
            def backward(ctx, *grads):
                if op._backward is None:
                    raise RuntimeError(
                        f"Trying to backward through {op._namespace}.{op._name}.default but no "
                        "autograd formula was registered. Please use register_autograd to add one.")
                out = op._backward(ctx, *grads)
                out = out if isinstance(out, tuple) else (out,)
                if len(out) != len(op._params):
                    raise RuntimeError(
                        f"{op._qualname}: expected the backward function to return "
                        f"{len(op._params)} gradients (one per input), got {len(out)}")
                return out

        _Custom.__name__ = _Custom.__qualname__ = f"{self._namespace}_{self._name}"
        return _Custom

    def _bind(self, args, kwargs) -> tuple:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def __call__(self, *args, **kwargs):
        values = self._bind(args, kwargs)
        tensors = _flat_tensors(values)
        if _dispatches(self, values):
            _vmap_name(self)
            return overrides.handle_torch_function(self, tensors, *values)
        if self._mutated:
            for p, v in zip(self._params, values):
                if p.name in self._mutated:
                    for t in _flat_tensors((v,)):
                        _check_leaf(t)
            if not self._returns or not (grad_mode.state.enabled and any(
                    t._requires_grad for t in tensors)):
                with grad_mode.no_grad():
                    out = self._run(values)
                return out
        return self._function.apply(*values)

    def _run(self, values):
        """The kernel of the inputs' device on their arrays (recorded as one call under
        numgrad.compile), its results as tensors."""
        tensors = _flat_tensors(values)
        K = registry.kernels_for(tensors)
        device = K.DEVICE
        if device not in self._kernels:
            raise NotImplementedError(
                f"Could not run '{self._qualname}' with arguments from the "
                f"'{device.upper() if device == 'cuda' else device.upper()}' backend. This could "
                f"be because the operator doesn't exist for this backend (no kernel was "
                f"registered for {device!r}: use register_kernel).")
        traced = _in_trace()
        if traced and self._fake is None and self._returns:  # (none needed for no results)
            raise RuntimeError(
                f"There was no fake impl registered for {self!r}. This is necessary for "
                f"torch.compile/export/fx tracing to work. Please use `{self._name}.register_fake` "
                "to add an fake impl.")
        arrays = _arrays(values)
        if self._mutated:
            first = next(v for p, v in zip(self._params, values) if p.name in self._mutated)
            written = _arrays((first,))[0]
            if isinstance(written, list):
                written = written[0] if written else None
            out = K.custom_call_into(self._qualname, written, *arrays)
            for p, v in zip(self._params, values):
                if p.name in self._mutated:
                    for t in _flat_tensors((v,)):
                        t._version_counter.value += 1
        else:
            out = K.custom_call(self._qualname, *arrays)
        result = self._wrap(out)
        if traced and self._fake is not None:
            self._check_fake(values, result)
        return result

    def _wrap(self, out):
        n = len(self._returns)
        if n == 0:
            return None
        if n == 1:
            return Tensor._wrap(out)
        return tuple(Tensor._wrap(o) for o in out)

    def _check_fake(self, values, result) -> None:
        """PyTorch's error where the kernel's results differ from the fake's in shape or dtype."""
        with grad_mode.no_grad():
            fake = self._fake(*values)
        reals = result if isinstance(result, tuple) else (result,)
        fakes = fake if isinstance(fake, tuple) else (fake,)
        for real, f in zip(reals, fakes):
            if real is None or f is None:
                continue
            what = None
            if tuple(real.shape) != tuple(f.shape):
                what = f"Shapes {real.shape!r} and {f.shape!r} are not equal!"
            elif real.dtype != f.dtype:
                what = f"Dtypes {real.dtype} and {f.dtype} are not equal!"
            if what is not None:
                raise RuntimeError(
                    f"When comparing the output of {self._namespace}.{self._name}.default on "
                    f"FakeTensor and concrete Tensors, found mismatched tensor metadata: {what}")


def _parse_schema(schema: str) -> tuple:
    """(params, returns, text, mutated) of a schema string ``"(Tensor x, float a) -> Tensor"``
    (``define``'s, without the name)."""
    text = schema.strip()
    if not text.startswith("("):
        raise RuntimeError(f"Expected a schema of the form '(args) -> returns', got {schema!r}")
    args, _, ret = text[1:].partition(") ->")
    params, mutated = [], []
    for part in filter(None, (a.strip() for a in args.split(","))):
        kind, _, rest = part.rpartition(" ")
        name, _, default = rest.partition("=")
        if "(a!)" in kind or "!" in kind:
            mutated.append(name)
        kind = kind.replace("(a!)", "").replace("(a)", "").strip()
        value = inspect.Parameter.empty if not default else _literal(default)
        params.append(_Param(name, kind, value))
    ret = ret.strip()
    if ret in ("()", ""):
        returns = ()
    elif ret.startswith("("):
        returns = tuple(r.strip() for r in ret[1:-1].split(","))
    else:
        returns = (ret,)
    return params, returns, text, tuple(mutated)


def _dispatches(op, values) -> bool:
    """Whether a call of ``op`` goes to ``__torch_function__`` (numgrad.overrides' protocol): an
    argument takes part in it (a vmap's BatchedTensor), or a mode that does not pass ``op`` on."""
    state = overrides._state
    if state.no_all:
        return False
    if not state.no_subclass and overrides._overloaded(tuple(values), {}):
        return True
    return bool(state.modes) and not overrides._modes_pass(op)


def _literal(text: str):
    """A schema default's value (``1.0``, ``True``, ``None``, ``[1, 2]``)."""
    return ast.literal_eval(text)


def _vmap_name(op) -> None:
    """Makes ``numgrad.func.vmap`` know ``op`` by its qualified name (its batching rule's key)."""
    vm = sys.modules.get("numgrad.func._vmap")
    if vm is not None and op not in vm._NAMES:
        vm._NAMES[op] = op._qualname


def _install_vmap_rule(op) -> None:
    """``op``'s batching rule under ``numgrad.func.vmap``: its Function, whose ``vmap`` is the
    user's rule (``register_vmap``)."""
    _vmap._NAMES[op] = op._qualname
    if op._vmap is not None:
        def rule(func, lvl, args, kwargs):
            return op._function.apply(*args)
        _vmap.RULES[op._qualname] = rule


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """``torch.library.custom_op``: an op named ``"ns::name"`` whose kernel is ``fn`` (any
    callable on arrays; an ``@njit`` function too), for ``device_types`` (all where None).
    ``mutates_args``: the names of the array arguments it writes into (``()`` for none,
    ``"unknown"`` for any). Used as a decorator when ``fn`` is not given."""
    ns, opname = _split_name(name)

    def make(fn):
        op = CustomOpDef(ns, opname, fn, mutates_args, device_types, schema)
        _claim(op._qualname, op._schema, op)
        return op
    return make if fn is None else make(fn)


def _op(op):
    if isinstance(op, (CustomOpDef, ElementwiseOp)):
        return op
    if isinstance(op, str) and op in _OPS:
        return _OPS[op]
    raise ValueError(f"register: expected a custom op (made by custom_op or define) or its "
                     f"name, got {op!r}")


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``torch.library.register_kernel``: ``op``'s kernel for ``device_types``."""
    return _op(op).register_kernel(device_types, func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """``torch.library.register_autograd``."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """``torch.library.register_fake``."""
    return _op(op).register_fake(func)


def register_vmap(op, func=None, /, *, lib=None):
    """``torch.library.register_vmap``."""
    return _op(op).register_vmap(func)


# ------------------------------------------------------------------------------ namespaces
class _Namespace:
    """``numgrad.ops.<ns>``: the ops registered in namespace ``ns``."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, name):
        op = _OPS.get(f"{self._name}::{name}")
        if op is None and name.endswith("_"):
            base = _OPS.get(f"{self._name}::{name[:-1]}")
            if isinstance(base, ElementwiseOp):
                return base.inplace
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{name}'")
        return op

    def __dir__(self):
        return sorted(q.split("::")[1] for q in _OPS if q.startswith(self._name + "::"))

    def __repr__(self) -> str:
        return f"_OpNamespace(name='numgrad.ops.{self._name}')"


def namespace(name: str) -> _Namespace:
    """``numgrad.ops.<name>`` where some op of that namespace is registered; AttributeError
    else."""
    if any(q.startswith(name + "::") for q in _OPS):
        return _Namespace(name)
    raise AttributeError(f"module 'numgrad.ops' has no attribute '{name}'")


# ------------------------------------------------------------------------------ kernels
def call_kernel(qualname: str, device: str, args: tuple):
    """``K.custom_call``'s body: the kernel of ``qualname`` for ``device`` on ``args``, its
    results checked (arrays of that device, none of them an argument or sharing its memory:
    PyTorch's error)."""
    op = _OPS.get(qualname) or _INTERNAL[qualname]
    # The kernel is opaque to numgrad.compile: a replay calls it again, so what its Python does
    # is not the traced function's (whose calls the compiler's audit, a profile hook, judges).
    profile = sys.getprofile()
    if profile is not None:
        sys.setprofile(None)
    try:
        out = op._kernels[device](*args)
    finally:
        if profile is not None:
            sys.setprofile(profile)
    n = len(op._returns)
    outs = () if n == 0 else (out,) if n == 1 else tuple(out)
    if n == 0:
        return None
    fixed = []
    for o in outs:
        if isinstance(o, np.generic):
            o = np.asarray(o)
        if device == "cpu" and not isinstance(o, np.ndarray):
            raise RuntimeError(f"{qualname}: its kernel must return NumPy arrays, got "
                               f"{type(o).__name__}")
        if isinstance(o, np.ndarray):
            for a in _flat_array_args(args):
                if isinstance(a, np.ndarray) and (o is a or (o.size and np.may_share_memory(o, a))):
                    raise RuntimeError(
                        f"{op._name} (with implementation in "
                        f"{getattr(op._init_fn, '__module__', None)}): "
                        "The output of this custom operator (1) must not also be an input to this "
                        "custom operator and (2) may not alias any inputs to this custom operator "
                        "or other returns. The most common way to trigger this error is if we have "
                        "y = custom_op(x) and y and x are the same Tensor. Please instead return a "
                        "clone of the offending output tensor(s) (e.g. return x.clone()) or "
                        "refactor the custom operator to not return y.")
        fixed.append(o)
    return fixed[0] if n == 1 else tuple(fixed)


def _flat_array_args(args):
    for a in args:
        if isinstance(a, list):
            yield from a
        else:
            yield a


# ------------------------------------------------------------------------------ opcheck
_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
          "test_aot_dispatch_dynamic")


def opcheck(op, args, kwargs=None, *, test_utils=_TESTS, raise_exception=True, atol=None,
            rtol=None) -> dict:
    """``torch.library.opcheck``: runs ``op`` on ``args`` and checks its registration:

    - ``test_schema``: it writes only into ``mutates_args``, and its results alias no input;
    - ``test_autograd_registration``: where a float input requires grad, it has a backward, and
      ``gradcheck`` (float64 copies of the inputs) passes;
    - ``test_faketensor``: its fake gives its results' shapes and dtypes;
    - ``test_aot_dispatch_dynamic``: ``numgrad.compile`` of it computes what eager does (values,
      writes, and gradients).

    Returns ``{test: "SUCCESS"}``; the first failure raises ``OpCheckError`` (or is the
    test's value with ``raise_exception=False``)."""
    op = _op(op)
    kwargs = kwargs or {}
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    results = {}
    for test in test_utils:
        if test not in _TESTS:
            raise ValueError(f"test_utils={test} is not a valid test; expected one of {_TESTS}")
        try:
            _CHECKS[test](op, args, kwargs, testing, atol, rtol)
            results[test] = "SUCCESS"
        except Exception as error:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {test} failed with {error} (scroll up for "
                                   "stack trace)") from error
            results[test] = error
    return results


def _clone_args(args, kwargs, float64=False, requires_grad=None):
    def one(v):
        if isinstance(v, Tensor):
            c = v.detach().clone()
            if float64 and c.dtype.is_floating_point:
                c = c.to(numgrad.float64)
            want = v.requires_grad if requires_grad is None else (
                requires_grad and c.dtype.is_floating_point)
            return c.requires_grad_(want) if want else c
        if isinstance(v, (list, tuple)):
            return type(v)(one(a) for a in v)
        return v
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _check_schema(op, args, kwargs, testing, atol, rtol):
    a, k = _clone_args(args, kwargs)
    values = op._bind(a, k)
    before = [(p.name, t.detach().clone()) for p, v in zip(op._params, values)
              for t in _flat_tensors((v,))]
    with grad_mode.no_grad():
        out = op(*a, **k)
    after = [t for v in values for t in _flat_tensors((v,))]
    for (name, old), t in zip(before, after):
        if name not in op._mutated and not _same(old, t):
            raise RuntimeError(f"{op._qualname}: argument {name} is mutated but not listed in "
                               "mutates_args. Please add it to mutates_args.")
    outs = out if isinstance(out, tuple) else () if out is None else (out,)
    for o in outs:
        for t in after:
            if o is t or np.may_share_memory(o._data, t._data):
                raise RuntimeError(f"{op._qualname}: an output aliases an input")


def _same(a: Tensor, b: Tensor) -> bool:
    x, y = np.asarray(a.detach().cpu()._data), np.asarray(b.detach().cpu()._data)
    return x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))


def _check_autograd(op, args, kwargs, testing, atol, rtol):
    values = op._bind(*_clone_args(args, kwargs))
    wants = [t for t in _flat_tensors(values) if t.requires_grad]
    if not wants or not op._returns:
        return
    if op._backward is None:
        raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}.default but no "
                           "autograd formula was registered. Please use register_autograd to add "
                           "one.")
    a, k = _clone_args(args, kwargs, float64=True)
    values = op._bind(a, k)
    positions = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]

    def fn(*xs):
        vs = list(values)
        for i, x in zip(positions, xs):
            vs[i] = x
        return op(*vs)
    gradcheck(fn, tuple(values[i] for i in positions), eps=1e-6, atol=atol or 1e-5,
              rtol=rtol or 1e-3, raise_exception=True)


def _check_fake(op, args, kwargs, testing, atol, rtol):
    if op._fake is None and op._returns:
        raise RuntimeError(
            f"There was no fake impl registered for {op!r}. This is necessary for "
            f"torch.compile/export/fx tracing to work. Please use `{op._name}.register_fake` to "
            "add an fake impl.")
    a, k = _clone_args(args, kwargs)
    values = op._bind(a, k)
    with grad_mode.no_grad():
        result = op(*values)
    if result is not None and op._fake is not None:
        op._check_fake(values, result)


def _check_compiled(op, args, kwargs, testing, atol, rtol):
    def step(*vs):
        out = op(*vs)
        outs = out if isinstance(out, tuple) else () if out is None else (out,)
        grads = ()
        diff = [t for t in _flat_tensors(vs) if t.requires_grad]
        if diff and outs and op._backward is not None:
            total = sum(o.sum() for o in outs if o.dtype.is_floating_point)
            grads = numgrad.autograd.grad(total, diff, allow_unused=True)
        return outs, tuple(grads), tuple(_flat_tensors(vs))

    eager_vs = op._bind(*_clone_args(args, kwargs))
    compiled_vs = op._bind(*_clone_args(args, kwargs))
    compiled = numgrad.compile(step, fullgraph=True)
    expected = step(*eager_vs)
    got = compiled(*compiled_vs)
    for e, g in zip(_leaves(expected), _leaves(got)):
        if (e is None) != (g is None):
            raise RuntimeError(f"{op._qualname}: numgrad.compile's result differs from eager's")
        if e is not None:
            testing.assert_close(g.detach(), e.detach(), atol=atol, rtol=rtol, equal_nan=True)


def _leaves(tree):
    for x in tree:
        if isinstance(x, tuple):
            yield from _leaves(x)
        else:
            yield x


_CHECKS = {"test_schema": _check_schema, "test_autograd_registration": _check_autograd,
           "test_faketensor": _check_fake, "test_aot_dispatch_dynamic": _check_compiled}


# ------------------------------------------------------------------------------ Library
class Library:
    """``torch.library.Library(ns, kind)``: ``kind`` "DEF" (define ops), "IMPL" (give kernels
    of ops defined elsewhere) or "FRAGMENT" (both)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined: list = []

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Declares ``"name(Tensor x, float a) -> Tensor"``; its kernels come by ``impl``."""
        if self.kind == "IMPL":
            raise RuntimeError("define is not allowed in a Library of kind IMPL")
        name, paren, rest = schema.partition("(")
        qualname = name if "::" in name else f"{self.ns}::{name}"
        ns, opname = _split_name(qualname)
        op = CustomOpDef(ns, opname, None, (), None, schema=paren + rest)
        _claim(qualname, op._schema, op)
        self._defined.append(qualname)
        return opname

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset=False) -> None:
        """``fn`` as the kernel of ``op_name`` for ``dispatch_key`` ("CPU", "CUDA", or
        "CompositeExplicitAutograd" / "" for both; "Autograd" is not a kernel: use
        ``register_autograd``)."""
        qualname = op_name if "::" in str(op_name) else f"{self.ns}::{op_name}"
        op = _OPS.get(qualname)
        if op is None:
            raise RuntimeError(f"operator {qualname} does not exist (define it first)")
        key = (dispatch_key or self.dispatch_key or "CompositeExplicitAutograd")
        devices = {"CPU": ("cpu",), "CUDA": ("cuda",)}.get(key, _DEVICES)
        op.register_kernel(devices, fn)

    def _destroy(self) -> None:
        for q in self._defined:
            _OPS.pop(q, None)
        self._defined = []


def define(qualname: str, schema: str, *, lib=None, tags=()) -> None:
    """``torch.library.define("ns::name", "(Tensor x) -> Tensor")``."""
    ns, name = _split_name(qualname)
    (lib or Library(ns, "FRAGMENT")).define(name + schema)


def impl(qualname: str, types, func=None, *, lib=None):
    """``torch.library.impl("ns::name", "cpu")``: the kernel of a defined op, for ``types``."""
    op = _op(qualname)
    return op.register_kernel(types, func)


# ------------------------------------------------------------------------------ elementwise
def _digest(fn) -> str:
    """A digest of a formula's code (its source where Python has it, else its bytecode and
    constants, and its closure's values): in the names of its generated kernels."""
    py = getattr(fn, "py_func", fn)
    h = hashlib.sha256()
    try:
        h.update(inspect.getsource(py).encode())
    except (OSError, TypeError):
        code = py.__code__
        h.update(code.co_code + repr((code.co_consts, code.co_names)).encode())
    for cell in getattr(py, "__closure__", None) or ():
        h.update(repr(cell.cell_contents).encode())
    # (the numbers it reads from its module: Numba compiles a global as a constant)
    scope = getattr(py, "__globals__", {})
    for name in sorted(getattr(getattr(py, "__code__", None), "co_names", ())):
        value = scope.get(name)
        if isinstance(value, (bool, int, float, complex, str, tuple)):
            h.update(f"{name}={value!r}".encode())
    return h.hexdigest()[:12]


def _jit(fn):
    return fn if isinstance(fn, Dispatcher) else njit(inline="always")(fn)


_FAST_MATH_MODULE = []


def _fast_math():
    """``math`` for the CPU loops of a formula: its ``exp``, ``log``, ``tanh``, ``erf``,
    ``log2`` and ``exp2`` are the vectorisable ones numgrad's own CPU kernels use
    (``kernels/cpu/mathfuncs.py``: libm's scalar calls keep a loop from vectorising, 3-10x
    slower), everything else ``math``'s own."""
    if not _FAST_MATH_MODULE:
        module = types.ModuleType("numgrad_fast_math")
        module.__dict__.update({k: v for k, v in vars(math).items() if not k.startswith("__")})
        swaps = {"exp": mf.fast_exp, "log": mf.fast_log, "tanh": mf.fast_tanh, "erf": mf.erf,
                 "log2": mf.log2, "exp2": mf.exp2}
        module.__dict__.update(swaps)
        _FAST_MATH_MODULE.append((module, {getattr(math, k): v for k, v in swaps.items()
                                           if hasattr(math, k)}))
    return _FAST_MATH_MODULE[0]


def _cpu_variant(fn):
    """``fn`` for the CPU loops: the same code with ``math`` (or the ``math`` functions it names)
    the fast CPU versions of ``_fast_math``, jitted; ``_jit(fn)`` where it names none."""
    py = getattr(fn, "py_func", fn)
    if not isinstance(py, types.FunctionType):
        return _jit(fn)
    module, functions = _fast_math()
    names, stack = set(), [py.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    scope = dict(py.__globals__)
    changed = False
    for name in names:
        value = scope.get(name)
        if value is math:
            scope[name], changed = module, True
        else:
            try:
                fast = functions.get(value)
            except TypeError:  # (an unhashable global)
                fast = None
            if fast is not None:
                scope[name], changed = fast, True
    if not changed:
        return _jit(fn)
    copy = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__, py.__closure__)
    return njit(inline="always")(copy)


def _times(d):
    """The formula ``(g, x) -> g * d(x)``: a unary op's backward, one fused loop."""
    @njit(inline="always")
    def backward(g, x):
        return g * d(x)
    return backward


def _declare(key: str, name: str, arity: int, fn, dtypes, cpu=None):
    """The op id of the formula ``fn`` (its CPU loops calling ``cpu`` where given), the
    functions set in ``kernels/user.py`` for the generated kernels to import."""
    setattr(user, key, fn)
    if cpu is not None:
        setattr(user, key + "_cpu", cpu)
    return formulas.declare(name, arity, f"user:{key}" + ("_cpu" if cpu is not None else ""),
                            f"user:{key}", dtypes)


def _formula_op(opname: str, code, arity: int, differentiable_by=None):
    """An Op computing the formula ``code`` (an ``Open`` id): ``_user_op`` of it."""
    return _user_op(opname, arity, None, differentiable_by, code)


def _user_op(opname: str, arity: int, forward, differentiable_by=None, code=None):
    """An Op of a user's formula (its id ``code``, or ``forward(K, *arrays)`` where it computes
    more), its backward ``differentiable_by(ctx, grad)`` (None: not differentiable): made by
    ``elementwise``, as numgrad's own formula ops, but kept out of numgrad's own registry (its
    name has a namespace: the registry harness checks numgrad's ops, not users')."""
    differentiable = differentiable_by is not None
    return elementwise(opname, code, node=opname.replace("::", "_") + "Backward0", arity=arity,
                       forward=forward, module=__name__,
                       backward=differentiable_by or _formula.not_differentiable(opname),
                       save_inputs=tuple(range(arity)) if differentiable else (),
                       jvp=_formula.FormulaOp.jvp if differentiable else None)


_INTERNAL: dict = {}  # kernels numgrad.library makes for itself (n-ary formulas' loops)

_NARY_CPU = """import numpy as np
from numba import njit

from numgrad.kernels.user import {key} as f


@njit(cache=True, error_model="numpy")
def loop({args}, out):
    for i in range(out.size):
        out[i] = f({items})
"""
_NARY_CUDA = """from numba import cuda

from numgrad.kernels.user import {key} as f


@cuda.jit
def loop({args}, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = f({items})
"""


class _Kernels:
    """The kernels of an internal ``K.custom_call``: what ``call_kernel`` reads of a custom op."""

    _returns = ("Tensor",)

    def __init__(self, name: str, kernels: dict):
        self._name, self._kernels, self._init_fn = name, kernels, None


def _nary_kernels(qualname: str, key: str, cpu_key: str, arity: int) -> str:
    """The name of the ``K.custom_call`` kernels of an n-ary formula (its arguments broadcast
    and made contiguous, one loop; generated files named after the formula's digest, as the
    unary and binary families' are): CPU and CUDA."""
    args = ", ".join(f"a{i}" for i in range(arity))
    items = ", ".join(f"a{i}[i]" for i in range(arity))
    modules = {}

    def module(device):
        if device not in modules:
            text = (_NARY_CPU if device == "cpu" else _NARY_CUDA).format(
                key=cpu_key if device == "cpu" else key, args=args, items=items)
            modules[device] = codegen.load_text(f"nary_{key}"[:60], text, device)
        return modules[device]

    def cpu(*arrays):
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
        dtype = np.result_type(*arrays)
        flat = [np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype), shape)).reshape(-1)
                for a in arrays]
        out = np.empty(shape, dtype)
        if out.size:
            module("cpu").loop(*flat, out.reshape(-1))
        return out

    def cuda(*arrays):
        nc = _lazy.optional("numba.cuda")

        layout = _lazy.module("kernels.cuda.layout")

        shapes = [tuple(getattr(a, "shape", ())) for a in arrays]
        shape = tuple(np.broadcast_shapes(*shapes))
        dtype = next(a.dtype for a in arrays if hasattr(a, "copy_to_host"))
        flat = []
        for a in arrays:
            if hasattr(a, "copy_to_host"):
                a = layout.ascontiguous(layout.broadcast_to(a, shape)) if tuple(a.shape) != shape \
                    else layout.ascontiguous(a)
            else:
                a = nc.to_device(np.full(shape, a, dtype))
            flat.append(a.reshape(-1) if a.size else a)
        out = nc.device_array(shape, dtype)
        if out.size:
            module("cuda").loop.forall(out.size)(*flat, out.reshape(-1))
        return out

    name = f"{qualname}#loop"
    _INTERNAL[name] = _Kernels(qualname.rpartition("::")[2], {"cpu": cpu, "cuda": cuda})
    _INTERNAL[name].module = module  # (the generated modules, for the no-GPU compile check)
    return name


def _nary_op(opname: str, kernel: str, arity: int, differentiable_by=None):
    """An Op computing an n-ary formula through its ``K.custom_call`` kernels (opaque to
    numgrad.compile's fusion, one call), kept out of numgrad's registry as ``_formula_op``'s."""
    def forward(K, *arrays):
        return K.custom_call(kernel, *arrays)

    return _user_op(opname, arity, forward, differentiable_by)


class ElementwiseOp:
    """An elementwise op made of a formula (``elementwise``'s result): ``op(x)`` or ``op(a, b)``
    broadcast, with ``out=``; ``op.inplace(x, ...)`` (``numgrad.ops.<ns>.<name>_``) writes into
    ``x``."""

    def __init__(self, ns: str, name: str, formula, grad, dtypes):
        self._namespace, self._name = ns, name
        self._qualname = f"{ns}::{name}"
        self.__name__ = self.__qualname__ = name
        py = getattr(formula, "py_func", formula)
        self.__doc__ = py.__doc__
        if not callable(py):
            raise TypeError(f"elementwise: formula must be a function, got "
                            f"{type(formula).__name__}")
        arity = len(inspect.signature(py).parameters)
        if arity < 1:
            raise ValueError(f"elementwise: {self._qualname}'s formula takes no argument")
        dtypes = tuple(np.dtype(d).name for d in (
            (dtypes,) if isinstance(dtypes, str) else dtypes))
        for d in dtypes:
            if d not in ALL + COMPLEX or d in COMPLEX:
                raise ValueError(f"elementwise: dtype {d} is not one an elementwise formula takes "
                                 "(float32, float64, int32, int64, bool)")
        self.arity, self.dtypes = arity, dtypes
        digest = _digest(formula)
        key = f"{ns}__{name}_{digest}"
        if arity > 2:
            self._init_nary(key, formula, grad, dtypes, arity)
            return
        self.code = _declare(key, self._qualname, arity, _jit(formula), dtypes,
                             _cpu_variant(formula))
        grads = None if grad is None else tuple(grad) if isinstance(grad, (tuple, list)) \
            else (grad,)
        if grads is not None and len(grads) != arity:
            raise ValueError(f"elementwise: grad gives {len(grads)} partial derivatives for a "
                             f"formula of {arity} arguments")
        backward = None
        if grads is not None:
            floats = tuple(d for d in dtypes if d.startswith("float")) or ("float32", "float64")
            if arity == 1:
                # (each generated name ends in the digest of the code it runs: a changed
                # derivative names new files too)
                bkey = f"{key}_bwd_{_digest(grads[0])}"
                bcode = _declare(bkey, f"{self._qualname}_backward", 2, _times(_jit(grads[0])),
                                 floats, _times(_cpu_variant(grads[0])))
                self._bwd = _formula_op(f"{self._qualname}_backward", bcode, 2)
                backward = self._backward_unary
            else:
                self._partials = tuple(
                    _formula_op(f"{self._qualname}_d{i}", _declare(
                        f"{key}_d{i}_{_digest(g)}", f"{self._qualname}_d{i}", 2, _jit(g),
                        floats, _cpu_variant(g)), 2)
                    for i, g in enumerate(grads))
                backward = self._backward_binary
        self._op = _formula_op(self._qualname, self.code, arity, backward)
        # (what ``opcheck`` reads of a custom op: its parameters, results, backward and fake)
        self._params = [_Param(p, "Tensor", inspect.Parameter.empty)
                        for p in inspect.signature(py).parameters]
        self._mutated, self._returns, self._backward = (), ("Tensor",), backward
        self._fake = self._fake_result
        self._with_out = with_out(self._call, name)
        self._registered_at = _where()

    def __repr__(self) -> str:
        return f"<ElementwiseOp({self._qualname})>"

    def _init_nary(self, key, formula, grad, dtypes, arity) -> None:
        """A formula of three or more numbers: its loops are ``K.custom_call`` kernels (one call,
        not fused by numgrad.compile), its backward ``grad * d_i`` for each partial ``d_i``."""
        py = getattr(formula, "py_func", formula)

        def kernels(k, fn, name):
            setattr(user, k, _jit(fn))
            setattr(user, k + "_cpu", _cpu_variant(fn))
            return _nary_kernels(name, k, k + "_cpu", arity)

        grads = None if grad is None else tuple(grad) if isinstance(grad, (tuple, list)) \
            else (grad,)
        if grads is not None and len(grads) != arity:
            raise ValueError(f"elementwise: grad gives {len(grads)} partial derivatives for a "
                             f"formula of {arity} arguments")
        backward = None
        if grads is not None:
            self._partials = tuple(
                _nary_op(f"{self._qualname}_d{i}", kernels(
                    f"{key}_d{i}_{_digest(g)}", g, f"{self._qualname}_d{i}"), arity)
                for i, g in enumerate(grads))
            backward = self._backward_nary
        self.code = None
        self._op = _nary_op(self._qualname, kernels(key, formula, self._qualname), arity,
                            backward)
        self._params = [_Param(p, "Tensor", inspect.Parameter.empty)
                        for p in inspect.signature(py).parameters]
        self._mutated, self._returns, self._backward = (), ("Tensor",), backward
        self._fake = self._fake_result
        self._with_out = with_out(self._call, self._name)
        self._registered_at = _where()

    def _bind(self, args, kwargs) -> tuple:
        if kwargs or len(args) != self.arity:
            raise TypeError(f"{self._name}() takes {self.arity} arguments")
        return tuple(args)

    def _fake_result(self, *inputs):
        """The result's shape and dtype, without computing it (``opcheck``'s fake)."""
        arrays = self._operands(inputs)
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
        dtype = np.result_type(*arrays)
        return numgrad.empty(shape, dtype=from_numpy_dtype(dtype))

    _check_fake = CustomOpDef._check_fake

    # ---------------------------------------------------------------- backward
    def _backward_unary(self, ctx, grad):
        (x,) = ctx.saved_tensors
        return (registry.apply(self._bwd, (grad, x), (grad._data, x._data)),)

    def _backward_binary(self, ctx, grad):
        a, b = ctx.saved_tensors
        out = []
        for i, (x, need) in enumerate(zip((a, b), ctx.needs_input_grad)):
            if not need or not isinstance(x, Tensor):
                out.append(None)
                continue
            arrays = binary_operands(a, b)
            d = registry.apply(self._partials[i], (a, b), arrays)
            g = grad * d
            out.append(_sum_to(g, x.shape) if tuple(g.shape) != tuple(x.shape) else g)
        return tuple(out)

    def _backward_nary(self, ctx, grad):
        inputs = ctx.saved_tensors
        arrays = self._operands(inputs)
        out = []
        for i, (x, need) in enumerate(zip(inputs, ctx.needs_input_grad)):
            if not need or not isinstance(x, Tensor):
                out.append(None)
                continue
            g = grad * registry.apply(self._partials[i], inputs, arrays)
            out.append(_sum_to(g, x.shape) if tuple(g.shape) != tuple(x.shape) else g)
        return tuple(out)

    # ---------------------------------------------------------------- calling
    def _operands(self, inputs) -> tuple:
        """The arrays of ``inputs`` in the dtype the formula runs in: their common dtype
        (PyTorch's promotion), an integer or bool one made the default float dtype where the
        formula takes floats only; PyTorch's error where it takes neither."""
        if self.arity == 1:
            (x,) = inputs
            if not isinstance(x, Tensor):
                raise TypeError(f"{self._name}(): argument 'input' must be Tensor, not "
                                f"{type(x).__name__}")
            arrays = (x._data,)
        elif self.arity == 2:
            arrays = binary_operands(*inputs)
        else:
            arrays = _common_operands(inputs)
        dt = next((a.dtype for a in arrays if isinstance(a, np.ndarray) or
                   hasattr(a, "copy_to_host")), None) or np.asarray(arrays[0]).dtype
        if dt.name in self.dtypes:
            return arrays
        floats = [d for d in self.dtypes if d.startswith("float")]
        if dt.kind in "biu" and floats:
            target = default_for_category(FLOAT).np
            if target.name not in floats:
                target = np.dtype(floats[0])
            return tuple(_as(t, target) for t in inputs)
        raise NotImplementedError(f'"{self._name}" not implemented for \'{torch_name(dt)}\'')

    def _call(self, *inputs):
        if len(inputs) != self.arity:
            raise TypeError(f"{self._name}() takes {self.arity} arguments ({len(inputs)} given)")
        return registry.apply(self._op, inputs, self._operands(inputs))

    def __call__(self, *inputs, out=None):
        tensors = [t for t in inputs if isinstance(t, Tensor)]
        if _dispatches(self, inputs):
            _install_pointwise(self)
            return overrides.handle_torch_function(self, tensors, *inputs, out=out) \
                if out is not None else overrides.handle_torch_function(self, tensors, *inputs)
        return self._with_out(*inputs, out=out)

    def inplace(self, input: Tensor, *others) -> Tensor:
        """The op written into ``input`` (``x.<name>_()``): its version bumped, its history the
        op's, as numgrad's in-place ops."""
        return _write(input, self._call, *others)


def _common_operands(inputs) -> tuple:
    """The arrays of ``inputs`` (tensors and numbers) in their common dtype, PyTorch's
    promotion, their shapes checked to broadcast (PyTorch's error)."""
    tensors = [t for t in inputs if isinstance(t, Tensor)]
    if not tensors:
        raise TypeError("expected at least one Tensor operand")
    shape = ()
    for t in tensors:
        shape = broadcast_shapes(shape, tuple(t._data.shape))
    for s in inputs:
        if not isinstance(s, Tensor) and not isinstance(s, _SCALARS):
            raise TypeError(f"unsupported operand type: {type(s).__name__}")
    dt = result_type([t.dtype for t in tensors if t._data.ndim],
                     [t.dtype for t in tensors if not t._data.ndim],
                     tuple(s for s in inputs if not isinstance(s, Tensor)))
    return tuple(_as(x, dt.np) for x in inputs)


def _install_pointwise(op) -> None:
    """``op``'s batching rule: numgrad's rule for elementwise ops."""
    if op not in _vmap._NAMES:
        _vmap._NAMES[op] = op._qualname
        _vmap.RULES[op._qualname] = _vmap._pointwise


def _user_elementwise(name: str, formula, grad, dtypes) -> ElementwiseOp:
    """What ``elementwise`` (``ops._formula.elementwise``, numgrad's one declaration of an
    elementwise op) makes of a user's formula: an elementwise op ``"ns::name"`` of a scalar
    ``formula`` of one or more numbers, compiled by Numba into CPU and CUDA loops (broadcasting,
    type promotion), with ``grad`` its partial derivatives (a formula of the same arguments, or one
    per argument) for the backward and the jvp, for the dtypes ``dtypes`` (integer inputs of a
    float-only formula are made the default float dtype). Reachable as
    ``numgrad.ops.<ns>.<name>`` (and ``<name>_`` in place)."""
    ns, opname = _split_name(name)
    py = getattr(formula, "py_func", formula)
    try:
        params = list(inspect.signature(py).parameters)
    except (TypeError, ValueError):
        params = []
    schema = "(" + ", ".join(f"Tensor {p}" for p in params) + ") -> Tensor"
    _claim(name, schema, None, _where())
    op = ElementwiseOp(ns, opname, formula, grad, dtypes)
    _claim(name, schema, op)
    return op
