"""``numgrad.overrides``: PyTorch's ``__torch_function__`` protocol.

A type that defines ``__torch_function__(cls, func, types, args=(), kwargs=None)``, a Tensor
subclass or an unrelated ("duck") class, takes over numgrad's public functions (``numgrad.*``,
``numgrad.nn.functional.*``, ``numgrad.linalg.*`` …) and Tensor methods and operators when one of
its instances is among the arguments; a ``TorchFunctionMode`` takes them over inside its ``with``
block. PyTorch's rules: the implementations of the distinct types among the arguments are called
subclasses before superclasses and otherwise left to right, the first result other than
``NotImplemented`` is the result, and PyTorch's ``TypeError`` when all of them return
``NotImplemented`` (an operator returns ``NotImplemented`` itself then, so Python's reflected
operators still run). The modes come first, the innermost first, each disabled while it runs.
``Tensor.__torch_function__`` (what ``super().__torch_function__`` reaches) runs the function
with subclass dispatch off and returns subclass instances (``as_subclass``), so that the results
of ops on a ``Tensor`` subclass stay that subclass, as in PyTorch.

What it costs. numgrad's public functions and Tensor's methods are dispatching forms of
themselves from the import on (one per namespace and function, bound where the plain one was),
but until the process has met a tensor-like they only call the plain function: a failure of it
is the one moment they look at the arguments' types (cached per type, as PyTorch's
``has_torch_function``), and an argument whose type has ``__torch_function__`` there switches
dispatch on (``_activate``) and the call is dispatched. So are a Tensor subclass defined outside
numgrad and ``torch`` (``Tensor.__init_subclass__``) and a mode entered. From then on each call
makes one pass over its arguments' types, in that process only. Nothing outside numgrad is
watched or changed: no hook on class statements. Classes of ``torch`` itself (the oracle of the
tests, where it is imported beside numgrad) and numgrad's own (``nn.Parameter``, whose
``__torch_function__`` is the disabled one, as PyTorch's) do not switch it on. A plain function
that succeeds with a tensor-like argument before dispatch is on (one that converts anything, as
``as_tensor``) does not see it.

What is not there: ``__torch_dispatch__`` and ``TorchDispatchMode`` (they act on ATen's C++
operators); property getters (``Tensor.shape.__get__``, ``Tensor.grad.__get__``) are not
dispatched; numgrad's backward pass runs with dispatch off (PyTorch's engine is C++, so its
formulas are not seen either), which also covers a custom ``Function``'s Python ``backward``.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import sys
import threading
import types as _types
import warnings

import numgrad

from . import autograd
from .tensor import Tensor, _subclass_hooks
from . import _lazy

__all__ = [
    "BaseTorchFunctionMode", "TorchFunctionMode", "enable_reentrant_dispatch",
    "get_default_nowrap_functions", "get_ignored_functions", "get_overridable_functions",
    "get_testing_overrides", "handle_torch_function", "has_torch_function",
    "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
    "is_tensor_method_or_property", "resolve_name", "wrap_torch_function",
]


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The ``__torch_function__`` of a type that takes part in no dispatch (``nn.Parameter``):
    the function runs as on a plain Tensor."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _State(threading.local):
    """Per thread, as PyTorch's: the mode stack and the two disabling context managers."""

    def __init__(self):
        self.modes = []
        self.no_subclass = 0  # DisableTorchFunctionSubclass depth
        self.no_all = 0  # DisableTorchFunction depth


_state = _State()
_active = False  # whether a tensor-like has been met (or a Tensor subclass defined, a mode entered)
_names = {}  # dispatching public function -> PyTorch's name ("torch.add", "torch.Tensor.add")
_python_style = set()  # the functions whose failure message is handle_torch_function's


class DisableTorchFunctionSubclass:
    """``torch._C.DisableTorchFunctionSubclass``: inside it, the ``__torch_function__`` of
    arguments is not called (modes still are)."""

    def __enter__(self):
        _state.no_subclass += 1
        return self

    def __exit__(self, *exc):
        _state.no_subclass -= 1
        return False


