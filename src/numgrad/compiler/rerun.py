"""The re-run path of ``numgrad.compile``: the user's Python runs at every call, its kernel calls
recorded instead of executed and checked against the trace's, and the recorded program runs fused.

A function whose Python does more than compute tensors (an LR scheduler stepped inside the step,
a list appended to, ``requires_grad_``, a value read through a dict a guard cannot follow) cannot
be replayed by the fast path, which skips the Python. On this path the Python runs as in eager, so
its effects and the values it reads are eager's; only the arrays are late. Each kernel call of the
call (``Lazy``, the recording kernels of a running call) is matched against the next call of the
trace: the same kernel, the same constants, and each array argument the same value of the trace
(an input read from the same tensor, a result of an earlier call, a view of one at the same
offset and layout, a constant made from the same numbers). It then hands back an array of the
traced result's layout whose values are not computed yet (a *pending* array: a ``TracedArray``
of this call's). At the end the trace's program, from the first pending call on, runs fused
(``program.rerun_program``, one per set of results still referenced), and the arrays still
referenced get their values.

Nothing is guessed:
- a value read (``.item()``, printing, NumPy on the data) first computes every pending array, by
  the kernels one by one (a *sync*), then reads, and the call goes on recording;
- a kernel that may raise for some values (an index out of range, a target class out of range,
  a singular matrix) is synced and run at once, so it raises where eager raises, after eager's
  effects and before the Python that follows it;
- a call that differs from the trace (another kernel, another constant, an array the trace did
  not have there) syncs and runs the rest of the call eagerly, unrecorded;
- an exception from the Python syncs first, so the state at the raise is eager's.
"""
from __future__ import annotations

import math
import sys
import threading
import weakref
from threading import get_ident

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import ir
from .. import dispatch
from .._dtype import float_number
from .traced import TracedArray
from .ir import READS, STRUCTURAL, VIEWS
from .tracer import TracingKernels, _address, _plain_deep, call_plain
from .program import _RAISING, rerun_program, _view
from ..tensor import Tensor
from ..kernels import cpu as module

_F64, _F32 = np.float64, np.float32
_refs = sys.getrefcount
# The pending arrays of at most this many bytes are kept for the next call when nothing holds
# them at the end of one (``Plan.spare``), so that recording a small kernel call makes no array:
# a re-run call's recording is then cheaper than eager's kernel call it stands for.
SPARE_BYTES = 1 << 16
PROGRAMS = 4  # fused programs kept per function (one per start and set of referenced results)


class Unsupported(Exception):
    """The trace holds something this path cannot record (said in the message)."""


def _raising(name: str) -> bool:
    return name != "view_index" and any(part in name for part in _RAISING)


