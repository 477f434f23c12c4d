"""Tracing: running a function once on real data while recording every array computation numgrad
makes for it.

Every array numgrad computes goes through a device's kernel module (``kernels/interface.py``):
the ops' forward, the backward formulas the engine runs, the engine's accumulation into
``.grad``, the optimizers' updates. While a trace is active in this thread the registry hands
out ``TracingKernels`` instead of ``kernels.cpu``: each call runs the real kernel and is appended
to the trace as a node, its arguments named by the trace's values. So the recorded program is
exactly what eager execution computed, forward and backward as one joint program, from the same
op registry and backward rules, and replaying it computes the same values.

A value is an input (the data or ``.grad`` of a tensor the function reads from outside: its
arguments, and the tensors reachable from its closure, globals, modules and optimizers), a
constant (made by the function from Python data, or by an op from a number), or a kernel's
result. ``TracedArray`` (traced.py) stops anything that would read values behind the tracer's
back.
"""
from __future__ import annotations

import dis
import gc
import threading
import types
import os
import sys
import sysconfig
import weakref

import numpy as np

from ..kernels import cpu as cpu_kernels
from . import soundness
from .. import dispatch
from .ir import READS, STRUCTURAL, VIEWS, WRITES, Node
from .traced import GraphBreak, TracedArray, graph_break, plain
from .. import cuda, random as _random
from ..tensor import Tensor
from .. import _lazy
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer


class Value:
    """A value of the trace: ``kind`` "input" (``source``: (holder, field) it is read from),
    "const" (``source``: a copy of its data when first seen) or "node" (a kernel's result)."""

    __slots__ = ("index", "kind", "array", "source", "written", "base")

    def __init__(self, index: int, kind: str, array, source=None, base=None):
        self.index = index
        self.kind = kind
        self.array = array  # the plain array it had while tracing
        self.source = source
        self.written = False  # whether a kernel writes into its memory
        self.base = base  # the value whose memory this one views (None: its own)

    def __repr__(self) -> str:
        return f"v{self.index}<{self.kind}>"