class DisableTorchFunction:
    """``torch._C.DisableTorchFunction``: inside it, neither arguments' ``__torch_function__``
    nor modes are called."""

    def __enter__(self):
        _state.no_all += 1
        return self

    def __exit__(self, *exc):
        _state.no_all -= 1
        return False


# ------------------------------------------------------------------------------ which arguments
_relevant_types: dict = {}  # type -> whether its instances take part in dispatch


def _takes_part(t) -> bool:
    known = _relevant_types.get(t)
    if known is not None:
        return known
    tf = getattr(t, "__torch_function__", None)
    func = getattr(tf, "__func__", tf)
    result = tf is not None and t is not Tensor and tf is not _disabled_torch_function_impl \
        and func is not _disabled_torch_function_impl and not _pytorchs_own(func)
    _relevant_types[t] = result
    return result


def _pytorchs_own(func) -> bool:
    """Whether ``func`` is PyTorch's own ``Tensor.__torch_function__`` (a real ``torch.Tensor``,
    or a subclass keeping it): it calls the function again under PyTorch's switch, which
    numgrad's dispatch does not see, so taking it would recurse; such a tensor is a foreign
    object to numgrad's functions (``numgrad.from_dlpack(torch_tensor)`` reads its DLPack)."""
    return getattr(func, "__module__", None) == "torch._tensor" and \
        getattr(func, "__qualname__", None) == "Tensor.__torch_function__"


_PLAIN = {int, float, bool, complex, str, type(None), slice, type(Ellipsis)}


def _add(found: list, arg) -> None:
    """``arg`` among the overloaded arguments, PyTorch's order: one per type, a subclass before
    its superclasses, otherwise in the order seen."""
    t = type(arg)
    for a in found:
        if type(a) is t:
            return
    for i, a in enumerate(found):
        if issubclass(t, type(a)):
            found.insert(i, arg)
            return
    found.append(arg)


def _overloaded(args, kwargs) -> list:
    """The arguments (and the elements of list and tuple arguments, as PyTorch's tensor lists)
    whose type takes part in dispatch."""
    found = []
    for a in (args if not kwargs else args + tuple(kwargs.values())):
        t = type(a)
        if t is Tensor or t in _PLAIN:
            continue
        if t is list or t is tuple:
            for b in a:
                tb = type(b)
                if tb is not Tensor and tb not in _PLAIN and _takes_part(tb):
                    _add(found, b)
        elif _takes_part(t):
            _add(found, a)
    return found


def _get_overloaded_args(relevant_args, get_type_fn=type) -> list:
    found = []
    for a in relevant_args:
        if _takes_part(get_type_fn(a)):
            _add(found, a)
    return found


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor or an instance of a type with ``__torch_function__``."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def has_torch_function(relevant_args) -> bool:
    """Whether any of ``relevant_args`` takes part in dispatch, or a mode is active."""
    if _state.no_all:
        return False
    if _state.modes:
        return True
    return not _state.no_subclass and any(_takes_part(type(a)) for a in relevant_args)


def has_torch_function_unary(arg) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    return has_torch_function(args)


# ------------------------------------------------------------------------------------ dispatch
def _message(public_api, overloaded, mode) -> str:
    name = resolve_name(public_api) or \
        f"{getattr(public_api, '__module__', None)}.{getattr(public_api, '__name__', public_api)}"
    if public_api not in _python_style and public_api in _names:
        lines = [(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
                  "returned NotImplemented:"), ""]
        if mode is not None:
            lines.append(f"  - mode object {mode!r}")
        lines += [f"  - tensor subclass {type(a)}" for a in overloaded]
        lines += ["", "For more information, try re-running with TORCH_LOGS=not_implemented"]
        return "\n".join(lines)
    message = (f"no implementation found for '{name}' on types that implement "
               f"__torch_function__: {[type(a) for a in overloaded]}")
    if mode is not None:
        message += f" nor in mode {mode}"
    return message