class Plan:
    """What a trace becomes for the re-run path: its kernel calls in order, what each call's
    result is (a new array of the traced layout, a view made by the kernel itself, or an
    argument given back), and where each input comes from at a call."""

    def __init__(self, fn, trace, refs: dict, namespace: dict):
        if trace.device != "cpu":
            raise Unsupported("a step on CUDA (the re-run path records CPU kernels only)")
        self.fn, self.trace, self.namespace = fn, trace, namespace
        self.views: dict = {}  # value of a NumPy-made view -> (root value, offset, shape, ...)
        self.kernel_views: dict = {}  # value of a kernel's view of its argument -> position
        self.calls: list = []  # (name, positional specs, keyword specs, result, position)
        self.at: dict = {}  # position of a call in the trace -> its index among the calls
        read = set()
        for position, (name, specs, out) in enumerate(trace.nodes):
            for spec in specs:
                read.update(ir.values(spec))
            if name == "view":
                root, offset, shape, strides, writeable = (s[1] for s in specs)
                self.views[out[1]] = (root, offset, shape, strides, writeable)
                continue
            positional = tuple(s for s in specs if s[0] != "kw")
            keywords = tuple((s[1], s[2]) for s in specs if s[0] == "kw")
            self.at[position] = len(self.calls)
            if name in VIEWS and out[0] == "v" and out[1].base is not None:
                self.kernel_views[out[1]] = position
            self.calls.append((name, positional, keywords, self._result(name, specs, out),
                               position, _raising(name) or name in READS))
        # the calls ``Lazy.record`` may take without ``Lazy.call``'s general matching: (name,
        # positional specs, result, number of arguments) of one that cannot raise, takes no
        # keywords and makes a new array; else None
        self.quick = [(name, positional, how, len(positional))
                      if not raising and not keywords and how is not None and how[0] == "new"
                      else None
                      for name, positional, keywords, how, _, raising in self.calls]
        # the same calls as the fast lane hands them (``Lazy.record_scalar``, ``record_pair``,
        # ``record_unary``): (kernel code, the value(s) of the array argument(s), the scalar as
        # a Python float, how the result is made: ``_new``'s ``how``); None elsewhere, and
        # after the last call
        self.scalars, self.pairs, self.unaries = [], [], []
        for q in self.quick:
            scalar = pair = unary = None
            if q is not None and q[1][0][0] == "c" and isinstance(q[1][0][1], int):
                how, specs = q[2], q[1]
                made = (how,)
                kinds = tuple(spec[0] for spec in specs)
                if q[0] == "binary" and kinds == ("c", "v", "c"):
                    c = specs[2][1]  # (a nonzero float: a number equal to it has its bits)
                    if type(c) in (_F64, _F32) and c == c and c != 0:
                        scalar = (specs[0][1], specs[1][1], float(c)) + made
                elif q[0] == "binary" and kinds == ("c", "v", "v"):
                    pair = (specs[0][1], specs[1][1], specs[2][1]) + made
                elif q[0] == "unary" and kinds == ("c", "v"):
                    unary = (specs[0][1], specs[1][1], None) + made
            self.scalars.append(scalar)
            self.pairs.append(pair)
            self.unaries.append(unary)
        for table in (self.scalars, self.pairs, self.unaries):
            table.append(None)
        self.inputs = []  # (value, getter of its tensor, field)
        for v in trace.values:
            if v.kind != "input" or v not in {ir.root(r) for r in read}:
                continue
            holder, field = v.source
            tensor = holder() if isinstance(holder, weakref.ref) else holder
            ref = refs.get(id(tensor))
            if ref is None:
                raise Unsupported("it reads a tensor found only while it ran")
            getter = eval(f"lambda args, kwargs: {ref}", namespace)  # (refs: generated names)
            self.inputs.append((v, getter, field))
        self.programs: dict = {}
        # value index -> a pending array of that value that no one held at the end of a call
        # (small ones: ``SPARE_BYTES``), handed out again by the next call that makes the
        # value (one dict for all threads: each ``pop`` takes an array for one call alone)
        self.spare: dict = {}
        self.lock = threading.Lock()
        # the floats that changed between calls: {call index: {argument index or keyword}}
        self.numbers: dict = {}
        # how its calls ended: "fused" (the program ran), "eager" (a call that left the trace),
        # "stepwise" (the calls one by one: a call that stopped short, or no program left)
        self.counts = {"fused": 0, "eager": 0, "stepwise": 0, "raised": 0, "eager, faster": 0}
        self.misses = 0  # the calls in a row that left its trace

    def _result(self, name: str, specs, out):
        """How a call's result is made while recording: None (no result), ("new", value) a
        pending array of its layout, ("view", value) the kernel's own view of a pending
        argument, or a tuple of those."""
        if out == ("c", None):
            return None
        if out[0] == "t":
            parts = tuple(self._result(name, (), s) for s in out[1])
            if any(p is None or p[0] != "new" for p in parts):
                raise Unsupported(f"a kernel ({name}) that gives back views among its results")
            return ("tuple", parts)
        v = out[1]
        if name in VIEWS and v.base is not None:
            return ("view", v)
        a = v.array
        if any(s < 0 for s in a.strides) or not isinstance(a, np.ndarray):
            raise Unsupported(f"a kernel result with negative strides ({name})")
        for spec in specs:  # (a kernel that gives back an argument's memory)
            for arg in ir.values(spec if spec[0] != "kw" else spec[2]):
                if arg.array.size and a.size and np.may_share_memory(arg.array, a):
                    raise Unsupported(f"a kernel ({name}) whose result shares an argument's "
                                      "memory")
        return ("new", v, _recipe(a))

    def program(self, start: int, end: int, live: frozenset):
        """The fused program of the trace's nodes from position ``start`` to ``end`` that
        computes the values of ``live`` (roots whose arrays are still referenced) and those the
        trace's later nodes read, taking the floats ``numbers`` says change; None once
        ``PROGRAMS`` are made, or where the numbers cannot be taken (the calls then run one by
        one)."""
        numbers = frozenset((self.calls[n][4], arg) for n, args in self.numbers.items()
                            for arg in args)
        key = (start, end, live, numbers)
        made = self.programs.get(key, False)
        if made is False:
            with self.lock:
                if key not in self.programs and len(self.programs) < PROGRAMS:
                    needed = live | self._later(start, end)
                    self.programs[key] = rerun_program(self.fn, self.trace, start, end, needed,
                                                       self.namespace, numbers)
                made = self.programs.get(key)
        return made

    def _later(self, start: int, end: int) -> frozenset:
        """The roots made between ``start`` and ``end`` that the trace's later nodes read."""
        nodes = self.trace.nodes
        made = {v for _, _, out in nodes[start:end] for v in ir.values(out)}
        return frozenset(ir.root(v) for _, specs, _ in nodes[end:] for spec in specs
                         for v in ir.values(spec) if ir.root(v) in made)