class Trace(dispatch.Mode):
    """The values and nodes recorded while the function ran once, on one device's kernels
    (``device``: "cpu", or "cuda" for a step whose tensors are all on the GPU). It is a dispatch
    mode (``numgrad.dispatch``) while it records: the ops of its thread get its recording
    kernels."""

    def __init__(self, device: str = "cpu"):
        self.values: list[Value] = []
        self.nodes: list[Node] = []  # (kernel name, args spec, result spec: ir.Node)
        self.by_id: dict[int, Value] = {}  # id of a plain array -> its value
        self.external: dict[int, tuple] = {}  # id of a discovered array -> (holder, field)
        # id of a discovered tensor's empty data (not wrapped: no memory to follow) -> (holder,
        # "data"): found here, where the garbage collector's referrers took a scan of every
        # object of the process (0.1 s in a large one) per kernel reading it
        self.empty_external: dict[int, tuple] = {}
        self.created: dict = {}  # arrays made by creation functions in the trace, by id
        self.views: dict[tuple, Value] = {}
        self.thread = threading.get_ident()
        self.active = True
        self.fullgraph = False
        self.broken: GraphBreak | None = None  # the first break, if any
        self.reads: str | None = None  # the first value read from a traced tensor, if any
        self.device = device
        self.kernels = TracingKernels(self, _module_of(device))
        self.generator_arrays: set = set()

    # ------------------------------------------------------------------ the mode
    def use(self, module):
        """The recording kernels for its device's module; a CUDA module asked for by a trace on
        the CPU that has recorded nothing yet makes it a CUDA trace (``adopt_cuda``), else it
        breaks; other modules pass (a CUDA step's generator state is a CPU tensor)."""
        if module is self.kernels._module or module is self.kernels:
            return self.kernels
        if self.device == "cpu" and module is not cpu_kernels:
            if self.adopt_cuda():
                return self.kernels
            graph_break("a CUDA tensor made in a step that computes on the CPU", self)
        return module

    def note_created(self, array) -> None:
        self.created[id(array)] = array

    def graph_break(self, what: str) -> None:
        error = GraphBreak(what)
        if self.fullgraph:
            raise error
        self.stop(error)

    def stands_for(self, array) -> bool:
        return self.known(array) is not None

    def read(self, what: str) -> None:
        """A value is read from a traced tensor (``traced.value_read``): the trace goes on (its
        data are real), and its calls will need their Python: the re-run path. With
        ``fullgraph=True`` it is a break, as Python control flow on a value is in PyTorch's."""
        if self.fullgraph:
            raise GraphBreak(what)
        if self.reads is None:
            self.reads = what

    def stop(self, error: GraphBreak) -> None:
        """Stops recording at a break; the function goes on eagerly."""
        if self.broken is None:
            self.broken = error
        self.active = False

    # ------------------------------------------------------------------ values
    def _value(self, kind: str, array: np.ndarray, source=None, base=None) -> Value:
        v = Value(len(self.values), kind, array, source, base)
        self.values.append(v)
        self.by_id[id(array)] = v
        return v

    def traced(self, array: np.ndarray, value: Value) -> TracedArray:
        out = array.view(TracedArray)
        out._trace = self
        out._root = value
        return out

    def input(self, array: np.ndarray, source) -> TracedArray:
        """``array`` (a tensor's data or gradient, read from outside) as an input value."""
        array = plain(array)
        v = self.by_id.get(id(array))
        if v is None:
            v = self._value("input", array, source)
        return self.traced(array, v)

    def adopt_cuda(self) -> bool:
        """Whether this trace records on CUDA: already, or from now on, where it has recorded
        nothing yet and reads no tensor (a step that makes its tensors on CUDA, as the seed
        walkthrough does with ``device="cuda"``: its first op, a creation, asks)."""
        if self.device == "cuda":
            return True
        mine = self.generator_arrays  # (the random generators' states: CPU tensors it reads)
        if self.nodes or not self.active or any(id(v.array) not in mine for v in self.values) \
                or any(k not in mine for k in self.external):
            return False
        self.device = "cuda"
        self.kernels = TracingKernels(self, _module_of("cuda"))
        return True

    def device_input(self, array, source) -> None:
        """A CUDA tensor's data (or gradient), read from outside, as an input value. Device
        arrays are not wrapped: the trace knows them by identity (it holds each one, so no id
        is reused while it records), and every way to their values goes through a kernel
        (``to_host`` is a read, which breaks the trace)."""
        if id(array) not in self.by_id:
            self._value("input", array, source)

    def known(self, array) -> Value | None:
        """The value of ``array`` (a traced array, or a device array of a CUDA trace), or None
        where the trace did not make it and does not read it."""
        if isinstance(array, TracedArray):
            return self._array_value(array) if array._trace is self else None
        if self.device == "cuda" and _is_device_array(array):
            return self.by_id.get(id(array))
        return None

    def result(self, array, specs=None):
        """A kernel's result: a new value (and the arrays of a tuple of results). A view-making
        kernel's result views its first argument's memory (``specs``: the call's arguments)."""
        if isinstance(array, tuple):
            return tuple(self.result(a) for a in array)
        if self.device == "cuda" and _is_device_array(array):
            if id(array) in self.by_id:  # (a kernel that gave back its argument itself)
                return array
            base = None
            if specs and specs[0][0] == "v":
                base = specs[0][1]
                while base.base is not None:
                    base = base.base
                if not _inside(array, base.array):
                    base = None
            self._value("node", array, base=base)
            return array
        if not isinstance(array, np.ndarray):
            return array
        array = plain(array)
        base = None
        if specs and specs[0][0] == "v":
            base = specs[0][1]
            while base.base is not None:
                base = base.base
            if not _inside(array, base.array):
                base = None  # (it made a new array: ascontiguous of a strided one copies)
        return self.traced(array, self._value("node", array, base=base))

    def ref(self, x) -> tuple:
        """The spec of a kernel argument: ("v", value), ("c", constant), ("t"/"l", specs)."""
        if isinstance(x, np.ndarray):
            return ("v", self._array_value(x))
        if self.device == "cuda" and _is_device_array(x):
            v = self.by_id.get(id(x))
            if v is None:
                raise GraphBreak("a device array made outside the recorded kernels")
            return ("v", v)
        if isinstance(x, (tuple, list)):
            return ("t" if isinstance(x, tuple) else "l", tuple(self.ref(a) for a in x))
        if isinstance(x, np.generic) or x is None or isinstance(x, (bool, int, float, str,
                                                                     np.dtype, type)):
            return ("c", x)
        if isinstance(x, slice) or x is Ellipsis:
            return ("c", x)
        raise GraphBreak(f"a kernel argument of type {type(x).__name__}")

    def _array_value(self, x: np.ndarray) -> Value:
        if isinstance(x, TracedArray) and x._trace is self:
            root = x._root
            p = x.view(np.ndarray)
            if p.shape == root.array.shape and p.strides == root.array.strides and \
                    _address(p) == _address(root.array) and p.dtype == root.array.dtype:
                return root  # (a view as another dtype, ``x.view(torch.int32)``: not the root)
            return self._view(root, p)
        p = plain(x)
        v = self.by_id.get(id(p))
        if v is not None:
            return v
        base = p.base
        while base is not None:  # a NumPy view of a known array
            if isinstance(base, np.ndarray):
                known = self.by_id.get(id(base))
                if known is not None:
                    return self._view(known, p)
            base = getattr(base, "base", None)
        source = self.external.get(id(p))
        if source is not None:
            return self._value("input", p, source)
        source = self.empty_external.get(id(p))
        if source is not None and getattr(source[0](), "_data", None) is p:  # (still its data)
            return self._value("input", p, source)
        if id(p) in self.created:
            # made from Python data in this call (a creation function, a seed gradient): the
            # replay uses a copy of its values now (``source``)
            return self._value("const", p, p.copy())
        owner = _owner(p)
        if owner is not None:  # a tensor from outside that the discovery did not reach
            return self._value("input", p, (owner, "data"))
        if p.ndim == 0:  # a number an op made an array of
            return self._value("const", p, p.copy())
        raise GraphBreak("an array computed outside the kernels (from a tensor's values, by "
                         "NumPy)")

    def _view(self, root: Value, p: np.ndarray) -> Value:
        """A view of ``root``'s memory made by NumPy (a reshape, a slice, a transpose)."""
        base = root.array
        offset = _address(p) - _address(base)
        span = sum((n - 1) * abs(s) for n, s in zip(p.shape, p.strides) if n) + p.itemsize
        if p.size and (offset < 0 or offset + span > base.nbytes or p.dtype != base.dtype
                       or any(s < 0 for s in p.strides)):
            raise GraphBreak("a copy of a tensor's data made outside the kernels")
        key = (root.index, offset, p.shape, p.strides, p.flags.writeable)
        v = self.views.get(key)
        if v is None:
            v = self.views[key] = self._value("node", p, base=root)
            self.nodes.append(Node("view", (("v", root), ("c", offset), ("c", p.shape),
                                            ("c", p.strides), ("c", p.flags.writeable)),
                                   ("v", v)))
        return v

    # ------------------------------------------------------------------ calls
    def call(self, name: str, function, args: tuple, kwargs: dict):
        specs = tuple(self.ref(a) for a in args)
        kspecs = tuple((k, self.ref(v)) for k, v in kwargs.items())
        out = call_plain(function, args, kwargs)
        if name in WRITES:
            for root in _spec_values(specs[WRITES[name]]):  # (a value, or a tuple's values)
                while root.base is not None:
                    root = root.base
                root.written = True
        if name not in VIEWS:
            _check_fresh(name, out, specs)
        result = self.result(out, specs if name in VIEWS else None)
        self.nodes.append(Node(name, specs + tuple(("kw", k, s) for k, s in kspecs),
                               _result_spec(result, self)))
        return result



