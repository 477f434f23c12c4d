"""What a trace depends on besides tensors, and what it does besides computing them.

A replay skips the function's Python, so it is sound only where (a) every Python value the
traced code could have read is re-checked by the guard, and (b) the traced call did nothing
that a replay would have to do again beside the tensor effects ``program.py`` reproduces.
This module gives both halves, conservatively (where it cannot tell, the key runs eagerly):

- ``freeze(value)``: a comparable snapshot of everything reachable from a Python value (the
  items of containers, the attributes of objects, the state of random generators, small NumPy
  arrays), so that the guard compares ``cfg["scale"]``, ``self.s`` of a helper object or a
  mutable default argument as it compares a plain number. Tensors, modules and optimizers are
  taken by identity (the guard checks their layouts, settings and state itself).
- ``Audit``: a profile hook (``sys.setprofile``, this thread only) while the function is traced.
  It lists the user code that ran (so code the guard did not scan is found), the built-in
  functions that user code called (``print``, ``np.asarray``, ``random.random``, a file write:
  Python effects or values a replay cannot reproduce), the containers mutated by their built-in
  methods (``list.append``), and the user code that writes globals or closure variables.
- Before and after the traced call, every guarded root is frozen again: a difference is a Python
  side effect (a scheduler stepped, a counter bumped, a list appended), which a replay would skip.
"""
from __future__ import annotations

import dis
import gc
import os
import sys
import types

import numpy as np

from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from .. import creation

BUDGET = 4096  # items a guarded value may hold: past this, comparing it each call costs too much
ARRAY_BYTES = 1 << 16  # a NumPy array the function reads is compared bit for bit up to this size


class Unguardable(Exception):
    """A value the guard cannot compare cheaply (too large, too deep)."""


def freeze(value, modules: bool = False):
    """A snapshot of ``value`` that compares equal (``==``) to another snapshot exactly when
    the two values would give a trace the same Python inputs. ``modules``: also the non-member
    attributes of modules (for the side-effect check; the guard checks modules itself)."""
    t = type(value)
    if t in _ATOMS:  # (the common case, at each call: a number)
        return (t, value) if value == value else (t, "nan")
    return _Freezer(modules).freeze(value, 0)


class _Freezer:
    def __init__(self, modules: bool):
        self.modules = modules
        self.count = 0
        self.path: set[int] = set()
        self.containers: set[int] = set()  # the ids of the containers and objects reached

    def freeze(self, v, depth: int):
        t = type(v)
        if t in _ATOMS:
            return (t, v) if v == v else (t, "nan")
        self.count += 1
        if self.count > BUDGET or depth > 12:
            raise Unguardable("a Python value it reads holds too much to compare at each call")
        if t in _TAGGED:  # (tensors, modules, optimizers, functions, classes, modules: identity)
            return _TAGGED[t](self, v, depth)
        key = id(v)
        if key in self.path:
            return ("cycle", key)
        self.path.add(key)
        try:
            return self._compound(v, t, depth + 1)
        finally:
            self.path.discard(key)

    def _compound(self, v, t, depth):
        if isinstance(v, (list, tuple)):
            self.containers.add(id(v))
            return (t, tuple(self.freeze(x, depth) for x in v))
        if isinstance(v, dict):
            self.containers.add(id(v))
            return (t, tuple((self.freeze(k, depth), self.freeze(x, depth)) for k, x in v.items()))
        if isinstance(v, (set, frozenset)):
            self.containers.add(id(v))
            return (t, frozenset(self.freeze(x, depth) for x in v))
        if isinstance(v, Tensor):
            return ("tensor", id(v))
        if isinstance(v, Module):
            if not self.modules:
                return ("module", id(v))
            self.containers.add(id(v))
            d = vars(v)
            return ("module", id(v), tuple(
                (k, self.freeze(x, depth)) for k, x in d.items()
                if k not in _MODULE_MEMBERS))
        if isinstance(v, Optimizer):
            return ("optimizer", id(v))
        if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType,
                          types.CodeType)):
            return ("identity", id(v))
        if isinstance(v, types.MethodType):
            return ("method", id(v.__func__), self.freeze(v.__self__, depth))
        if isinstance(v, np.ndarray):
            if v.nbytes > ARRAY_BYTES:
                raise Unguardable("it reads a large NumPy array (its values are not checked at "
                                  "each call)")
            self.containers.add(id(v))
            return ("ndarray", v.dtype.str, v.shape, v.tobytes())
        if isinstance(v, np.generic):
            return ("npscalar", v.dtype.str, v.tobytes())
        if isinstance(v, np.random.Generator):
            self.containers.add(id(v))
            return ("rng", id(v), self.freeze(v.bit_generator.state, depth))
        if isinstance(v, np.dtype):
            return ("dtype", v.str)
        if t.__module__.startswith("numgrad.compiler"):  # (a compiled function: its own cache)
            return ("identity", id(v))
        d = getattr(v, "__dict__", None)
        if isinstance(d, dict):
            self.containers.add(id(v))
            slots = tuple((k, self.freeze(getattr(v, k, None), depth))
                          for k in getattr(t, "__slots__", ()) if isinstance(k, str))
            return ("object", id(t), tuple((k, self.freeze(x, depth)) for k, x in d.items()),
                    slots)
        slots = getattr(t, "__slots__", None)
        if slots is not None:
            self.containers.add(id(v))
            return ("object", id(t), tuple((k, self.freeze(getattr(v, k, None), depth))
                                           for k in slots if isinstance(k, str)))
        return ("opaque", id(v))