class LazyKernels(TracingKernels):
    """The CPU kernel module while a call records: each call matched and made pending (calls
    from other threads, and after a mismatch, run as they are)."""

    _wrap = staticmethod(lambda lazy, name, function: _lazy_call(lazy, name, function))

    def __getattr__(self, name):
        made = super().__getattr__(name)
        self.__dict__[name] = made  # (this call's kernels: made once per name)
        return made


def _spec_at(specs, arg):
    """The constant a trace's node passes as argument ``arg`` (a position or a keyword)."""
    if isinstance(arg, int):
        return [s for s in specs if s[0] != "kw"][arg][1]
    return next(s[2][1] for s in specs if s[0] == "kw" and s[1] == arg)


def _recipe(a: np.ndarray) -> tuple:
    """How a pending array of ``a``'s layout is made: (order or None for strided, shape, dtype,
    the element count of a strided one's memory, strides, whether it is read-only, whether it
    is kept for the next call when no one holds it: ``Plan.spare``)."""
    order = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else None
    span = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) // a.itemsize + 1
    return (order, a.shape, a.dtype, span if a.size else 0, a.strides, not a.flags.writeable,
            order is not None and a.nbytes <= SPARE_BYTES)


def _lazy_call(lazy, name: str, function):
    if name in STRUCTURAL:  # (run as they are: they read no value and make none)
        def call(*args, **kwargs):
            return call_plain(function, args, kwargs)
    else:
        thread = lazy.thread

        def call(*args, **kwargs):
            if lazy.active and get_ident() == thread:
                return lazy.call(name, function, args, kwargs)
            return call_plain(function, args, kwargs)

    call.__name__ = name
    return call