def _check_fresh(name: str, out, specs) -> None:
    """A kernel not known to make views (``VIEWS``) must give back new memory: a result that
    shares memory with an argument would be a view the program does not know of (a write
    through either would not be seen in the other), so it is a break."""
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if not isinstance(o, np.ndarray) or not o.size:
            continue
        for spec in specs:
            for v in _spec_values(spec):
                if v.array.size and isinstance(v.array, np.ndarray) and \
                        np.may_share_memory(o, v.array):
                    raise GraphBreak(f"a kernel ({name}) whose result shares memory with its "
                                     "argument")


def _spec_values(spec):
    if spec[0] == "v":
        yield spec[1]
    elif spec[0] in ("t", "l"):
        for s in spec[1]:
            yield from _spec_values(s)


def _result_spec(result, trace=None):
    if isinstance(result, TracedArray):
        return ("v", result._root)
    if trace is not None and trace.device == "cuda" and _is_device_array(result):
        return ("v", trace.by_id[id(result)])
    if isinstance(result, tuple):
        return ("t", tuple(_result_spec(r, trace) for r in result))
    if result is None:
        return ("c", None)
    raise GraphBreak(f"a kernel result of type {type(result).__name__}")


def call_plain(function, args: tuple, kwargs: dict):
    """``function`` (a kernel) called on the plain arrays of traced ones."""
    return function(*[_plain_deep(a) for a in args],
                    **{k: _plain_deep(v) for k, v in kwargs.items()})