def _modes_pass(raw) -> bool:
    """Whether every active mode declares the functions it overrides (``_numgrad_overrides``, a
    set of raw functions: numgrad.func.vmap's randomness mode, the random factories) and ``raw``
    is none of them: the call goes on as those modes' handlers would pass it on, without them."""
    for mode in _state.modes:
        only = getattr(mode, "_numgrad_overrides", None)
        if only is None or raw in only:
            return False
    return True


def _dispatch(public_api, overloaded: list, args: tuple, kwargs):
    """Calls the modes' and the overloaded arguments' ``__torch_function__`` in PyTorch's order
    until one returns something other than NotImplemented; PyTorch's TypeError if none does."""
    types = tuple(type(a) for a in overloaded)
    mode = None
    if _state.modes and not _modes_pass(_unwrapped(public_api)):
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg and \
                method is not _disabled_torch_function_impl:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and "
                          "will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=3)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(_message(public_api, overloaded, mode))


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Dispatches a call of ``public_api`` with ``args`` and ``kwargs`` to the
    ``__torch_function__`` of ``relevant_args`` (and the modes): for functions written outside
    numgrad that take part in the protocol, as in PyTorch."""
    overloaded = [] if _state.no_subclass else _get_overloaded_args(relevant_args)
    return _dispatch(public_api, overloaded, args, kwargs)


def _all_as_keywords(raw):
    """(args, kwargs) -> the first argument alone positional and every other parameter a
    keyword, defaults included: how PyTorch's Python-level ``Tensor.backward`` hands its call to
    ``__torch_function__``."""
    signature = inspect.signature(raw)

    def bind(args, kwargs):
        bound = signature.bind(*args, **(kwargs or {}))
        bound.apply_defaults()
        values = dict(bound.arguments)
        first = values.pop(next(iter(signature.parameters)))
        return (first,), values

    return bind


# NumPy's names of PyTorch's parameters, which PyTorch's argument parser takes for them
# (``x.sum(axis=1)``, ``mean(x, axis=0, keepdims=True)``): a call that a keyword of these
# names fails is made again with PyTorch's (the usual call pays nothing for it).
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def _torch_names(kwargs: dict) -> dict:
    out = {}
    for k, v in kwargs.items():
        name = _NUMPY_NAMES.get(k, k)
        if name in out or name != k and name in kwargs:
            raise TypeError(f"got multiple values for argument '{name}'")
        out[name] = v
    return out


def _dispatching(raw, operator: bool = False, shared=None, bind=None):
    """The public form of ``raw``: ``raw`` itself unless an argument takes part in dispatch or a
    mode is active. An operator (``__add__``, ``__rsub__`` …) whose dispatch fails with a
    TypeError returns NotImplemented, as PyTorch's, so that Python tries the reflected one;
    ``shared``: the public form ``__torch_function__`` is given instead (``Tensor.add`` for
    ``__add__``)."""

    @functools.wraps(raw)
    def public(*args, **kwargs):
        if not _active:  # (no tensor-like met yet: the plain function, unless it fails on one)
            try:
                return raw(*args, **kwargs)
            except Exception as error:
                if (kwargs and type(error) is TypeError
                        and not _NUMPY_NAMES.keys().isdisjoint(kwargs)):
                    return public(*args, **_torch_names(kwargs))
                if type(error) is AttributeError:
                    _argument_type_error(raw, args, kwargs)
                if _state.no_all or not _met(args, kwargs):
                    raise
        state = _state
        overloaded = () if state.no_all or state.no_subclass else _overloaded(args, kwargs)
        if state.no_all or (not overloaded and (not state.modes or _modes_pass(raw))):
            try:
                return raw(*args, **kwargs)
            except TypeError:  # (NumPy's names, as above, once a tensor-like has been met)
                if not kwargs or _NUMPY_NAMES.keys().isdisjoint(kwargs):
                    raise
            except AttributeError:
                _argument_type_error(raw, args, kwargs)
                raise
            return public(*args, **_torch_names(kwargs))
        if operator:
            try:
                return _dispatch(shared or public, overloaded, args, kwargs or None)
            except TypeError:
                return NotImplemented
        if bind is not None:
            args, kwargs = bind(args, kwargs)
        return _dispatch(public, overloaded, args, kwargs or None)

    public._numgrad_raw = raw
    return public


def _argument_type_error(raw, args, kwargs) -> None:
    """Where ``raw`` failed with an AttributeError (``'int' object has no attribute '_data'``):
    PyTorch's TypeError if an argument its signature declares a ``Tensor`` is not one
    (``mm(): argument 'mat2' (position 2) must be Tensor, not int``); else nothing (the
    AttributeError stands)."""
    try:
        signature = inspect.signature(raw)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return
    for position, (name, parameter) in enumerate(signature.parameters.items(), 1):
        if parameter.annotation not in ("Tensor", numgrad.Tensor) or name not in bound.arguments:
            continue
        value = bound.arguments[name]
        if not isinstance(value, numgrad.Tensor) and not hasattr(value, "__torch_function__"):
            raise TypeError(f"{raw.__name__.lstrip('_')}(): argument '{name}' (position "
                            f"{position}) must be Tensor, not {type(value).__name__}") from None


def _without_dispatch(raw):
    """``raw`` run with dispatch off (the backward pass: PyTorch's engine is C++, none of its
    work reaches ``__torch_function__``)."""

    @functools.wraps(raw)
    def run(*args, **kwargs):
        with DisableTorchFunction():
            return raw(*args, **kwargs)

    return run


def _unwrapped(f):
    return getattr(f, "_numgrad_raw", f)


# ------------------------------------------------------------------ what is rebound, and names
# Names of numgrad's namespace that are no computation on tensors (PyTorch's ignored functions
# among them: grad mode, seeds, printing, saving, the defaults), left as they are.
_NOT_DISPATCHED = frozenset((
    "compile", "enable_grad", "no_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled", "manual_seed", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "fork_rng", "save", "load", "set_printoptions", "get_printoptions",
    "set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
    "set_num_threads", "get_num_threads", "install_as_torch", "typename", "is_tensor",
    "is_storage", "can_cast", "promote_types", "result_type", "broadcast_shapes", "finfo",
    "iinfo", "from_numpy", "use_deterministic_algorithms", "is_nonzero_", "set_runtime_defaults",
))
# Tensor's attributes that are not dispatched (PyTorch's ignored methods and the protocol).
_TENSOR_NOT_DISPATCHED = frozenset((
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__getattribute__",
    "__setattr__", "__delattr__", "__dir__", "__hash__", "__class__", "__subclasshook__",
    "__iter__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__deepcopy__",
    "__copy__", "__array__", "__array_priority__", "__weakref__", "__slots__", "__module__",
    "__doc__", "__dict__", "as_subclass", "unflatten",
))
# Tensor's operators that reach __torch_function__ as themselves (PyTorch's Python-level ones and
# __eq__), not as the method they share a function with (x * 2 reaches it as Tensor.mul).
_OWN_NAMED = frozenset((
    "__eq__", "__pow__", "__rpow__", "__floordiv__", "__rfloordiv__", "__rsub__", "__rtruediv__",
    "__rmod__", "__rmatmul__", "__and__", "__or__", "__xor__", "__invert__", "__getitem__",
    "__setitem__", "__len__", "__bool__", "__float__", "__int__", "__index__", "__format__",
    "__repr__", "__contains__",
))
_OPERATORS = frozenset(
    f"__{p}{n}__" for p in ("", "r", "i") for n in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
        "lshift", "rshift", "div"))


def _namespaces():
    """(module or class, PyTorch's prefix, the failure message's style) of each namespace whose
    public functions dispatch."""
    found = [("numgrad", "torch.", False), ("numgrad.nn.functional", "torch.nn.functional.", True),
             ("numgrad.linalg", "torch.linalg.", False), ("numgrad.special", "torch.special.", False),
             ("numgrad.fft", "torch.fft.", False)]
    out = []
    for module, prefix, python_style in found:
        try:
            out.append((importlib.import_module(module), prefix, python_style))
        except ImportError:  # (a namespace numgrad does not have)
            continue
    return out, Tensor


def _is_function(value) -> bool:
    return isinstance(value, (_types.FunctionType, _types.BuiltinFunctionType,
                              functools.partial)) or hasattr(value, "_numgrad_raw")


def _met(args, kwargs) -> bool:
    """Whether a plain function that failed had an argument of a type that takes part in
    dispatch (a tensor-like met numgrad there); if so, dispatch is on from now on."""
    if not _overloaded(args, kwargs or {}):
        return False
    _activate()
    return True


def _activate() -> None:
    """Switches dispatch on: from now on the public forms look at their arguments' types (and
    the modes) on every call. Done the first time a tensor-like meets numgrad (an argument a
    plain function failed on, ``_met``), a Tensor subclass is defined outside numgrad, or a mode
    is entered."""
    global _active
    if _active:
        return
    Parameter = _lazy.module("nn.parameter").Parameter

    if "__torch_function__" not in Parameter.__dict__:
        Parameter.__torch_function__ = _disabled_torch_function_impl
    _relevant_types.clear()
    _active = True


def _deactivate() -> None:
    """Switches dispatch off again (for tests: the modes and types stay defined)."""
    global _active
    _relevant_types.clear()
    _active = False


def _public(raw, module_name: str, name: str, **options):
    """The public form of ``raw`` bound as ``module_name.name``: its own name there, so that
    pickle finds it where it is."""
    public = _dispatching(raw, **options)
    public.__module__, public.__qualname__ = module_name, name
    return public


def wrap_namespace(module, prefix: str, python_style: bool = False) -> None:
    """Binds the public functions of ``module`` (a namespace numgrad's users call: ``numgrad``,
    ``numgrad.nn.functional`` …, PyTorch's ``prefix``) to their dispatching forms, once, when
    the module is imported. One form per function of a namespace (an alias shares it)."""
    made = {}
    for name, value in list(vars(module).items()):
        if name.startswith("_") or name in _NOT_DISPATCHED or not _is_function(value):
            continue
        raw = _unwrapped(value)
        public = made.get(id(raw))
        if public is None:
            public = made[id(raw)] = _public(raw, module.__name__, name)
            _names[public] = prefix + name
            if python_style:
                _python_style.add(public)
        setattr(module, name, public)


def _wrap_tensor(Tensor) -> None:
    """Binds Tensor's methods and operators to their dispatching forms (a Tensor operator and
    the method it is share one, as ``x * 2`` reaches ``__torch_function__`` as ``Tensor.mul`` in
    PyTorch), and ``autograd.backward`` and ``autograd.grad``."""
    for name in ("backward", "grad"):  # (dispatched, as PyTorch's, with no name of theirs)
        value = getattr(autograd, name)
        public = _public(_without_dispatch(value), autograd.__name__, name)
        _python_style.add(public)
        setattr(autograd, name, public)
    made = {}
    attrs = sorted(vars(Tensor).items(), key=lambda kv: kv[0].startswith("__"))
    for name, value in attrs:  # (the plain names first: they name a shared form)
        if name in _TENSOR_NOT_DISPATCHED or not isinstance(value, _types.FunctionType):
            continue
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        qualname = f"Tensor.{name}"
        public = None if name in _OWN_NAMED else made.get(id(value))
        raw = _without_dispatch(value) if name == "backward" else value
        if public is None:
            public = _public(raw, Tensor.__module__, qualname, operator=name in _OPERATORS,
                             bind=_all_as_keywords(value) if name == "backward" else None)
            made.setdefault(id(value), public)
            _names[public] = "torch.Tensor." + name
        elif name in _OPERATORS and not name.startswith("__i"):
            # (the method's form given to __torch_function__, but an operator returns
            # NotImplemented where that fails)
            public = _public(raw, Tensor.__module__, qualname, operator=True, shared=public)
        setattr(Tensor, name, public)


def resolve_name(f):
    """PyTorch's name of a function passed to ``__torch_function__`` ("torch.add",
    "torch.Tensor.mul", "torch.nn.functional.relu"), or None."""
    name = _names.get(f)
    if name is not None:
        return name
    for public, name in _names.items():
        if _unwrapped(public) is f:
            return name
    return None


def get_overridable_functions() -> dict:
    """{namespace: [its functions that dispatch]}: ``numgrad``, ``numgrad.nn.functional`` (and
    the others numgrad has) and ``numgrad.Tensor``."""
    modules, Tensor = _namespaces()  # (imported: their functions' forms are made)
    out = {}
    for public, name in _names.items():
        prefix, _, _short = name.rpartition(".")
        out.setdefault(prefix, []).append(public)
    by_prefix = {prefix[:-1]: module for module, prefix, _ in modules}
    by_prefix["torch.Tensor"] = Tensor
    return {by_prefix[p]: sorted(fs, key=lambda f: _names[f]) for p, fs in out.items()
            if p in by_prefix}


def get_ignored_functions() -> set:
    """The public functions that take no part in dispatch."""
    modules, _ = _namespaces()
    return {getattr(module, name) for module, _, _ in modules for name in _NOT_DISPATCHED
            if _is_function(getattr(module, name, None))}


def get_default_nowrap_functions() -> set:
    """The functions whose results ``Tensor.__torch_function__`` leaves as they are (PyTorch's
    are property getters, which numgrad does not dispatch)."""
    return set()


def get_testing_overrides() -> dict:
    """{dispatching function: a dummy of the same signature that returns -1}, for tests of
    coverage."""
    out = {}
    for fs in get_overridable_functions().values():
        for f in fs:
            try:
                signature = inspect.signature(_unwrapped(f))
            except (TypeError, ValueError):
                signature = inspect.Signature([inspect.Parameter(
                    "args", inspect.Parameter.VAR_POSITIONAL), inspect.Parameter(
                    "kwargs", inspect.Parameter.VAR_KEYWORD)])
            out[f] = _dummy(signature)
    return out


def _dummy(signature):
    def dummy(*args, **kwargs):
        signature.bind(*args, **kwargs)
        return -1

    dummy.__signature__ = signature
    return dummy


def is_tensor_method_or_property(func) -> bool:
    return getattr(Tensor, getattr(func, "__name__", ""), None) is func


def wrap_torch_function(dispatcher):
    """A decorator: the function dispatches on the arguments ``dispatcher`` returns."""

    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner


@contextlib.contextmanager
def enable_reentrant_dispatch():
    yield


def _make_subclass(cls, data, require_grad: bool = False, **_ignored):
    """``Tensor._make_subclass(cls, data, require_grad=False)``: a leaf instance of ``cls``
    sharing ``data``'s storage (and version counter), without its history."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    out = cls._wrap(data._data)
    out._version_counter = data._version_counter
    if require_grad:
        out.requires_grad_(True)
    return out