_ATOMS = {bool, int, float, complex, str, bytes, type(None)}
_MODULE_MEMBERS = frozenset({"_parameters", "_buffers", "_modules"})
_TAGGED = {
    types.FunctionType: lambda f, v, d: ("identity", id(v)),
    types.BuiltinFunctionType: lambda f, v, d: ("identity", id(v)),
    type: lambda f, v, d: ("identity", id(v)),
    types.ModuleType: lambda f, v, d: ("identity", id(v)),
    type(Ellipsis): lambda f, v, d: ("ellipsis",),
    slice: lambda f, v, d: ("slice", f.freeze(v.start, d), f.freeze(v.stop, d),
                            f.freeze(v.step, d)),
}


def reachable(values) -> set:
    """The ids of the containers and objects reachable from ``values`` (as ``freeze`` walks)."""
    f = _Freezer(True)
    for v in values:
        try:
            f.freeze(v, 0)
        except Unguardable:
            pass
    return f.containers


# ------------------------------------------------------------------------------------- audit
# Built-in functions that only compute from their arguments (what they read is guarded where it
# comes from): user code may call them inside a compiled function.
_PURE_BUILTINS = frozenset({
    "len", "isinstance", "issubclass", "range", "enumerate", "zip", "reversed", "sorted", "min",
    "max", "abs", "round", "sum", "any", "all", "map", "filter", "getattr", "hasattr", "callable",
    "iter", "next", "divmod", "pow", "hash", "id", "type", "repr", "format", "chr", "ord",
    "hex", "oct", "bin", "super", "vars", "dir", "isfinite", "isnan", "isinf", "sqrt", "exp",
    "log", "log2", "log10", "sin", "cos", "tan", "tanh", "floor", "ceil", "prod", "fsum",
    "__build_class__", "locals", "globals", "ascii", "__import__", "__new__", "__init__",
    # (containers' own methods that read: the mutating ones are followed apart)
    "get", "keys", "values", "items", "index", "count", "copy", "startswith", "endswith",
    "join", "split", "strip", "lower", "upper", "replace", "format_map", "__getitem__",
    "__contains__", "__len__", "__iter__", "bit_length", "is_integer", "conjugate",
})
_MATH_MODULES = frozenset({"math", "builtins", "operator", "_operator", "itertools",
                           "functools", "_functools", "cmath"})
# Built-in methods that change the container they are bound to.
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "add", "discard", "sort", "reverse", "popitem",
                       "__setitem__", "__delitem__", "difference_update", "intersection_update",
                       "symmetric_difference_update", "__iadd__"})
# Library modules whose Python functions user code may call inside a compiled function (pure,
# or numgrad's own, whose effects on tensors are traced and whose other effects are checked).
_PURE_LIBRARIES = ("functools", "operator", "itertools", "typing", "contextlib", "abc",
                   "collections", "dataclasses", "enum", "copy", "math", "numbers", "warnings",
                   "weakref", "_weakrefset", "threading", "inspect", "importlib")

_STATIC_EFFECTS = {"STORE_GLOBAL": "writes a global variable",
                   "DELETE_GLOBAL": "deletes a global variable"}