def _plain_deep(x):
    if isinstance(x, TracedArray):
        return x.view(np.ndarray)
    if isinstance(x, tuple):
        return tuple(_plain_deep(a) for a in x)
    if isinstance(x, list):
        return [_plain_deep(a) for a in x]
    return x


def _address(a) -> int:
    """The address of an array's first element: a host array's, or a device array's."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return _lazy.module("kernels.cuda.layout").address(a)


def _is_device_array(x) -> bool:
    """Whether ``x`` is a device array (numba-cuda's, or the simulator's): CUDA data."""
    return not isinstance(x, np.ndarray) and hasattr(x, "copy_to_host") and hasattr(x, "shape")


def _module_of(device: str):
    if device == "cpu":
        return cpu_kernels
    return cuda.kernels()


def _inside(a, base) -> bool:
    """Whether ``a``'s first element lies in ``base``'s memory: a view-making kernel's result
    views its argument only then (the layouts of views are offsets into their root's memory,
    so a copy taken for a view would read from an unrelated address)."""
    if not a.size or not base.size:
        return False
    start = _address(base)
    return start <= _address(a) < start + base.nbytes


def _owner(array: np.ndarray):
    """The Tensor holding ``array``, if one does (found by the garbage collector's referrers,
    only for arrays the trace does not know: a tensor read from outside that the discovery
    missed; its replay cannot reach it, so the key runs eagerly)."""
    for r in gc.get_referrers(array):
        if isinstance(r, Tensor) and r._data is array:
            return r
    return None


def _recorded(trace: Trace, name: str, function):
    """``function`` (a kernel), recorded into ``trace`` as ``name`` when called from the trace's
    thread while it records; else called as it is (another thread, or after a break)."""

    def recorded(*args, **kwargs):
        if threading.get_ident() == trace.thread and trace.active and name not in STRUCTURAL:
            if name in READS:  # (a read: recorded, and run at once on the re-run path)
                trace.read(READS[name])
            try:
                return trace.call(name, function, args, kwargs)
            except GraphBreak as error:
                if trace.fullgraph:
                    raise
                trace.stop(error)
        return call_plain(function, args, kwargs)

    recorded.__name__ = name
    return recorded


class _RecordedModule:
    """Records the calls of a kernel submodule (``K.loss``), by its kernels' ``wrap``."""

    def __init__(self, trace: Trace, module, prefix: str, wrap):
        self._trace, self._module, self._prefix, self._wrap = trace, module, prefix, wrap

    def __getattr__(self, name):
        return self._wrap(self._trace, f"{self._prefix}.{name}", getattr(self._module, name))


# (the kernel modules' names)
_PARTS = frozenset({"loss", "conv", "pooling", "structure", "rnn", "optim"})


class TracingKernels:
    """A device's kernel module (``kernels.cpu`` or ``kernels.cuda``) with every call recorded
    into ``trace`` (calls from other threads pass through unrecorded). ``_wrap`` makes the
    recording function of a kernel (the re-run path's ``LazyKernels`` has its own)."""

    _wrap = staticmethod(_recorded)

    def __init__(self, trace, module):
        self._trace = trace
        self._module = module
        self.DEVICE = trace.device

    def __getattr__(self, name):
        real = getattr(self._module, name)
        if name in _PARTS:  # (a kernel module of the device's: ``K.loss.cross_entropy`` ...)
            made = self.__dict__[name] = _RecordedModule(self._trace, real, name, self._wrap)
            return made
        if not callable(real) or name.isupper():
            return real
        return self._wrap(self._trace, name, real)

    def to_device(self, a, device: str):
        if device != self._trace.device:
            graph_break("a copy to another device", self._trace)
            return self._module.to_device(_plain_deep(a), device)
        return (self.upload(a) if device == "cpu" else self.copy(a)), self