class Lazy(dispatch.Mode):
    """One call on the re-run path, a dispatch mode (``numgrad.dispatch``) while it runs: it
    stands where its trace stood, so numgrad's own code takes the paths it took while tracing,
    and the CPU ops of its thread get its recording kernels."""

    device = "cpu"  # (its LazyKernels' device)
    lane = True  # (the fast lane's ops make the kernel calls the trace's general path made)

    def __init__(self, plan: Plan, module):
        self.plan = plan
        self.thread = threading.get_ident()
        self.active = True
        self.kernels = LazyKernels(self, module)
        self.module = module
        self.created: dict = {}  # arrays made from Python data in this call, by id
        self.env: dict = {}  # value index -> its array in this call
        self.by_id: dict = {}  # id of an array in ``env`` (inputs, pending, constants) -> value
        self.keep: list = []  # arrays whose ids ``by_id`` holds
        self.pending: list = []  # (value, weakref of the pending array handed out)
        self.small: list = []  # the small pending arrays handed out (``Plan.spare``)
        self.spare = plan.spare
        self.quick = plan.quick
        self.scalars, self.pairs, self.unaries = plan.scalars, plan.pairs, plan.unaries
        self.next = 0  # the index of the next call expected
        self.start = 0  # the trace position from which calls are pending
        self.restore: list = []  # (tensor or grad holder, the plain array it had)
        self.outcome = "raised"
        self.fused = False  # (whether a fused program ran)
        self.numbers: dict = {}  # (call index, argument) -> the float this call passes there

    # ---------------------------------------------------------------- the call
    def bind(self, args, kwargs) -> bool:
        """Makes the inputs' tensors hold pending-aware views of their data; False (nothing
        changed) where a tensor is missing or differs from the trace's (its layout, or two
        inputs sharing memory)."""
        spans = []
        for v, getter, field in self.plan.inputs:
            try:
                tensor = getter(args, kwargs)
                holder = tensor if field == "data" else tensor._grad
            except Exception:
                self.unbind()
                return False
            data = holder._data if holder is not None else None
            a = v.array
            if (type(data) is not np.ndarray or data.shape != a.shape or data.dtype != a.dtype
                    or data.strides != a.strides):
                self.unbind()
                return False
            start = _address(data)
            spans.append((start, start + max(data.nbytes, 1)))
            view = data.view(TracedArray)
            view._trace, view._root = self, v
            holder._data = view
            self.restore.append((holder, data, view))
            self.env[v.index] = data
            self.by_id[id(data)] = v
        spans.sort()
        if any(spans[k][1] > spans[k + 1][0] for k in range(len(spans) - 1)):
            self.unbind()
            return False
        return True

    def release(self) -> None:
        """The end of the call: its tables emptied and its kernels dropped, so that what the
        call made is freed as it goes out of use, not left for the garbage collector (whose
        full collections a re-run key's calls otherwise set off every few calls)."""
        self.active = False
        self.kernels = None
        for table in (self.env, self.by_id, self.created, self.numbers):
            table.clear()
        self.keep.clear()
        self.pending.clear()
        self.restore = []
        small, self.small = self.small, []
        if self.outcome != "raised":
            spare = self.spare
            for out in small:  # (held by ``small``, ``out`` and the call: no one else)
                if _refs(out) == 3 and _refs(out.base) == 2:
                    spare[out._root.index] = out

    def unbind(self, result=None) -> None:
        """The inputs' tensors get their plain arrays back (where they still hold the views),
        and so do their gradients and the tensors returned (where they hold pending arrays of
        this call, which are plain arrays in all but name once it ends)."""
        for holder, data, view in self.restore:
            if holder._data is view:
                holder._data = data
            else:
                self._plain(holder)
            self._plain(holder._grad)
        self.restore = []
        _each_tensor(result, self._plain)

    def _plain(self, t) -> None:
        if t is not None:
            data = t._data
            if type(data) is TracedArray and data._trace is self:
                t._data = data.view(np.ndarray)

    def finish(self) -> None:
        """The end of the call: the pending calls run, and the pending arrays still referenced
        get their values."""
        if not self.active:
            return
        self.active = False
        self._run_pending(self._position())
        if self.outcome == "raised":
            self.outcome = "fused" if self.fused else "stepwise"

    def _live(self) -> set:
        """The roots of the pending arrays something still references."""
        live = set()
        for v, ref in self.pending:
            if ref() is not None:
                root = ir.root(v)
                if root.kind == "node":
                    live.add(root)
        for out in self.small:  # (held by ``small``, ``out`` and the call: no one else)
            if _refs(out) > 3:
                root = ir.root(out._root)
                if root.kind == "node":
                    live.add(root)
        return live

    def _position(self) -> int:
        """The trace position just after the last call matched."""
        if self.next == 0:
            return 0
        return self.plan.calls[self.next - 1][4] + 1

    # ---------------------------------------------------------------- syncs
    def read(self, what: str) -> None:
        """A value is about to be read (``traced.value_read``): every pending call runs now."""
        self.stop()

    def graph_break(self, what: str) -> None:
        """Something its trace did not have (a hook, the data leaving as an array): every
        pending call runs now, and the call goes on (a later call unlike the trace's leaves
        it)."""
        self.stop()

    def use(self, module):
        return self.kernels if module is self.module or module is self.kernels else module

    def note_created(self, array) -> None:
        self.created[id(array)] = array

    def stands_for(self, array) -> bool:
        return type(array) is TracedArray and array._trace is self

    def stop(self, error=None) -> None:
        """A value is about to be read (or something the trace did not have happens): every
        pending call runs now; the call goes on recording."""
        if self.active:
            self._run_pending(self._position())

    def _run_pending(self, end: int) -> None:
        """Runs the trace's nodes from ``start`` to ``end``: fused (``Plan.program``) where it
        can, else by the kernels one by one; the pending arrays still referenced, and the
        values the trace's later calls read, get their values."""
        if end <= self.start:
            return
        program = self.plan.program(self.start, end, frozenset(self._live()))
        if program is not None:
            self._run_program(program)
            self.fused = True
        else:
            self._run_stepwise(end)
        self.start = end

    def _run_program(self, program) -> None:
        function, inputs, outputs, slots, names = program
        at = self.plan.at
        for (position, arg), name, index in slots:
            value = self.numbers.get((at[position], arg))
            if value is None:  # (a number this call passed as the trace did)
                value = _spec_at(self.plan.trace.nodes[position][1], arg)
            if index is None:
                names[name] = value
            else:
                names[name][index] = value
        outs = function([self._array(v) for v in inputs])
        for v, out in zip(outputs, outs):
            dest = self._get(v.index)
            if dest is None:  # (an array no one holds: the program's is the value)
                self.env[v.index] = out
            else:
                np.copyto(dest, out, casting="no")
                self.env[v.index] = dest

    def _run_stepwise(self, end: int) -> None:
        nodes = self.plan.trace.nodes
        for position in range(self.start, end):
            name, specs, out = nodes[position]
            if name == "view":
                self._array(out[1])
                continue
            how = self.plan.calls[self.plan.at[position]][3]
            if how is not None and how[0] == "view":  # (made by the kernel when it was called:
                self._array(how[1])                    # again where nothing holds it now)
                continue
            function = self._function(name)
            args = [self._resolve(s) for s in specs if s[0] != "kw"]
            kwargs = {s[1]: self._resolve(s[2]) for s in specs if s[0] == "kw"}
            n = self.plan.at[position]
            for arg in self.plan.numbers.get(n, ()):
                if (n, arg) in self.numbers:
                    if isinstance(arg, int):
                        args[arg] = self.numbers[(n, arg)]
                    else:
                        kwargs[arg] = self.numbers[(n, arg)]
            result = function(*args, **kwargs)
            if how is None:
                continue
            parts = how[1] if how[0] == "tuple" else (how,)
            results = result if how[0] == "tuple" else (result,)
            for part, r in zip(parts, results):
                dest = self._get(part[1].index)
                if dest is None:  # (an array no one holds: the kernel's result is the value)
                    self.env[part[1].index] = r
                else:
                    np.copyto(dest, r, casting="no")
                    self.env[part[1].index] = dest

    def _function(self, name: str):
        module = self.module
        for part in name.split("."):
            module = getattr(module, part)
        return module

    def _resolve(self, spec):
        kind = spec[0]
        if kind == "v":
            return self._array(spec[1])
        if kind == "c":
            return spec[1]
        parts = [self._resolve(s) for s in spec[1]]
        return tuple(parts) if kind == "t" else parts

    def _get(self, index: int):
        """The array of value ``index`` in this call, or None (a pending array no one holds
        any more: ``env`` holds those weakly, so that a call's memory is eager's)."""
        a = self.env.get(index)
        return a() if type(a) is weakref.ReferenceType else a

    def _array(self, v):
        """The array of value ``v`` in this call (a view of the trace made anew from its
        root's, or a constant not seen in this call: the trace's copy)."""
        a = self._get(v.index)
        if a is not None:
            return a
        view = self.plan.views.get(v)
        position = self.plan.kernel_views.get(v)
        if view is not None:
            root, offset, shape, strides, writeable = view
            a = _view(self._array(root), offset, shape, strides, writeable)
        elif position is not None:  # (a kernel's view of an argument: made again, reading nothing)
            name, specs, _ = self.plan.trace.nodes[position]
            a = self._function(name)(*[self._resolve(s) for s in specs if s[0] != "kw"])
        elif v.kind == "const":
            a = v.source if not v.written else v.source.copy()
        else:
            raise AssertionError(f"the re-run path lost {v}")
        self.env[v.index] = a
        return a

    def _mismatch(self) -> None:
        """The call left the trace: what is pending runs, and the rest of the call is eager."""
        self.outcome = "eager"
        self._run_pending(self._position())
        self.active = False

    # ---------------------------------------------------------------- recording
    def record(self, name: str, args: tuple):
        """``K.<name>(*args)`` as the eager fast lane makes it (``dispatch.Mode.record``): what
        the recording kernel's ``call`` does, without the kernel wrapper's frame, for the common
        case (the trace's next call, a new result, positional arguments each the array handed
        out for the trace's value there or the trace's constant itself); anything else goes to
        ``call``. The lane asks from this thread, while this mode is active
        (``dispatch.current``)."""
        n = self.next
        try:
            quick = self.quick[n]
        except IndexError:  # (more calls than the trace's: ``call`` leaves it)
            quick = None
        if quick is not None and quick[0] == name and len(args) == quick[3]:
            for a, s in zip(args, quick[1]):  # (``_match_plain``'s common cases, inline)
                if s[0] == "v":
                    if type(a) is not TracedArray or a._root is not s[1] or \
                            a._trace is not self or not a._whole:
                        break
                elif a is not s[1]:
                    c = s[1]  # (equal nonzero NumPy floats of one type: the same bits)
                    t = type(a)
                    if t is not type(c) or (t is not _F64 and t is not _F32) or a != c or \
                            a == 0:
                        break
            else:
                self.next = n + 1
                how = quick[2]
                v = how[1]
                out = self.spare.pop(v.index, None) if how[2][6] else None
                if out is None:
                    return self._new(how)
                out._trace = self  # (``_new``'s common case, inline: the last call's array)
                self.env[v.index] = out.base
                self.small.append(out)
                return out
        return self.call(name, getattr(self.module, name), args, {})

    def record_scalar(self, code: int, a, other):
        """``record("binary", (code, a, a.dtype.type(other)))``, the fast lane's product of an
        array and a Python number: the trace's next call where the number equals the trace's
        (a nonzero float: then the kernel gets the same bits) and ``a`` is the array handed out
        for the trace's value there."""
        n = self.next
        q = self.scalars[n]
        if q is not None and q[0] == code and other == q[2] and type(a) is TracedArray and \
                a._root is q[1] and a._trace is self and a._whole:
            self.next = n + 1
            return self._new(q[3])
        return self.record("binary", (code, a, a.dtype.type(other) if -65504.0 <= other <= 65504.0
                                      else float_number(a.dtype, other)))

    def record_pair(self, code: int, a, b):
        """``record("binary", (code, a, b))`` (as ``record_scalar``, for two arrays)."""
        n = self.next
        q = self.pairs[n]
        if q is not None and q[0] == code and type(a) is TracedArray and type(b) is TracedArray \
                and a._root is q[1] and b._root is q[2] and a._trace is self and \
                b._trace is self and a._whole and b._whole:
            self.next = n + 1
            return self._new(q[3])
        return self.record("binary", (code, a, b))

    def record_unary(self, code: int, a):
        """``record("unary", (code, a))`` (as ``record_scalar``, for a unary kernel)."""
        n = self.next
        q = self.unaries[n]
        if q is not None and q[0] == code and type(a) is TracedArray and a._root is q[1] and \
                a._trace is self and a._whole:
            self.next = n + 1
            return self._new(q[3])
        return self.record("unary", (code, a))

    def call(self, name: str, function, args: tuple, kwargs: dict):
        plan = self.plan
        n = self.next
        try:
            expected, positional, keywords, how, position, raising = plan.calls[n]
        except IndexError:  # (more calls than the trace's)
            self._mismatch()
            return call_plain(function, args, kwargs)
        if (expected != name or len(args) != len(positional)
                or not (self._match_plain(args, positional) if not keywords and not kwargs and
                        n not in plan.numbers else
                        len(kwargs) == len(keywords) and
                        self._match_all(args, positional, kwargs, keywords))):
            self._mismatch()
            return call_plain(function, args, kwargs)
        self.next = n + 1
        if raising:
            # (it may raise for some values: it runs now, as in eager, its result real)
            self._run_pending(position)
            result = call_plain(function, args, kwargs)
            self.start = position + 1
            return self._real(result, how)
        if how is not None and how[0] == "new":
            return self._new(how)
        return self._pending(how, function, args, kwargs)

    def _real(self, result, how):
        """A result computed now, kept as the value the trace has there (its layout checked:
        a different one leaves the trace)."""
        if how is None:
            return result
        parts = how[1] if how[0] == "tuple" else (how,)
        results = result if how[0] == "tuple" else (result,)
        out = []
        for part, r in zip(parts, results):
            v = part[1]
            a = v.array
            if (not isinstance(r, np.ndarray) or r.shape != a.shape or r.dtype != a.dtype
                    or r.strides != a.strides):
                self.active, self.outcome = False, "eager"
                return result
            r = _plain_deep(r)
            self.env[v.index] = r
            out.append(self._hand(r, v))
        return tuple(out) if how[0] == "tuple" else out[0]

    def _pending(self, how, function, args, kwargs):
        if how is None:
            return None
        kind = how[0]
        if kind == "view":  # (a view of a pending argument: the kernel makes it, reading nothing)
            v = how[1]
            r = call_plain(function, args, kwargs)
            self.env[v.index] = weakref.ref(r)
            return self._hand(r, v)
        if kind == "tuple":
            return tuple(self._new(part) for part in how[1])
        return self._new(how)

    def _new(self, how):
        _, v, recipe = how
        if recipe[6]:  # (a small array: the last call's if no one holds it, held till the end)
            out = self.spare.pop(v.index, None)
            if out is None:
                buffer = np.empty(recipe[1], recipe[2], order=recipe[0])
                out = buffer.view(TracedArray)
                out._root = v
                out._whole = True
                if recipe[5]:
                    out.flags.writeable = False
            else:
                buffer = out.base
            out._trace = self
            self.env[v.index] = buffer
            self.small.append(out)
            return out
        order, shape, dtype, span, strides, readonly, _ = recipe
        if order == "C":
            buffer = np.empty(shape, dtype)
        elif order is not None:
            buffer = np.empty(shape, dtype, order=order)
        else:
            buffer = as_strided(np.empty(span, dtype), shape, strides)
        self.env[v.index] = weakref.ref(buffer)  # (the buffer, which NumPy's plain views of
        out = buffer.view(TracedArray)            # the pending array hold: not only ``out``)
        out._trace = self
        out._root = v
        out._whole = True
        if readonly:
            out.flags.writeable = False
        self.pending.append((v, weakref.ref(out)))
        return out

    def _hand(self, array, v):
        out = array.view(TracedArray)
        out._trace, out._root, out._whole = self, v, True
        if not v.array.flags.writeable:
            out.flags.writeable = False
        self.pending.append((v, weakref.ref(out)))
        return out

    def _match_plain(self, args, positional) -> bool:
        """``_match_all`` of a call with positional arguments only and no changing number."""
        for a, s in zip(args, positional):
            kind = s[0]
            if kind == "c":
                c = s[1]
                if a is c:
                    continue
                t = type(a)  # (equal nonzero NumPy floats of one type: the same bits)
                if t is type(c) and (t is _F64 or t is _F32) and a == c and a != 0:
                    continue
                if not _same_constant(a, c):
                    return self._match_all(args, positional, {}, ())
            elif kind == "v":
                if type(a) is TracedArray and a._whole and a._trace is self and a._root is s[1]:
                    continue  # (the array handed out for that value, as it was handed out)
                if not self._match_array(a, s[1]):
                    return False
            elif not self._match(a, s):
                return False
        return True

    def _match_all(self, args, positional, kwargs, keywords) -> bool:
        """Whether a call's arguments are the trace's call's; a float that differs from the
        trace's (a learning rate a scheduler changed) is a number of the call
        (``Plan.numbers``) where the kernel takes it as a number of the program."""
        if any(k != key for (key, _), k in zip(keywords, kwargs)):
            return False
        varying = self.plan.numbers.get(self.next, ())
        pairs = [(i, a, s) for i, (a, s) in enumerate(zip(args, positional))]
        pairs += [(key, kwargs[key], s) for key, s in keywords]
        for arg, a, s in pairs:
            if arg in varying and _number(a, s):
                self.numbers[(self.next, arg)] = a
            elif not self._match(a, s):
                if not _number(a, s) or not _liftable(self.plan.calls[self.next][0], arg):
                    return False
                self._vary(arg, a)
        return True

    def _vary(self, arg, value) -> None:
        with self.plan.lock:
            numbers = dict(self.plan.numbers)
            numbers[self.next] = numbers.get(self.next, frozenset()) | {arg}
            self.plan.numbers = numbers
        self.numbers[(self.next, arg)] = value

    def _match(self, x, spec) -> bool:
        kind = spec[0]
        if kind == "c":
            return _same_constant(x, spec[1])
        if kind == "v":
            return self._match_array(x, spec[1])
        if kind in ("t", "l"):
            return (type(x) is (tuple if kind == "t" else list) and len(x) == len(spec[1])
                    and all(self._match(a, s) for a, s in zip(x, spec[1])))
        return False

    def _match_array(self, x, v) -> bool:
        """Whether array argument ``x`` is value ``v`` of the trace: that value's array in this
        call, or a NumPy-made view of the same value at the same offset and layout."""
        if not isinstance(x, np.ndarray):
            return False
        if type(x) is TracedArray:
            if x._trace is not self:
                return False
            known = x._root
            a = self._get(known.index)
            if known is v and x.base is a and x.shape == a.shape and x.strides == a.strides:
                return True  # (the array handed out for it, as it is: the common case)
            p = x.view(np.ndarray)
        else:
            p = x
            known = self.by_id.get(id(p))
            base = p.base
            while known is None and base is not None:
                known = self.by_id.get(id(base)) if isinstance(base, np.ndarray) else None
                base = getattr(base, "base", None)
            if known is None:
                return self._match_constant(p, v)
            a = self._get(known.index)
        if p.dtype != a.dtype:
            return False
        offset = _address(p) - _address(a)
        if known is v:
            return offset == 0 and p.shape == a.shape and p.strides == a.strides
        view = self.plan.views.get(v)
        if view is None or view[0] is not known:
            return False
        return not (offset != view[1] or p.shape != view[2] or p.strides != view[3]
                    or bool(p.flags.writeable) != view[4])

    def _match_constant(self, p: np.ndarray, v) -> bool:
        """An array made from Python data in this call, where the trace had a constant: the
        same numbers."""
        if v.kind != "const" or (id(p) not in self.created and p.ndim):
            return False
        s = v.source
        if p.dtype != s.dtype or p.shape != s.shape or p.tobytes() != s.tobytes():
            return False
        self.env[v.index] = p
        self.by_id[id(p)] = v
        self.keep.append(p)
        return True


