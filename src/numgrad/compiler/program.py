"""A finished trace as a program: a guard that says whether a call may replay it, and the replay.

Both are generated Python source. The guard compares what the trace depended on with the call's:
each argument's type, shape, dtype, strides, requires_grad and gradient; grad mode; each tensor
read from outside (by identity, with the same checks); the optimizers' hyperparameters and the
structure of their state; the modules' training flags; the Python values of the closure and the
globals the function names. The replay reads the inputs (the arguments' data, the outside
tensors' data and gradients), runs the program ``lower.py`` made of the recorded kernel calls
(fused Numba functions, and the kernels kept as calls between them), then leaves every effect
eager would have left: ``.grad`` set, replaced or cleared, data replaced, version counters
advanced, and the return value rebuilt (a tensor whose graph the function ran backward through
gets a node in the same freed state). The sources stay in the functions' globals
(``replay.__globals__["__replay_source__"]``) for whoever wants to read what runs.
"""
from __future__ import annotations

import weakref
import importlib

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numba.core.errors import NumbaError

from .. import _dtype
from ..autograd import grad_mode
from ..kernels import cpu as cpu_kernels
from ..tensor import Tensor
from . import ir, lower
from . import aot as _aot
from .aot import _freed_graph
from .soundness import owners, snapshot
from .traced import TracedArray, plain
from .ir import RANDOM, WRITES
from .tracer import (
    MEMBERS,
    _freeze,
    argument_attribute_reads,
    module_members,
    module_settings,
    structure_of,
)
from .whole import Unsupported, WholeProgram
from ..kernels import codegen
from ..kernels.cpu._cache import light_cache
from ..kernels.cpu import _workers
from ..autograd.node import OpNode
from ..autograd.node import make as make_node


class NotReplayable(Exception):
    """The trace holds an effect a replay cannot reproduce (said in the message)."""