def device_of(found: dict) -> str | None:
    """The device of every tensor ``found`` (their data and gradients): "cpu", "cuda", or None
    where they are on both."""
    tensors = [t for k, t in found["tensors"].items() if k not in found["generators"]]
    devices = {"cuda" if on_device(t) else "cpu" for t in tensors}
    if len(devices) > 1 or any(on_device(t) and isinstance(t._data, np.ndarray)
                               for t in tensors):
        return None
    # (the generators' states are CPU tensors on both: a CUDA step's draws are CUDA kernels
    # that read and advance them, ``kernels/cuda/philox.py``)
    return devices.pop() if devices else "cpu"


def on_device(t) -> bool:
    """Whether tensor ``t``'s data (or its gradient's) lives on a CUDA device."""
    g = t._grad
    return not isinstance(t._data, np.ndarray) or (
        g is not None and not isinstance(g._data, np.ndarray))


# ---------------------------------------------------------------------- discovery
def discover(fn, args: tuple, kwargs: dict) -> dict:
    """What the function can read from outside: {"tensors": [...], "modules": [...],
    "optimizers": [...], "scalars": [(where, value)], "paths": [(expression, object)]}, from its
    arguments, closure, the globals its code names (and its ``__self__``), through containers,
    modules and optimizers. ``paths`` says where each tensor, module and optimizer reached
    through a global or a closure variable was found, as an expression the guard evaluates
    (``FG[0].get('x', _MISSING)``, ``FC[0][1].cell_contents[1]``): a global rebound to another
    batch, a list item replaced, must not replay the old one. Every path to it is kept, not only
    the first. ``anchored``: the ids of the tensors found otherwise too (arguments, modules'
    and optimizers' tensors), which a path must still reach; the others are read through their
    first path, whatever tensor is there at the call (a new batch each step, as an argument)."""
    found = {"tensors": {}, "modules": {}, "optimizers": {}, "scalars": [], "paths": [],
             "anchored": set(), "roots": [], "generators": set()}
    seen: set[int] = set()

    def walk(obj, depth: int, where: str, path=None):
        if depth > 5:
            return
        if path is None and isinstance(obj, Tensor):  # (an argument, a module's, an optimizer's)
            found["anchored"].add(id(obj))
        leaf = isinstance(obj, (Tensor, Module, Optimizer))
        if path is not None and (leaf or id(obj) in seen and isinstance(obj, (list, tuple, dict))):
            found["paths"].append((path, obj))  # (a container reached again: itself, by identity)
        if id(obj) in seen:
            return
        if isinstance(obj, Tensor):
            seen.add(id(obj))
            found["tensors"][id(obj)] = obj
        elif isinstance(obj, Module):
            seen.add(id(obj))
            for sub in obj.modules():  # (each submodule's flags and settings are guarded)
                found["modules"][id(sub)] = sub
            for t in obj.parameters():  # (which ones it holds: guarded as its members)
                walk(t, depth + 1, where)
            for t in obj.buffers():
                walk(t, depth + 1, where)
        elif isinstance(obj, Optimizer):
            seen.add(id(obj))
            found["optimizers"][id(obj)] = obj
            for group in obj.param_groups:
                for p in group["params"]:
                    walk(p, depth + 1, where)
            for state in obj.state.values():  # (which ones it holds: guarded with its state)
                for value in state.values():
                    walk(value, depth + 1, where)
        elif isinstance(getattr(obj, "_philox", None), Tensor):  # (a numgrad.Generator)
            seen.add(id(obj))
            walk(obj._philox, depth + 1, where)
            found["generators"].add(id(obj._philox))
            if path is not None:
                found["paths"].append((path, obj))
        elif isinstance(obj, (list, tuple)):
            seen.add(id(obj))
            for i, item in enumerate(obj):
                walk(item, depth + 1, f"{where}[{i}]", None if path is None else f"{path}[{i}]")
        elif isinstance(obj, dict):
            seen.add(id(obj))
            for key, item in list(obj.items()):
                literal = type(key) in (str, int, bool) and path is not None
                walk(item, depth + 1, f"{where}[{key!r}]",
                     f"{path}.get({key!r}, _MISSING)" if literal else None)
        elif isinstance(obj, types.MethodType):
            walk(obj.__self__, depth + 1, where, None if path is None else f"{path}.__self__")
        elif path is not None and not isinstance(obj, (bool, int, float, str, complex,
                                                       type(None), np.ndarray)):
            # a function, a class, any other object the code reads (a global ``loss_fn``
            # rebound to another function must not replay the first): the very same one
            found["paths"].append((path, obj))

    def scalars(obj, where: str):
        # every Python value it reads from outside, through containers and objects (a dict's
        # item, a helper object's attribute), compared at each call as a snapshot; tensors,
        # modules, optimizers and functions are guarded by identity (``paths``) instead
        found["roots"].append(obj)
        if isinstance(obj, (Tensor, Module, Optimizer, types.FunctionType, type,
                            types.ModuleType)):
            return
        try:
            found["scalars"].append((where, soundness.freeze(obj)))
        except soundness.Unguardable as why:
            found.setdefault("unguardable", str(why))

    functions: list = []  # the functions whose globals and closure variables are read

    def scan(func, depth: int) -> None:
        """The globals and closure variables ``func``'s code reads (and what they hold), and
        then those of the user functions among them (a helper reading a global ``SCALE``): each
        found at ``FG[k]`` / ``FC[k]``, ``func`` being ``functions[k]``."""
        code = getattr(func, "__code__", None)
        if code is None or depth > 3 or any(f is func for f in functions):
            return
        k = len(functions)
        functions.append(func)
        cells = dict(zip(code.co_freevars, func.__closure__ or ()))
        if getattr(func, "__defaults__", None) or getattr(func, "__kwdefaults__", None):
            scalars((func.__defaults__, func.__kwdefaults__), f"defaults {k} -")
        for i, name in enumerate(code.co_freevars):
            try:
                value = cells[name].cell_contents
            except ValueError:
                continue
            walk(value, 1, name, f"FC[{k}][{i}].cell_contents")
            scalars(value, f"closure {k} {name}")
            if _user_function(value):
                scan(value, depth + 1)
            elif _user_class(value if isinstance(value, type) else type(value)):
                for attr in _methods(value):
                    scan(attr, depth + 1)
        for name in sorted(_global_names(code)):
            if name in func.__globals__:
                value = func.__globals__[name]
                if not isinstance(value, types.ModuleType):
                    walk(value, 1, name, f"FG[{k}].get({name!r}, _MISSING)")
                    scalars(value, f"global {k} {name}")
                    if _user_function(value):
                        scan(value, depth + 1)
                    elif _user_class(value if isinstance(value, type) else type(value)):
                        for attr in _methods(value):  # (a class, or an object of one)
                            scan(attr, depth + 1)
        # ``cfg.scale``, ``config.LR``: a number read from an object's attribute, a global's
        # or a closure variable's, is a Python value of the trace too
        for kind, name, attrs in sorted(_attribute_reads(code, top=True)):
            try:
                value = (cells[name].cell_contents if kind == "closure"
                         else func.__globals__[name])
                for attr in attrs:
                    value = getattr(value, attr)
            except Exception:  # (a missing name or attribute, a property that raises)
                continue
            if not isinstance(value, (Tensor, Module, Optimizer)):
                scalars(value, f"{kind} {k} {name}.{'.'.join(attrs)}")

    # (the default generator's Philox state: a draw reads and advances it through a kernel)
    walk(_random.default_generator._philox, 1, "the random generator")
    found["generators"].add(id(_random.default_generator._philox))
    walk(list(args), 0, "args")  # (the arguments: guarded as arguments)
    walk(dict(kwargs), 0, "kwargs")
    target = getattr(fn, "__func__", fn)
    if isinstance(fn, types.MethodType):
        walk(fn.__self__, 1, "self")
    scan(target, 0)
    for value in list(args) + list(kwargs.values()):  # (a loss function passed in)
        if _user_function(value):
            scan(value, 1)
    for module in list(found["modules"].values()):  # (a user's forward reading a global)
        for attr in _methods(module):
            scan(attr, 1)
    found["functions"] = functions
    return found