# ------------------------------------------------------------------------------ switching it on
_TORCH_MODULES = ("torch", "functorch", "numgrad")


def _outside(cls) -> bool:
    module = getattr(cls, "__module__", None) or ""
    return module.partition(".")[0] not in _TORCH_MODULES


def _class_defined(cls) -> None:
    """A class was defined: switches dispatch on if it has ``__torch_function__`` and is not
    numgrad's or PyTorch's."""
    if _active or not isinstance(cls, type) or not _outside(cls):
        return
    try:
        tf = inspect.getattr_static(cls, "__torch_function__", None)
    except Exception:  # noqa: BLE001  (a metaclass that refuses: not a tensor-like)
        return
    if tf is None or tf is _disabled_torch_function_impl:
        return
    Parameter = _lazy.module("nn.parameter").Parameter

    if issubclass(cls, Parameter) and "__torch_function__" not in vars(cls):
        return
    try:
        _activate()
    except Exception as e:  # noqa: BLE001  (a class statement must not fail for numgrad's sake)
        warnings.warn(f"numgrad could not switch __torch_function__ dispatch on for {cls!r}: "
                      f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=3)


_subclass_hooks.append(_class_defined)  # (Tensor calls it for each subclass defined)


def _install() -> None:
    """Binds Tensor's side of the protocol, and the dispatching forms of the public functions of
    ``numgrad``, ``numgrad.linalg`` and Tensor (``numgrad.nn.functional`` binds its own when it
    is imported). Once per process, at the end of numgrad's import."""
    Tensor.__torch_function__ = classmethod(_tensor_torch_function)
    Tensor.as_subclass = as_subclass
    Tensor._make_subclass = staticmethod(_make_subclass)
    sys.modules.setdefault("numgrad._C", _C)
    wrap_namespace(numgrad, "torch.")
    wrap_namespace(numgrad.linalg, "torch.linalg.")
    _wrap_tensor(Tensor)