# The kernels whose float arguments a program takes at each call (the lowering passes their
# floats to the fused loops as arguments, and a call keeps them as names of its namespace): the
# binary ops' operands, the in-place update's ``alpha``, a float64 fill's value, the floats of
# an optimizer's step.
_NUMBERS = {"binary": (1, 2), "binary_into": (3, "alpha"), "full": (1,),
            # (an optimizer's fused step: the group's learning rate and other floats)
            "optim.adam_step": (2, 3, 4, 5, 6), "optim.sgd_step": (2, 3, 4, 5)}


def _liftable(name: str, arg) -> bool:
    return arg in _NUMBERS.get(name, ())


def _number(x, spec) -> bool:
    """Whether ``x`` may stand where the trace has the constant of ``spec``: a float of the
    same type."""
    return (spec[0] == "c" and type(x) is type(spec[1])
            and type(x) in (float, np.float64, np.float32))


def _same_constant(x, c) -> bool:
    """Whether a kernel's Python argument is the trace's: the same type and value, bit for bit
    for floats (0.0 is not -0.0; NaN is NaN)."""
    t = type(x)
    if t is not type(c):
        return False
    if t is float:
        return x == c and math.copysign(1.0, x) == math.copysign(1.0, c) or (x != x and c != c)
    if isinstance(x, np.floating):
        if x == c:  # (equal NumPy floats of one type: the same bits but for the sign of 0)
            return bool(x != 0) or math.copysign(1.0, x) == math.copysign(1.0, c)
        return x.tobytes() == c.tobytes()
    try:
        return bool(x == c)
    except Exception:
        return False