def _library_folders() -> tuple:
    paths = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}  # (numgrad's own)
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            paths.add(sysconfig.get_path(key))
        except KeyError:
            pass
    paths.add(sys.base_prefix)
    return tuple(os.path.abspath(p) + os.sep for p in paths if p)


_LIBRARIES = None


def _user_code(filename: str) -> bool:
    """Whether code from ``filename`` is the user's (a script, a notebook cell, a package being
    developed), not numgrad's, the standard library's or an installed package's."""
    global _LIBRARIES
    if _LIBRARIES is None:
        _LIBRARIES = _library_folders()
    if filename.startswith("<") and not filename.startswith(("<ipython-input", "<stdin>",
                                                             "<string>")):
        return False  # (<frozen ...>, generated code)
    path = os.path.abspath(filename)
    return not path.startswith(_LIBRARIES) and "site-packages" not in path


def _user_function(value) -> bool:
    return isinstance(value, types.FunctionType) and _user_code(value.__code__.co_filename)


def _methods(value) -> list:
    """The user functions of ``value``'s class (``value`` itself where it is a class): its
    methods, static and class methods and properties, whose code it may run."""
    cls = value if isinstance(value, type) else type(value)
    out = []
    for klass in cls.__mro__:
        if not _user_class(klass):
            continue
        for attr in vars(klass).values():
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            elif isinstance(attr, property):
                out.extend(f for f in (attr.fget, attr.fset) if _user_function(f))
                continue
            if _user_function(attr):
                out.append(attr)
    return out