# --------------------------------------------------------------------------------------- modes
def _push_mode(mode) -> None:
    _activate()
    _state.modes.append(mode)


def _pop_mode():
    return _state.modes.pop()


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _state.modes.pop()
    try:
        yield mode
    finally:
        _state.modes.append(mode)


def _get_current_function_mode():
    return _state.modes[-1] if _state.modes else None


def _get_current_function_mode_stack() -> list:
    return list(_state.modes)


def _is_torch_function_mode_enabled() -> bool:
    return bool(_state.modes) and not _state.no_all


def _len_torch_function_stack() -> int:
    return len(_state.modes)


class TorchFunctionMode:
    """Overrides every dispatching function inside a ``with`` block: ``__torch_function__(self,
    func, types, args=(), kwargs=None)`` is called for each call (factory functions included),
    the innermost mode first, with itself disabled while it runs (calling ``func`` inside it
    reaches the next mode, or the function)."""

    def __init__(self) -> None:
        pass

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _class_defined(cls)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs each function as it is (a base for modes that override a few)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


# ------------------------------------------------------------------------ Tensor's side of it
def _convert(ret, cls):
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return as_subclass(ret, cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if type(ret) in (tuple, list):
            return type(ret)(items)
        try:  # (a named tuple: values, indices)
            return type(ret)(*items)
        except TypeError:
            return type(ret)(items)
    return ret


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: runs ``func`` with subclass dispatch off and makes Tensor
    results instances of ``cls`` (NotImplemented if ``cls`` is not a subclass of each of
    ``types``)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)