class Audit:
    """A profile hook over the traced call (this thread only). ``problem``: the first thing it
    saw that a replay could not reproduce (None: nothing); ``unseen``: the user code objects
    that ran but that the guard's scan did not reach, with the globals each ran with."""

    def __init__(self, scanned_codes: set, user_code):
        self.scanned = scanned_codes
        self._user_code = user_code
        self.problem: str | None = None
        self.unseen: dict = {}  # code -> its globals
        self.mutated: dict[int, str] = {}  # id of a container changed by a built-in method
        self._users: dict = {}  # code -> whether it is the user's
        self._checked: set = set()  # the user code whose instructions were looked at
        self._previous = None

    def __enter__(self):
        self._previous = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._previous)
        return False

    def _user(self, frame) -> bool:
        code = frame.f_code
        known = self._users.get(code)
        if known is None:
            # (numgrad's generated modules live in the cache folder: they are numgrad's; a frame
            # with no caller is the one Numba makes up for a compiled function under a profiler)
            # (a module that sets ``__numgrad_audit__ = False`` is instrumentation, a test's
            # launch recorder, not the function's code)
            # (nor is the code the standard library makes from strings: namedtuple's __new__)
            name = code.co_filename
            module = str(frame.f_globals.get("__name__", ""))
            known = self._users[code] = frame.f_back is not None and self._user_code(name) and (
                name.startswith("<") or os.path.isabs(name)) and not module.startswith(
                ("numgrad.", "namedtuple_")) and \
                frame.f_globals.get("__numgrad_audit__", True) is not False
        return known

    def _note(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem

    def _hook(self, frame, event, arg):
        if self._previous is not None:
            self._previous(frame, event, arg)
        if event == "call":
            code = frame.f_code
            if self._user(frame):
                if code not in self._checked:  # (a global written, even one it never reads)
                    self._checked.add(code)
                    effect = static_effects(code)
                    if effect:
                        self._note(f"{code.co_name} {effect}")
                if code not in self.scanned and code not in self.unseen:
                    self.unseen[code] = frame.f_globals
                return
            caller = frame.f_back
            if caller is not None and self._user(caller):
                module = frame.f_globals.get("__name__", "")
                if not (module == "numgrad" or module.startswith("numgrad.")
                        or module.split(".")[0] in _PURE_LIBRARIES):
                    self._note(f"it calls {module}.{code.co_qualname}, whose effects and "
                               "results a replay cannot reproduce")
        elif event == "c_call" and self._user(frame):
            owner = getattr(arg, "__self__", None)
            name = getattr(arg, "__name__", "?")
            if owner is None or isinstance(owner, types.ModuleType):
                module = getattr(arg, "__module__", None) or ""
            else:
                module = type(owner).__module__
            if isinstance(owner, (list, dict, set, bytearray)) and name in _MUTATORS:
                self.mutated.setdefault(id(owner), f"{type(owner).__name__}.{name}")
                return
            if name in _PURE_BUILTINS and (module in _MATH_MODULES or isinstance(
                    owner, (str, bytes, list, tuple, dict, set, frozenset, int, float))):
                return
            self._note(f"it calls {module + '.' if module else ''}{name}, whose effects or "
                       "results a replay cannot reproduce")


def static_effects(code) -> str | None:
    """What ``code`` (or code nested in it) does to Python state that is neither its own nor a
    tensor's, found in its instructions: writing a global, or a variable of an enclosing
    function (``nonlocal``)."""
    for ins in dis.get_instructions(code):
        what = _STATIC_EFFECTS.get(ins.opname)
        if what:
            return f"{what} ({ins.argval})"
        if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
            return f"writes a variable of an enclosing function ({ins.argval}, nonlocal)"
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            what = static_effects(const)
            if what:
                return what
    return None


def nested_codes(code) -> set:
    """``code`` and the code objects nested in it (comprehensions, lambdas, inner functions)."""
    out = {code}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= nested_codes(const)
    return out


def rng_states() -> tuple:
    """The state of numgrad's default random generator (a draw changes it)."""
    return freeze(creation._rng.bit_generator.state)


def _store_effect(code) -> str | None:
    """A write into an object's attribute or a container's item in ``code`` (code the guard's
    scan did not reach, so whatever it writes into is not checked before and after), but an
    autograd.Function's ``ctx.x = ...``."""
    previous = None
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_ATTR", "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR"):
            ctx = ins.opname == "STORE_ATTR" and previous is not None and \
                previous.opname == "LOAD_FAST" and previous.argval == "ctx"
            if not ctx:
                return f"writes into an object or a container ({code.co_name})"
        previous = ins
    return None


class Watch:
    """What the traced call may change besides tensors, snapshotted before it; ``problem()``
    after it says what changed (a Python side effect a replay would skip), or None."""

    def __init__(self, found: dict, args: tuple, kwargs: dict):
        self.found = found
        self.roots = (args, kwargs, found["roots"], list(found["modules"].values()))
        try:
            self.before = freeze(self.roots, modules=True)
        except Unguardable as why:
            self.before, self.why = None, str(why)
        self.rng = rng_states()
        self.requires_grad = {k: t._requires_grad for k, t in found["tensors"].items()}
        codes = set()
        for f in found["functions"]:
            code = getattr(f, "__code__", None)
            if code is not None:
                codes |= nested_codes(code)
        self.codes = codes

    def audit(self, user_code) -> Audit:
        return Audit(self.codes, user_code)

    def problem(self, audit: Audit, global_names) -> tuple:
        """(what a replay could not reproduce or None, [(getter, snapshot)]: the extra checks of
        the Python values read by user code the scan did not reach)."""
        if self.before is None:
            return self.why, []
        if audit.problem:
            return audit.problem, []
        if rng_states() != self.rng:
            return "it draws random numbers (the generator's state would not advance)", []
        for k, t in self.found["tensors"].items():
            if t._requires_grad != self.requires_grad[k]:
                return "it changes a tensor's requires_grad", []
        extra, roots = [], []
        for code, namespace in audit.unseen.items():
            effect = _store_effect(code)
            if effect:
                return f"it runs {code.co_qualname}, which {effect}", []
            if code.co_freevars:  # (its closure variables, in every function made of it)
                functions = [f for f in gc.get_referrers(code)
                             if isinstance(f, types.FunctionType) and f.__code__ is code]
                if not functions:
                    return f"it runs {code.co_qualname}, a closure the guard cannot follow", []
                for f in functions:
                    getter = _cells_getter(f)
                    now = getter()
                    if now is UNGUARDABLE:
                        return "a Python value it reads holds too much to compare", []
                    extra.append((getter, now))
                    roots.append(tuple(_cell(c) for c in f.__closure__ or ()))
            for name in sorted(global_names(code)):
                if name not in namespace or isinstance(namespace[name], types.ModuleType):
                    continue
                value = namespace[name]
                roots.append(value)
                getter = _global_getter(namespace, name)
                now = getter()
                if now is UNGUARDABLE:
                    return "a Python value it reads holds too much to compare at each call", []
                extra.append((getter, now))
        try:
            after = freeze(self.roots, modules=True)
        except Unguardable as why:
            return str(why), []
        if after != self.before:
            return "it changes Python state that a replay would not (an object's attribute, a " \
                   "container, a scheduler's step)", []
        if audit.mutated:
            touched = reachable(list(self.roots) + roots)
            for key, what in audit.mutated.items():
                if key in touched:
                    return f"it changes a container it reads from outside ({what})", []
        return None, extra


UNGUARDABLE = object()  # (what ``snapshot`` gives for a value past what a guard compares)


def snapshot(value):
    """``freeze(value)``, or ``UNGUARDABLE`` where it has grown past what a guard compares
    (never equal to a snapshot taken at a trace)."""
    try:
        return freeze(value)
    except Unguardable:
        return UNGUARDABLE


def _cells_getter(function):
    return lambda: snapshot(tuple(_cell(c) for c in function.__closure__ or ()))


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:  # (not bound yet)
        return UNGUARDABLE


def _global_getter(namespace: dict, name: str):
    missing = object()
    return lambda: snapshot(namespace.get(name, missing))


def owners(tensors) -> tuple:
    """Which of ``tensors``' arrays (each one's data, then its gradient's, where it has one)
    share memory: a label per array, the same for arrays with one owner. A step traced with
    distinct tensors must not replay for the same tensor given twice (``f(y, y)``), nor for a
    tensor that is also a global it reads: the guard compares these labels."""
    seen: dict = {}
    out = []
    for t in tensors:
        d = t._data
        b = getattr(d, "base", None)
        out.append(seen.setdefault(id(d if b is None else b), len(seen)))
        g = t._grad
        if g is not None:
            d = g._data
            b = getattr(d, "base", None)
            out.append(seen.setdefault(id(d if b is None else b), len(seen)))
    return tuple(out)