def _user_class(cls) -> bool:
    module = __import__("sys").modules.get(getattr(cls, "__module__", ""), None)
    filename = getattr(module, "__file__", None)
    if filename is None:  # (a notebook's or a script's __main__ without a file)
        return getattr(cls, "__module__", "") == "__main__"
    return _user_code(filename)


def argument_attribute_reads(fn) -> set:
    """(position, attributes) for each chain ``arg.a.b`` that ``fn``'s own code reads from a
    positional argument (``cfg.scale`` with ``cfg`` an argument)."""
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return set()
    shift = 1 if isinstance(fn, types.MethodType) else 0
    params = code.co_varnames[shift:code.co_argcount]
    reads, chain = set(), None
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_ATTR" and chain is not None:
            chain[1].append(ins.argval)
            reads.add((chain[0], tuple(chain[1])))
            continue
        chain = None
        if ins.opname == "LOAD_FAST" and ins.argval in params:
            chain = (params.index(ins.argval), [])
    return reads


def _attribute_reads(code, top: bool) -> set:
    """(kind, name, attributes) for each chain ``name.a.b`` that ``code`` reads from a global or
    (``top``: in the function's own code) a closure variable (its nested code too)."""
    reads = set()
    chain = None
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_ATTR" and chain is not None:
            chain[2].append(ins.argval)
            reads.add((chain[0], chain[1], tuple(chain[2])))
            continue
        chain = None
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            chain = ("global", ins.argval, [])
        elif ins.opname == "LOAD_DEREF" and top and ins.argval in code.co_freevars:
            chain = ("closure", ins.argval, [])
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            reads |= _attribute_reads(const, False)
    return reads