_SLOTS = ("_data", "_requires_grad", "_grad", "_grad_fn", "_version_counter", "_hooks",
          "_accumulator", "_base", "_view_version")


def as_subclass(self, cls):
    """``Tensor.as_subclass(cls)``: an instance of ``cls`` sharing this tensor's data and
    attached to its graph (by an ``AliasBackward0`` node where it requires grad, as PyTorch's)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of torch.Tensor (got {cls!r})")
    with DisableTorchFunction():
        alias = Tensor.__getitem__(self, Ellipsis)
    out = object.__new__(cls)
    for slot in _SLOTS:
        try:
            setattr(out, slot, getattr(alias, slot))
        except AttributeError:
            pass
    return out


# ``numgrad._C`` (``torch._C`` under ``install_as_torch``): the protocol's names PyTorch keeps
# there; a module, so that ``from torch._C import DisableTorchFunctionSubclass`` works too.
_C = _types.ModuleType("numgrad._C", "The names of torch._C that numgrad has (its protocol's).")
_C.DisableTorchFunction = DisableTorchFunction
_C.DisableTorchFunctionSubclass = DisableTorchFunctionSubclass
_C._disabled_torch_function_impl = _disabled_torch_function_impl
_C._is_torch_function_mode_enabled = _is_torch_function_mode_enabled
_C._len_torch_function_stack = _len_torch_function_stack