def _view(root, offset, shape, strides, writeable):
    """A view of ``root``'s memory ``offset`` bytes from its first element."""
    item = root.itemsize
    start = as_strided(root, (offset // item + 1,), (item,))[offset // item:]
    return as_strided(start, shape, strides, writeable=writeable)


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.names: dict[str, object] = {}

    def const(self, value, prefix="c") -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + text)


def _tensor_check(e: _Emitter, expr: str, t: Tensor, indent: int = 1) -> None:
    """Lines returning False unless ``expr`` is a tensor laid out as ``t`` is now (a missing
    tensor, None, fails the type test). A dtype is tested by identity first (NumPy's built-in
    dtypes are single objects), by equality only where that fails."""
    d = t._data
    e.line(f"t = {expr}", indent)
    e.line(f"if type(t) is not {e.const(type(t), 'T')}: return False", indent)
    e.line("d = t._data", indent)
    dt = e.const(d.dtype, "dt")
    array = "ndarray" if type(d) is np.ndarray else e.const(type(d), "A")  # (a device array)
    e.line(f"if type(d) is not {array} or d.shape != {tuple(d.shape)!r} or d.strides != "
           f"{tuple(d.strides)!r} or (d.dtype is not {dt} and d.dtype != {dt}): return False",
           indent)
    # (``grad_fn`` is a property: its field, where the tensor is no view)
    leaf = "(t._grad_fn is not None or t._base is not None and t.grad_fn is not None)" \
        if t.grad_fn is None else "t.grad_fn is None"
    g = t._grad
    # (a hook registered since: its Python must run; one removed since: no more eager runs)
    e.line("if not t._hooks: return False" if t._hooks else "if t._hooks: return False", indent)
    e.line(f"if t._requires_grad is not {bool(t._requires_grad)} or {leaf}"
           + (" or t._grad is not None: return False" if g is None else ": return False"),
           indent)
    if g is not None:
        gd = g._data
        gt = e.const(gd.dtype, "dt")
        e.line("g = t._grad", indent)
        garray = "ndarray" if type(gd) is np.ndarray else e.const(type(gd), "A")
        e.line(f"if g is None or type(g._data) is not {garray}: return False", indent)
        e.line("d = g._data", indent)
        e.line(f"if d.shape != {tuple(gd.shape)!r} or d.strides != {tuple(gd.strides)!r} or "
               f"(d.dtype is not {gt} and d.dtype != {gt}): return False", indent)


def _guard_state(g: _Emitter, found, refs: dict) -> None:
    """Lines returning False unless the optimizers and modules are as ``structure_of(found)``
    sees them now: the same checks, inline (a call of ``structure_of`` costs microseconds)."""
    if not (found["optimizers"] or found["modules"]):
        return
    simple = True
    for opt in found["optimizers"].values():
        for group in opt.param_groups:
            simple &= all(_plain(v) for k, v in group.items() if k != "params")
    if not simple:  # (a tensor hyperparameter, ...): the structure itself, compared
        g.line(f"if structure() != {g.const(structure_of(found), 'S')}: return False")
        return
    for opt in found["optimizers"].values():
        g.line(f"o = {g.const(weakref.ref(opt), 'O')}()")
        g.line(f"if o is None or len(o.param_groups) != {len(opt.param_groups)}: return False")
        g.line("st = o.state")
        for i, group in enumerate(opt.param_groups):
            keys = [k for k in group if k != "params"]
            values = tuple(_freeze(group[k]) for k in keys)
            reads = ", ".join(f"_frozen(d.get({k!r}, _MISSING))" if isinstance(group[k], list)
                              else f"d.get({k!r}, _MISSING)" for k in keys)
            g.line(f"d = o.param_groups[{i}]")
            g.line(f"if len(d) != {len(group)} or ({reads},) != {g.const(values, 'H')}: "
                   "return False")
            params = group["params"]
            g.line("P = d.get('params', ())")
            g.line(f"if type(P) is not list or tuple(map(id, P)) != "
                   f"{g.const(tuple(id(p) for p in params), 'I')}: return False")
            stateless = []
            for k, p in enumerate(params):
                state = opt.state[p] if p in opt.state else {}
                if state:
                    g.line(f"s = st.get(P[{k}])")
                    g.line(f"if s is None or s.keys() != {g.const(set(state), 'K')}: "
                           "return False")
                    for key, value in state.items():  # (a buffer replaced: load_state_dict)
                        if id(value) in refs:
                            g.line(f"if s[{key!r}] is not {refs[id(value)]}: return False")
                else:
                    stateless.append(k)
            if stateless:  # (none of these has state yet)
                picked = "P" if len(stateless) == len(params) else \
                    f"[P[k] for k in {tuple(stateless)!r}]"
                g.line(f"if st and any(st.get(p) for p in {picked}): return False")
    for module in found["modules"].values():
        settings = module_settings(module)
        reads = "".join(f"d.get({k!r}, _MISSING), " for k, _ in settings)
        g.line(f"m = {g.const(weakref.ref(module), 'M')}()")
        g.line("if m is None: return False")
        g.line("d = m.__dict__")  # (no attribute added or removed, the plain ones unchanged)
        hooked = any(vars(module).get(k) for k in _MODULE_HOOKS)
        any_hook = " or ".join(f"d.get({k!r})" for k in _MODULE_HOOKS)
        g.line(f"if {'not ' if hooked else ''}({any_hook}): return False")  # (run eagerly)
        g.line(f"if len(d) != {len(vars(module))} or ({reads}) != "
               f"{g.const(tuple(v for _, v in settings), 'W')}: return False")
        empty = []
        for kind, (names, ids) in zip(MEMBERS, module_members(module)):
            if not names:
                empty.append(f"d[{kind!r}]")
                continue
            g.line(f"D = d[{kind!r}]")
            g.line(f"if tuple(map(id, D.values())) != {g.const(ids, 'I')} or tuple(D) != "
                   f"{g.const(names, 'N')}: return False")
        if empty:
            g.line(f"if {' or '.join(empty)}: return False")


def _plain(value) -> bool:
    """Whether a hyperparameter compares as a plain value (no tensor in it)."""
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    return value is None or type(value) in (bool, int, float, str)


def guard_for(fn, found, args: tuple, kwargs: dict):
    """The guard of a call about to be traced, from the state everything has now (before the
    call): (guard function, {id(tensor): the expression that reaches it at replay}, the
    namespace the replay shares)."""
    g = _Emitter()
    refs: dict[int, str] = {}
    g.line(f"if grad_mode.state.enabled is not {bool(grad_mode.state.enabled)}: return False")
    # (the dtype of the floating-point tensors it makes without one: set_default_dtype)
    g.line(f"if _defaults[_FLOAT] is not {g.const(_dtype._DEFAULT_FOR_CATEGORY[_dtype.FLOAT], 'dt')}: "
           "return False")
    g.line(f"if len(args) != {len(args)} or len(kwargs) != {len(kwargs)}: return False")
    for key in kwargs:
        g.line(f"if {key!r} not in kwargs: return False")
    for i, value in enumerate(args):
        _guard_structure(g, f"args[{i}]", value, refs)
    for key, value in kwargs.items():
        _guard_structure(g, f"kwargs[{key!r}]", value, refs)
    for i, attrs in sorted(argument_attribute_reads(fn)):  # (an argument's ``cfg.scale``)
        if i < len(args) and not isinstance(args[i], (Tensor, np.ndarray, list, tuple, dict)):
            value = _attributes(args[i], attrs)
            if value is None or type(value) in (bool, int, float, str) or (
                    type(value) is tuple and all(type(v) in (bool, int, float, str) for v in value)):
                g.line(f"if _attributes(args[{i}], {attrs!r}) != {g.const(value, 's')}: "
                       "return False")
    first = {}
    for path, obj in found["paths"]:
        first.setdefault(id(obj), path)
    for t in found["tensors"].values():
        if id(t) in refs:
            continue
        if id(t) in first and id(t) not in found["anchored"]:
            refs[id(t)] = first[id(t)]  # (read where it is found, as an argument is)
        else:
            refs[id(t)] = f"{g.const(weakref.ref(t), 'R')}()"
        if id(t) not in found["generators"]:  # (a generator's state: int64 (2,), always)
            _tensor_check(g, refs[id(t)], t)
    for path, obj in found["paths"]:  # (where each was found: still there)
        if id(obj) in refs:
            want = refs[id(obj)]
            if want == path:
                continue
        elif _weakrefable(obj):
            want = f"{g.const(weakref.ref(obj), 'O')}()"
        else:
            want = g.const(obj, "O")
        g.line(f"if {path} is not {want}: return False")
    # (which tensors are one, or share memory: as at the trace; ``found["shared"]`` says
    # whether some did then)
    tensors = [t for t in found["tensors"].values() if id(t) not in found["generators"]]
    if len(tensors) > 1:
        pattern = owners(tensors)
        found["shared"] = len(set(pattern)) < len(pattern)
        g.line(f"if _owners({_tuple(refs[id(t)] for t in tensors)}) != "
               f"{g.const(pattern, 'AL')}: return False")
    scalars = found["scalars"]
    for i, (where, value) in enumerate(scalars):
        g.line(f"if scalar_values[{i}]() != {g.const(value, 's')}: return False")
    _guard_state(g, found, refs)
    g.line("return True")
    functions = found.get("functions", [])
    namespace = dict(g.names, K=cpu_kernels, Tensor=Tensor, grad_mode=grad_mode, _view=_view,
                     FG=[f.__globals__ for f in functions],
                     FC=[f.__closure__ or () for f in functions],
                     _defaults=_dtype._DEFAULT_FOR_CATEGORY, _FLOAT=_dtype.FLOAT,
                     get_num_threads=_workers.count,  # (the chunks of a split loop: not
                     # Numba's get_num_threads, which starts its threading layer's threads)
                     np=np, ndarray=np.ndarray, _leaf=_leaf, _freed=_freed,
                     _wrap_outputs=_aot.wrap_outputs,
                     scalar_values=[_scalar_getter(functions, where) for where, _ in scalars],
                     structure=lambda: structure_of(found), _frozen=_freeze,
                     _MISSING=_MISSING, _attributes=_attributes, _owners=owners,
                     _versioned=_versioned, _tuple_of=_tuple_of)
    source = "def guard(args, kwargs):\n" + "\n".join(g.lines) + "\n"
    namespace["__source__"] = source
    exec(compile(source, f"<guard of {getattr(fn, '__qualname__', fn)}>", "exec"), namespace)
    return namespace["guard"], refs, namespace


def replay_for(fn, trace, found, before: dict, refs: dict, namespace: dict, result, aot=None):
    """The replay of a finished trace (NotReplayable where an effect cannot be reproduced). With
    ``aot`` (``aot.AOT``: the function returned tensors whose graph is alive, and the trace goes on
    with their backward), the replay returns them with a ``CompiledFunctionBackward`` node, whose
    backward is the replay of the trace's second part."""
    if found.get("shared") and any(v.kind == "input" and v.written for v in trace.values):
        raise NotReplayable("it writes into a tensor that shares memory with another it reads")
    _check_raises_before_writes(trace.nodes if aot is None else trace.nodes[:aot.split])
    body = _Emitter()
    body.names = namespace
    namespace["K"] = trace.kernels._module  # (the kernels of the trace's device)

    # The end first: what the effects and the return value need.
    needed: set = set()
    epilogue = _Emitter()
    epilogue.names = namespace

    def array_expr(array) -> str:
        text = _array_expr(array, trace)
        needed.add(trace.known(array))
        return text

    for t in found["tensors"].values():
        start = before[id(t)]
        ref = refs[id(t)]
        if not _same_data(t._data, start[0], trace):
            epilogue.line(f"{ref}._data = {array_expr(t._data)}")
        g_after = t._grad
        if g_after is not start[1]:
            if g_after is None:
                epilogue.line(f"{ref}._grad = None")
            elif id(g_after) in refs:
                epilogue.line(f"{ref}._grad = {refs[id(g_after)]}")
            else:
                epilogue.line(f"{ref}._grad = Tensor._wrap({array_expr(g_after._data)})")
        elif g_after is not None and not _same_data(g_after._data, start[2], trace):
            epilogue.line(f"{ref}._grad._data = {array_expr(g_after._data)}")
        delta = t._version_counter.value - start[3]
        if delta:
            epilogue.line(f"{ref}._version_counter.value += {delta}")
        if g_after is not None and g_after is start[1]:
            delta = g_after._version_counter.value - start[4]
            if delta:
                epilogue.line(f"{ref}._grad._version_counter.value += {delta}")
    nodes = trace.nodes
    live = None
    if aot is not None:
        nodes = trace.nodes[:aot.split]
        live = {id(t): k for k, t in enumerate(aot.outs)}
        saved = _backward_for(fn, trace, aot, refs, namespace)
        needed.update(saved)
        outs = [array_expr(t._data) for t in aot.outs]
        for t in aot.outs:
            if ir.root(trace._array_value(t._data)).kind == "input":
                raise NotReplayable("it returns a view of a tensor it reads")
        checked = list(dict.fromkeys(refs[id(_input_tensor(ir.root(v)))] for v in saved
                                     if ir.root(v).kind == "input"))
        epilogue.line(
            f"_outs = _wrap_outputs({body.const(namespace['__backward__'], 'BW')}, "
            f"{body.const(tuple(p.array.strides for p in aot.placeholders), 'L')}, "
            f"{_tuple(refs[id(t)] for t in aot.ins)}, {_tuple(outs)}, "
            f"{_tuple(f'v{v.index}' for v in saved)}, {_tuple(checked)})")
    epilogue.line(f"return {_result_expr(result, trace, epilogue, refs, array_expr, live)}")
    _emit_program(body, trace, nodes, needed, refs, fn)
    body.lines.extend(epilogue.lines)
    source = "def replay(args, kwargs):\n" + "\n".join(body.lines) + "\n"
    namespace["__replay_source__"] = source
    exec(compile(source, f"<replay of {getattr(fn, '__qualname__', fn)}>", "exec"), namespace)
    states = [_input_tensor(ir.root(specs[0][1])) for name, specs, _ in trace.nodes
              if name in RANDOM]
    if states:
        return _restoring(namespace["replay"], list({id(t): t for t in states}.values())), source
    return namespace["replay"], source


# A number a re-run program takes at each call is first emitted as a NaN whose bits number it
# (a quiet NaN of its own dtype), and then found where the emitted program holds it.
_SENTINELS = {np.dtype(np.float64): (0x7FFAB5E000000000, 0xFFFFF, np.uint64),
              np.dtype(np.float32): (0x7FEB0000, 0xFFFF, np.uint32)}
_PLAIN_NANS = {0x7FF8000000000000, 0xFFF8000000000000, 0x7FC00000, 0xFFC00000}


def _sentinel(k: int, like):
    dtype = np.dtype(np.float32 if type(like) is np.float32 else np.float64)
    base, _, bits = _SENTINELS[dtype]
    value = np.array(base | k, bits).view(dtype)[()]
    return float(value) if type(like) is float else value


def _number_slots(names: dict, count: int) -> list:
    """Where the program holds each of ``count`` numbers it takes at each call (the sentinels
    of ``_sentinel``): [(slot, name, index or None)], or None where one is not found as it was
    put, or a NaN of other bits is there (a number converted on the way, which the program
    would compute with as a NaN)."""
    where, found = [], set()
    for name, value in names.items():
        if type(value) in (float, np.float64, np.float32):
            array, index = np.asarray(value).reshape(1), None
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
            array, index = value.reshape(-1), 0
        else:
            continue
        nan = np.flatnonzero(np.isnan(array))
        if not len(nan):
            continue
        if array.dtype not in _SENTINELS:
            return None
        base, mask, bits = _SENTINELS[array.dtype]
        for i, b in zip(nan, array[nan].view(bits)):
            b = int(b)
            if b & ~mask == base:
                where.append((b & mask, name, None if index is None else int(i)))
                found.add(b & mask)
            elif b not in _PLAIN_NANS:
                return None
    return where if len(found) == count else None


def rerun_program(fn, trace, start: int, end: int, live: frozenset, namespace: dict,
                  numbers=()):
    """The re-run path's program (``rerun.py``): the trace's nodes from position ``start`` to
    ``end``, fused, as ``program(ins)`` of the arrays of ``inputs`` (the values those nodes read
    and do not make, but constants no kernel writes, which it holds), returning ``outputs``'
    arrays (the roots of ``live`` that those nodes make; their writes into the inputs happen in
    place).
    ``numbers``: the (position, argument) of the float arguments that change between calls;
    ``slots`` says where to put each one's value in this call before calling the program.
    Returns (program, inputs, outputs, slots), or None where the numbers cannot be set."""
    nodes = list(trace.nodes[start:end])
    numbers = [(position, arg) for position, arg in sorted(numbers, key=repr)
               if start <= position < end]
    for k, (position, arg) in enumerate(numbers):
        name, specs, out = nodes[position - start]
        specs = list(specs)
        if isinstance(arg, int):
            specs[arg] = ("c", _sentinel(k, specs[arg][1]))
        else:
            i = next(i for i, s in enumerate(specs) if s[0] == "kw" and s[1] == arg)
            specs[i] = ("kw", arg, ("c", _sentinel(k, specs[i][2][1])))
        nodes[position - start] = nodes[position - start].replace(tuple(specs))
    made, read, written = set(), set(), set()
    for name, specs, out in nodes:
        made.update(ir.values(out))
        for spec in specs:
            read.update(ir.values(spec))
        if name in WRITES:
            written.update(ir.root(v) for v in ir.values(specs[WRITES[name]]))
    outer = set()
    for v in read:
        for w in (v, ir.root(v)):
            if w not in made and not (w.kind == "const" and not w.written):
                outer.add(w)
    inputs = sorted(outer, key=lambda v: v.index)
    outputs = sorted((v for v in live if v in made and ir.root(v) is v),
                     key=lambda v: v.index)
    # (an earlier value the nodes write into, which the call still references: written in place)
    needed = set(outputs) | {v for v in written if v in outer and v.kind != "input"}
    body = _Emitter()
    body.names = dict(namespace)
    body.names["K"] = trace.kernels._module
    for k, v in enumerate(inputs):
        body.line(f"v{v.index} = ins[{k}]")
    _emit_program(body, trace, nodes, needed, {}, fn, bound=frozenset(inputs),
                  dynamic=bool(numbers))
    body.line(f"return {_tuple(f'v{v.index}' for v in outputs)}")
    source = "def program(ins):\n" + "\n".join(body.lines) + "\n"
    body.names["__rerun_source__"] = source
    exec(compile(source, f"<re-run program of {getattr(fn, '__qualname__', fn)}>", "exec"),
         body.names)
    slots = _number_slots(body.names, len(numbers)) if numbers else []
    if slots is None:
        return None
    slots = [(numbers[k], name, index) for k, name, index in slots]
    return body.names["program"], inputs, outputs, slots, body.names


def _restoring(replay, states: list):
    """``replay``, which puts the random generators' states back where it raises (the call then
    runs eagerly, and must draw what eager draws)."""
    refs = [weakref.ref(t) for t in states]

    def replay_restoring(args, kwargs):
        saved = [r()._data.copy() for r in refs]
        try:
            return replay(args, kwargs)
        except Exception:
            for r, data in zip(refs, saved):
                r()._data[...] = data
            raise

    replay_restoring.__wrapped__ = replay
    return replay_restoring


# Kernels that may raise for some values of their arguments (an index out of range, a class
# target out of range, a singular matrix), whatever the shapes the guard checked. (Parts of
# names: "_put" and ".put", as a bare "put" is in every "input" and "output".)
_RAISING = ("index", "gather", "scatter", "take", "_put", ".put", "loss.", "linalg", "embedding",
            "select", "bincount", "multinomial", "searchsorted", "one_hot", "structure.",
            "pooling.unpool", "cholesky", "solve", "inv", "philox_bernoulli", "philox_normal")


def _check_raises_before_writes(nodes) -> None:
    """A replay that raises must leave what eager leaves at the raise. It does where nothing
    that may raise comes after the first write into a tensor it reads (the replay then has
    changed nothing when it raises, and the call runs eagerly, raising as eager raises)."""
    writing = False
    for name, specs, out in nodes:
        if writing and (name not in WRITES or name in RANDOM) and \
                any(part in name for part in _RAISING):  # (a draw's bad parameters raise)
            raise NotReplayable(f"it may raise ({name}) after it has changed a tensor it reads, "
                                "and a replay could not leave eager's state at the raise")
        if name in WRITES and name not in RANDOM:  # (a replay that raises restores those)
            if any(ir.root(v).kind == "input" for v in ir.values(specs[WRITES[name]])):
                writing = True
            elif writing and any(part in name for part in _RAISING):
                raise NotReplayable(f"it may raise ({name}) after it has changed a tensor it "
                                    "reads, and a replay could not leave eager's state there")


def _tuple(items) -> str:
    items = list(items)
    return f"({', '.join(items)},)" if items else "()"


def _input_tensor(v):
    holder, field = v.source
    tensor = holder() if isinstance(holder, weakref.ref) else holder
    if field != "data" or tensor is None:
        raise NotReplayable("its backward reads a gradient")
    return tensor


def _backward_for(fn, trace, aot, refs: dict, namespace: dict) -> list:
    """Generates the backward replay of the trace's second part (``namespace["__backward__"]``:
    a function of the output gradients and the saved arrays); returns the values of the
    forward it reads, to be saved by the forward replay."""
    nodes = trace.nodes[aot.split:]
    needed = {trace._array_value(g._data) for g in aot.grads if g is not None}
    steps = ir.schedule(nodes, needed, lower.fusible())
    made = set()
    for name, specs, out in nodes:
        made.update(ir.values(out))
        if name in WRITES:
            for v in ir.values(specs[WRITES[name]]):
                if ir.root(v) not in made and ir.root(v).kind != "grad_output":
                    raise NotReplayable("its backward writes into a value of its forward")
    read = [v for v in sorted(needed, key=lambda v: v.index)]
    for kind, step in steps:
        if kind == "segment":
            read.extend(step.inputs)
        else:
            for spec in step[1]:
                read.extend(ir.values(spec))
    placeholders = set(aot.placeholders)
    saved = []
    for v in read:
        if v in made or v in placeholders or v in saved:
            continue
        root = ir.root(v)
        if root in placeholders:
            continue
        if v.kind == "const" and not v.written:
            continue  # (the backward reads the constant itself)
        saved.append(v)
    body = _Emitter()
    body.names = namespace
    for k, p in enumerate(aot.placeholders):
        body.line(f"v{p.index} = grads[{k}]")
    for k, v in enumerate(saved):
        body.line(f"v{v.index} = saved[{k}]")
    _emit_program(body, trace, nodes, needed, refs, fn, bound=placeholders | set(saved),
                  steps=steps)
    results = ["None" if g is None else _array_expr(g._data, trace) for g in aot.grads]
    body.line(f"return {_tuple(results)}")
    source = "def backward(grads, saved):\n" + "\n".join(body.lines) + "\n"
    namespace["__backward_source__"] = source
    scope = {}
    exec(compile(source, f"<backward replay of {getattr(fn, '__qualname__', fn)}>", "exec"),
         namespace, scope)
    namespace["__backward__"] = scope["backward"]
    return saved


def _emit_program(body: _Emitter, trace, nodes, needed: set, refs: dict, fn, bound=frozenset(),
                  steps=None, dynamic: bool = False) -> None:
    """The lines that compute ``needed`` from the trace's ``nodes``: the inputs and constants
    read (but the values ``bound`` already), then the lowered steps (``dynamic``: some numbers
    of the nodes change between calls, so no step is computed ahead and no whole program made,
    and each number stays where ``rerun_program`` can set it)."""

    def expr_of(spec) -> str:
        kind = spec[0]
        if kind == "v":
            return f"v{spec[1].index}"
        if kind == "c":
            value = spec[1]
            if value is None or type(value) in (bool, int, str):
                return repr(value)
            return body.const(value)
        if kind in ("t", "l"):
            inner = ", ".join(expr_of(s) for s in spec[1])
            if kind == "l":
                return f"[{inner}]"
            return f"({inner},)" if inner else "()"
        raise AssertionError(spec)

    if steps is None:
        steps = ir.schedule(nodes, needed, lower.fusible(trace.device))
    steps, folded = ir.fold_constants(steps, needed, bound) if not dynamic else (steps, set())
    # the inputs and constants the kept steps read (a segment reads its inputs' roots through
    # layouts; a call, the values themselves; a value a step makes needs nothing more)
    read, made = set(needed), set()
    for kind, step in steps:
        if kind == "segment":
            read.update(step.inputs)
            for name, specs, out in step.nodes:
                made.update(ir.values(out))
        else:
            for spec in step[1]:
                read.update(ir.values(spec))
            made.update(ir.values(step[2]))
    read_roots = {ir.root(v) for v in read if v not in bound and v not in made}
    flat: dict = {}  # constants passed to segments flat, made once
    for v in folded:  # (values of constants alone, as the trace computed them)
        if v in read:
            body.line(f"v{v.index} = {body.const(v.array, 'F')}")
            if trace.device == "cpu" and ir.root(v) is v and v.array.flags.c_contiguous:
                flat[v] = body.const(v.array.reshape(-1), "F")
    for v in trace.values:
        if v not in read_roots or v in bound:
            continue
        if v.kind == "input":
            holder, field = v.source
            tensor = holder() if isinstance(holder, weakref.ref) else holder
            ref = refs.get(id(tensor))
            if ref is None:
                raise NotReplayable("it reads a tensor found only while it ran")
            body.line(f"v{v.index} = {ref}._data" if field == "data" else
                      f"v{v.index} = {ref}._grad._data")
        elif v.kind == "const":
            name = body.const(v.source)
            if v.written:
                body.line(f"v{v.index} = {name}.copy()")
            elif v not in needed and not any(v in set(ir.values(spec)) for k, st in steps
                                             if k != "segment" for spec in st[1]):
                # read by segments only: handed to them flat, as it is (made once, here)
                flat[v] = body.const(v.source.reshape(-1))
            else:
                body.line(f"v{v.index} = {name}")
    driver = _Emitter()  # (the steps one by one, from Python)
    driver.names = body.names
    fixed = set(folded) | {v for v in trace.values if v.kind == "const" and not v.written}
    size = sum(len(step.nodes) if kind == "segment" else 1 for kind, step in steps)
    whole = WholeProgram(fixed) if whole_programs and not dynamic and len(steps) >= 3 and \
        trace.device == "cpu" and size <= ir.WHOLE_NODES else None
    # A program of fused loops only splits its large loops over Numba's threads (OpenMP's,
    # under the default layer); one that also calls kernels (matrix products, numgrad's own
    # threaded kernels) splits them over numgrad's worker threads (``_emit_segment``):
    # OpenMP's threads spin for milliseconds after each parallel region, and on 2 cores they
    # took the core of BLAS's second thread (a tiny GPT's compiled step: 190 ms against 100).
    # The values are the same either way.
    split = all(kind != "call" for kind, _ in steps)
    for position, (kind, step) in enumerate(steps):
        if kind in ("call", "view"):
            name, specs, out = step
            if name == "view":
                root, offset, shape, strides, writeable = (expr_of(s) for s in specs)
                driver.line(f"{expr_of(out)} = _view({root}, {offset}, {shape}, {strides}, "
                            f"{writeable})")
                whole = None  # (a strided view: the driver's)
                continue
            positional = [expr_of(s) for s in specs if s[0] != "kw"]
            keywords = [f"{s[1]}={expr_of(s[2])}" for s in specs if s[0] == "kw"]
            call = f"K.{name}({', '.join(positional + keywords)})"
            driver.line(call if out == ("c", None) else f"{_target(out)} = {call}")
            if whole is not None:
                try:
                    whole.call(name, specs, out)
                except Unsupported:
                    whole = None
            continue
        parts = _emit_segment(driver, step, position, fn, flat, trace.device, split)
        if whole is not None:
            try:
                whole.segment(*parts)
            except Unsupported:
                whole = None
    if whole is None:
        body.lines.extend(driver.lines)
        return
    _emit_whole(body, driver, whole, needed, fn)


whole_programs = True  # (False: every replay calls its steps one by one, from Python)


def _emit_whole(body: _Emitter, driver: _Emitter, whole, needed: set, fn) -> None:
    """The replay's call of its steps as one Numba function (``whole.py``); where the function
    checks indices first, the steps one by one when a check fails (they raise eager's error)."""
    outs = sorted((v for v in needed if v in whole.made), key=lambda v: v.index)
    text = whole.source(outs, "program")
    module = codegen.load_text(f"whole_{getattr(fn, '__name__', 'fn')}"[:40], text)
    light_cache(module)
    program = body.const(module.program, "PROG")
    body.names.update(whole.constants)
    for key, (module_name, name) in whole.python.items():
        body.names[key] = getattr(importlib.import_module(module_name), name)
    targets = ", ".join(f"v{v.index}" for v in outs)
    call = f"({targets}{',' if outs else ''}) = {program}({', '.join(whole.call_args())})"
    # (where Numba cannot compile the program for these arguments, which it finds at the first
    # call, before anything ran: the steps one by one, from then on)
    on = body.const([True], "WHOLE")
    body.line(f"if {' and '.join([f'{on}[0]'] + whole.prechecks)}:")
    body.line("try:", 2)
    body.line(call, 3)
    body.line("except _NumbaError:", 2)
    body.line(f"{on}[0] = False", 3)
    body.lines.extend("        " + line for line in driver.lines)
    body.line("else:")
    body.lines.extend("    " + line for line in driver.lines)
    body.names["_NumbaError"] = _numba_error()


def _numba_error():
    return NumbaError


def _leaf(data, grad):
    """A leaf made in the function (requires grad), with the gradient backward gave it."""
    t = Tensor._wrap(data, True)
    t._grad = grad
    return t


def _freed(data, node_class):
    """A tensor whose graph the function ran backward through: its node is there, as eager's,
    with its saved values freed (a second backward raises PyTorch's error)."""
    t = Tensor._wrap(data, True)
    t.grad_fn = make_node(node_class, (), (), (), (), None, {}, (), released=True)
    return t


def _target(spec) -> str:
    if spec[0] == "v":
        return f"v{spec[1].index}"
    if spec[0] == "t":
        return "(" + ", ".join(_target(s) for s in spec[1]) + ",)"
    return "_"


def _same_data(after, start, trace) -> bool:
    """Whether a tensor's data at the end is its data at the start (the input view of it)."""
    if after is start:
        return True
    if isinstance(after, TracedArray) and after._trace is trace:
        root = after._root
        return (root.kind == "input" and root.array is plain(start)
                and after.shape == start.shape and after.strides == start.strides)
    return False  # (a device array: the same one, or another)


def _array_expr(array, trace) -> str:
    v = trace.known(array)
    if v is not None:
        return f"v{v.index}"
    raise NotReplayable("a tensor's data set to an array the trace did not compute")


def _result_expr(result, trace, e: _Emitter, refs: dict, array_expr, live=None) -> str:
    """The expression that rebuilds the function's return value at replay (``live``: the
    output index of each tensor returned with a live graph)."""
    if result is None or type(result) in (bool, int, float, str):
        return repr(result)
    if isinstance(result, (bool, int, float, str)):  # (np.float64, an IntEnum's member: itself)
        return e.const(result, "r")
    if isinstance(result, (tuple, list)):
        inner = ", ".join(_result_expr(r, trace, e, refs, array_expr, live) for r in result)
        if type(result) is list:
            return f"[{inner}]"
        items = f"({inner},)" if inner else "()"
        if type(result) is tuple:
            return items
        if isinstance(result, tuple):  # (a ``Size``, ``max``'s (values, indices): their type)
            return f"_tuple_of({e.const(type(result), 'ty')}, {items})"
        raise NotReplayable(f"it returns a {type(result).__name__}")
    if isinstance(result, dict) and type(result) is not dict:
        raise NotReplayable(f"it returns a {type(result).__name__}")
    if isinstance(result, dict):
        return "{" + ", ".join(f"{k!r}: {_result_expr(v, trace, e, refs, array_expr, live)}"
                               for k, v in result.items()) + "}"
    if isinstance(result, Tensor):
        if id(result) in refs:
            return refs[id(result)]
        if live is not None and id(result) in live:
            made = f"_outs[{live[id(result)]}]"
        else:
            made = _new_tensor_expr(result, trace, e, array_expr)
        version = result._version_counter.value
        # (a tensor it made and then changed in place: eager's count of changes)
        return f"_versioned({made}, {version})" if version else made
    raise NotReplayable(f"it returns a {type(result).__name__}")


def _tuple_of(kind, items: tuple):
    """A tuple of the subclass ``kind`` holding ``items``, made as ``tuple`` makes one (its own
    ``__new__`` may take the items one by one: ``max``'s result, ``slogdet``'s)."""
    return tuple.__new__(kind, items)


def _versioned(t, version: int):
    t._version_counter.value = version
    return t


def _new_tensor_expr(result, trace, e: _Emitter, array_expr) -> str:
    """A tensor the function made, rebuilt from its array (and its node or gradient)."""
    data = array_expr(result._data)
    if not result._requires_grad:
        return f"Tensor._wrap({data})"
    node = result.grad_fn
    if node is None:  # a leaf made in the function, with the gradient backward gave it
        grad = result._grad
        grad_expr = "None" if grad is None else \
            f"Tensor._wrap({array_expr(grad._data)})"
        return f"_leaf({data}, {grad_expr})"
    if not isinstance(node, OpNode) or not _freed_graph(node):
        raise NotReplayable("it returns a tensor whose graph is still alive (its backward "
                            "would run outside the compiled function)")
    return f"_freed({data}, {e.const(type(node), 'N')})"


def _scalar_getter(functions: list, where: str):
    """A function reading the Python value ``where`` now: ``"global K name"`` or ``"closure K
    name"`` (a global or closure variable of ``functions[K]``), or an attribute chain from one
    (``"global 0 cfg.scale"``)."""
    kind, k, name = where.split(" ", 2)
    name, *attrs = name.split(".")
    func = functions[int(k)]
    if kind == "defaults":
        return lambda: _scalar((func.__defaults__, func.__kwdefaults__))
    if kind == "closure":
        cell = func.__closure__[func.__code__.co_freevars.index(name)]
        if not attrs:
            return lambda: _scalar(cell.cell_contents)
        return lambda: _scalar(_attributes(cell.cell_contents, attrs))
    namespace = func.__globals__
    if not attrs:
        return lambda: _scalar(namespace.get(name, _MISSING))
    return lambda: _scalar(_attributes(namespace.get(name, _MISSING), attrs))


def _attributes(value, attrs):
    try:
        for attr in attrs:
            value = getattr(value, attr)
    except Exception:  # (gone, or a property that raises: not the value traced)
        return _MISSING
    return value


_MISSING = object()
_MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


_scalar = snapshot  # (the snapshot of a Python value the guard compares)


def _guard_structure(g: _Emitter, expr: str, value, refs: dict):
    """Guard lines for an argument (or a container of them) at ``expr``."""
    if isinstance(value, Tensor):
        refs[id(value)] = expr
        _tensor_check(g, expr, value)
    elif isinstance(value, np.ndarray):
        g.line(f"a = {expr}")
        g.line(f"if type(a) is not np.ndarray or a.shape != {tuple(value.shape)!r} or a.dtype != "
               f"{g.const(value.dtype, 'dt')}: return False")
    elif isinstance(value, (list, tuple)):  # (its type by reference: a ``Size``, a namedtuple)
        g.line(f"if type({expr}) is not {_type_ref(g, value)} or len({expr}) != {len(value)}: "
               "return False")
        for i, item in enumerate(value):
            _guard_structure(g, f"{expr}[{i}]", item, refs)
    elif isinstance(value, dict):
        g.line(f"if type({expr}) is not dict or len({expr}) != {len(value)}: return False")
        for key, item in value.items():
            g.line(f"if {key!r} not in {expr}: return False")
            _guard_structure(g, f"{expr}[{key!r}]", item, refs)
    elif value is None:
        g.line(f"if {expr} is not None: return False")
    elif isinstance(value, (bool, int, float, str)):  # (an IntEnum's member: its own type)
        g.line(f"if type({expr}) is not {_type_ref(g, value)} or {expr} != "
               f"{g.const(value, 's')}: return False")
    else:  # any other object: the very same one
        name = g.const(weakref.ref(value) if _weakrefable(value) else value, "O")
        call = f"{name}()" if _weakrefable(value) else name
        g.line(f"if {expr} is not {call}: return False")


def _type_ref(g: _Emitter, value) -> str:
    """The guard's name for ``type(value)``: a built-in's own name, another type a constant (its
    name alone is not defined in the guard's namespace: ``NoneType``, ``Size``)."""
    kind = type(value)
    return kind.__name__ if kind in (bool, int, float, str, list, tuple) else g.const(kind, "ty")


def _weakrefable(value) -> bool:
    try:
        weakref.ref(value)
        return True
    except TypeError:
        return False



def _emit_segment(body: _Emitter, segment, position: int, fn, flat: dict, device: str,
                  split: bool):
    """The driver's call of a segment's generated function, its results reshaped (its large
    loops on Numba's threads if ``split``, else on numgrad's worker threads)."""
    # (on the CPU large flat loops are split whether or not the program calls kernels; which
    # threads run them is the driver's choice below)
    # (each segment's function is ``segment0`` of its own module: the same code is one module)
    text, function, parallel, constants = lower.segment_source(
        segment, 0, device, split or device == "cpu")
    module = codegen.load_text(f"program_{getattr(fn, '__name__', 'fn')}"[:40], text,
                               "program" if device == "cpu" else device)
    light_cache(module)
    name = body.const(getattr(module, function), "SEG")
    if parallel and device == "cpu":  # (its twin on one thread where the machine is busy)
        serial = body.const(getattr(module, f"{function}_serial"), "SEG")
        body.names["_busy"] = _workers.busy
        if not split:  # (a program that calls kernels: numgrad's worker threads, not Numba's;
            # a whole program calls the twin on one thread, as its loops were before)
            threads = getattr(module, f"{function}_threads", None)
            name = serial if threads is None else body.const(threads, "SEG")
            function = f"{function}_serial"
        name = f"({serial} if _busy() else {name})"
    inputs = [flat[v] if v in flat else f"v{v.index}" if v.array.ndim == 1 else
              f"v{v.index}.reshape(-1)" if device == "cpu" else
              f"v{v.index}.reshape({v.array.size})" for v in segment.inputs]
    consts = [body.const(numbers, "k") for numbers in constants]
    args = inputs + consts + (["get_num_threads()"] if parallel else [])
    outs = [f"o{v.index}" for v in segment.outputs]
    body.line(f"({', '.join(outs)}{',' if outs else ''}) = {name}({', '.join(args)})")
    for v in segment.outputs:
        body.line(f"v{v.index} = o{v.index}" if v.array.ndim == 1 else
                  f"v{v.index} = o{v.index}.reshape({tuple(v.array.shape)!r})")
    return module, function, inputs, segment.outputs, parallel, segment.inputs, consts