def _each_tensor(value, do) -> None:
    if isinstance(value, Tensor):
        do(value)
        do(value._grad)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _each_tensor(v, do)
    elif isinstance(value, dict):
        for v in value.values():
            _each_tensor(v, do)


STALE = object()  # (``run``'s answer where the call should trace again instead)
MISSES = 2  # calls in a row that leave a plan's trace before the function is traced again


def run(plans: list, args, kwargs, may_trace: bool = False):
    """One call of the function on the re-run path, by the first of ``plans`` whose inputs the
    call has. With ``may_trace``, STALE (nothing run) where no plan takes the call or the one
    that does has left its trace in the last ``MISSES`` calls."""
    for plan in plans:
        lazy = Lazy(plan, module)
        if lazy.bind(args, kwargs):
            break
    else:
        if may_trace:
            return STALE
        plans[0].counts["eager"] += 1
        return plans[0].fn(*args, **kwargs)
    if may_trace and plan.misses >= MISSES:
        lazy.unbind()
        return STALE
    lazy.__enter__()
    result = None
    try:
        try:
            result = plan.fn(*args, **kwargs)
        except BaseException:
            lazy.stop()
            lazy.active = False
            raise
        lazy.finish()
    finally:
        lazy.__exit__()
        lazy.unbind(result)
        plan.counts[lazy.outcome] += 1
        plan.misses = plan.misses + 1 if lazy.outcome == "eager" else 0
        lazy.release()
    return result