def _global_names(code) -> set:
    """The global names ``code`` reads (its nested code too: comprehensions, inner functions).
    Not ``co_names``, which also holds attribute names: a global ``step`` beside ``opt.step()``
    is no input of the function."""
    names = {ins.argval for ins in dis.get_instructions(code)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def begin(found: dict, device: str = "cpu"):
    """Starts a trace in this thread, of a call that may read the tensors ``found`` (all on
    ``device``): their data (and gradients) become traced views, or on CUDA inputs known by
    identity. Returns (trace, {id: the tensor's state now})."""
    trace = Trace(device)
    trace.structure = structure_of(found)
    before = {}
    for t in found["tensors"].values():
        before[id(t)] = snapshot(t)
        if id(t) in found["generators"]:
            trace.generator_arrays.add(id(plain(t._data)))
        _wrap_tensor(trace, t)
    trace.__enter__()  # (the ops of this thread get its recording kernels)
    return trace, before


def stable(trace: Trace, found: dict, floats: bool = True) -> bool:
    """Whether the call left the structure it ran on as it found it: no optimizer state made or
    dropped, no hyperparameter changed, no module switched between training and evaluation. (A
    first optimizer step makes its state: that trace is not kept, and the next call traces the
    steady step.) ``floats=False``: a float setting that changed (a learning rate a scheduler
    stepped inside the call) counts as the same."""
    now = structure_of(found)
    return now == trace.structure or (not floats and _floats_as_types(now) ==
                                      _floats_as_types(trace.structure))


def _floats_as_types(value):
    """``value`` (a structure: tuples of settings, a few levels deep) with each float replaced
    by its type."""
    if type(value) is tuple:
        return tuple(_floats_as_types(x) for x in value)
    return float if type(value) is float else value


def structure_of(found: dict) -> tuple:
    """What the trace's Python control flow may have depended on beside tensors: each
    optimizer's hyperparameters and which state each of its parameters has, and each module's
    (each submodule's) settings: its training flag and the other plain values in its
    ``__dict__`` (BatchNorm's ``momentum`` and ``eps``, a ReLU's ``inplace``, ...), which its
    forward reads as Python values."""
    parts = []
    for opt in found["optimizers"].values():
        for group in opt.param_groups:
            parts.append(tuple(sorted((k, _freeze(v)) for k, v in group.items()
                                      if k != "params")))
            parts.append(tuple(id(p) for p in group["params"]))
            parts.append(tuple(tuple(sorted(opt.state[p])) if p in opt.state else ()
                               for p in group["params"]))
    for module in found["modules"].values():
        parts.append(module_settings(module))
        parts.append(module_members(module))
    return tuple(parts)


MEMBERS = ("_parameters", "_buffers", "_modules")


def module_members(module) -> tuple:
    """Which parameters, buffers and submodules a module holds: (names, ids) of each kind (a
    parameter replaced, a submodule swapped or appended changes it)."""
    d = vars(module)
    return tuple((tuple(d[kind]), tuple(map(id, d[kind].values()))) for kind in MEMBERS)


SETTINGS = (bool, int, float, str, type(None))


def module_settings(module) -> tuple:
    """A module's settings: ((name, value), ...) for the plain values (numbers, strings, None,
    tuples of them) in its ``__dict__``, in its order."""
    return tuple((k, v) for k, v in vars(module).items() if type(v) in SETTINGS or (
        type(v) is tuple and all(type(x) in SETTINGS for x in v)))


def _freeze(value):
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def discover_state(found: dict) -> list:
    """The tensors in the optimizers' state now (a first step makes them)."""
    return [v for opt in found["optimizers"].values() for state in opt.state.values()
            for v in state.values() if isinstance(v, Tensor)]


def snapshot(t) -> tuple:
    """(data, grad tensor, grad's data, version, grad's version) of a tensor."""
    g = t._grad
    return (plain(t._data), g, None if g is None else plain(g._data), t._version_counter.value,
            None if g is None else g._version_counter.value)


def _wrap_tensor(trace: Trace, t) -> None:
    ref = weakref.ref(t)
    if trace.device == "cuda":
        for field, data in (("data", t._data), ("grad", None if t._grad is None else
                                                t._grad._data)):
            if data is not None:
                trace.external[id(data)] = (ref, field)
                trace.device_input(data, (ref, field))
        return
    if isinstance(t._data, np.ndarray) and t._data.size:
        data = plain(t._data)
        trace.external[id(data)] = (ref, "data")
        t._data = trace.input(data, (ref, "data"))
    elif isinstance(t._data, np.ndarray):
        trace.empty_external[id(t._data)] = (ref, "data")
    g = t._grad
    if g is not None and isinstance(g._data, np.ndarray) and g._data.size:
        data = plain(g._data)
        trace.external[id(data)] = (ref, "grad")
        g._data = trace.input(data, (ref, "grad"))


def end(trace: Trace) -> None:
    trace.active = False
    trace.__exit__()


def untrace(t, start=None) -> None:
    """Makes a tensor's data and gradient plain arrays again after a trace: the very arrays it
    had before (``start``, its ``snapshot``) where they are still the ones it holds."""
    data = t._data
    if isinstance(data, TracedArray):
        t._data = _original(data, start[0] if start else None)
    g = t._grad
    if g is not None and isinstance(g._data, TracedArray):
        g._data = _original(g._data, start[2] if start and g is start[1] else None)


def _original(traced: TracedArray, original):
    plain_view = traced.view(np.ndarray)
    if original is not None and plain_view.shape == original.shape and \
            plain_view.strides == original.strides and _address(plain_view) == _address(original):
        return original
    return plain_view

