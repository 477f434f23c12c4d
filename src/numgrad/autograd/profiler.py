"""``autograd.profiler``: time every op and backward node, as PyTorch's profiler does.

``with profile() as prof:`` times each registered op's forward (named ``aten::<op>``, as
PyTorch's ATen ops are) and each backward node (``MulBackward0``), and ``record_function(name)``
ranges; ``prof.key_averages().table(sort_by="self_cpu_time_total")`` prints them averaged by
name with PyTorch's columns. Self time is an event's time less its children's (a backward formula
runs forward ops).

Nothing is timed outside a ``profile`` block: entering one wraps the registry's forward and
backward functions, leaving it puts them back, so the ops pay nothing while no profiler runs.
"""
from __future__ import annotations

import threading
import time

from .. import _lazy

_LOCK = threading.Lock()
_ACTIVE: list = []  # the running profilers (nested blocks share the wrapping)
_SAVED: dict = {}  # op class -> its (forward, backward) while wrapped


class FunctionEvent:
    """One timed call: its name, start and end (ns), and the time of the calls inside it."""

    __slots__ = ("name", "start", "end", "child_ns", "thread")

    def __init__(self, name: str, start: int, thread: int):
        self.name, self.start, self.end, self.child_ns, self.thread = name, start, start, 0, thread

    @property
    def cpu_time_total(self) -> float:
        return (self.end - self.start) / 1e3  # (microseconds, as PyTorch's)

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end - self.start - self.child_ns) / 1e3

    def __repr__(self) -> str:
        return f"<FunctionEvent name={self.name} cpu_time={self.cpu_time_total:.3f}us>"


class FunctionEventAvg:
    """The events of one name, summed: ``key``, ``count``, ``cpu_time_total``,
    ``self_cpu_time_total`` (microseconds) and ``cpu_time`` (the average)."""

    def __init__(self, key: str):
        self.key, self.count, self.cpu_time_total, self.self_cpu_time_total = key, 0, 0.0, 0.0

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us count={self.count}>")


def _format_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events with ``table()`` and ``key_averages()``, as PyTorch's."""

    def key_averages(self) -> EventList:
        averages: dict = {}
        for e in self:
            if isinstance(e, FunctionEventAvg):
                return self
            averages.setdefault(e.name, FunctionEventAvg(e.name)).add(e)
        return EventList(averages.values())

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_) -> str:
        rows = self.key_averages()
        if sort_by is not None:
            key = {"cpu_time": "cpu_time", "cpu_time_total": "cpu_time_total",
                   "self_cpu_time_total": "self_cpu_time_total", "count": "count"}.get(
                sort_by.removeprefix("cpu_").replace("cuda", "cpu") if sort_by.startswith(
                    ("cuda", "self_cuda")) else sort_by, "self_cpu_time_total")
            rows = sorted(rows, key=lambda e: getattr(e, key), reverse=True)
        total = sum(e.self_cpu_time_total for e in rows) or 1.0
        heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                 "# of Calls"]
        width = max([len(h) for h in heads[:1]] + [len(e.key) for e in rows] + [4]) + 2
        line = "-" * width + "  " + "  ".join(["-" * 12] * 6) + "  "
        out = [line, heads[0].rjust(width) + "  " + "  ".join(h.rjust(12) for h in heads[1:])
               + "  ", line]
        for e in list(rows)[:row_limit]:
            cells = [f"{100 * e.self_cpu_time_total / total:.2f}%", _format_us(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total:.2f}%", _format_us(e.cpu_time_total),
                     _format_us(e.cpu_time), str(e.count)]
            out.append(e.key.rjust(width) + "  " + "  ".join(c.rjust(12) for c in cells) + "  ")
        out += [line, f"Self CPU time total: {_format_us(sum(e.self_cpu_time_total for e in rows))}",
                ""]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


_stacks = threading.local()


def _begin(name: str):
    if not _ACTIVE:
        return None
    event = FunctionEvent(name, time.perf_counter_ns(), threading.get_ident())
    stack = getattr(_stacks, "stack", None)
    if stack is None:
        stack = _stacks.stack = []
    stack.append(event)
    return event


def _end(event) -> None:
    if event is None:
        return
    event.end = time.perf_counter_ns()
    stack = _stacks.stack
    stack.pop()
    if stack:
        stack[-1].child_ns += event.end - event.start
    for prof in list(_ACTIVE):
        prof._events.append(event)


def _timed(fn, name: str):
    def timed(*args, **kwargs):
        event = _begin(name)
        try:
            return fn(*args, **kwargs)
        finally:
            _end(event)

    timed.__wrapped__ = fn
    return timed


def _wrap_registry() -> None:
    registry = _lazy.module("ops.registry")  # (the ops import autograd, and so this module)
    registry.closed += 1  # (every op through its forward, timed: not the fast lane)

    for op in registry.REGISTRY.values():
        _SAVED[op] = (op.__dict__.get("forward"), op.__dict__.get("backward"),
                      op.__dict__.get("through"))
        op.forward = staticmethod(_timed(op.forward, "aten::" + op.name))
        op.backward = staticmethod(_timed(op.backward, op.node.split("::")[-1]))
        if op.through is not None:  # (its node's backward and its input node's, as its own)
            op.through = staticmethod(_timed(op.through, op.node.split("::")[-1]))


def _unwrap_registry() -> None:
    for op, (forward, backward, through) in _SAVED.items():
        for attr, saved in (("forward", forward), ("backward", backward),
                            ("through", through)):
            if saved is None:
                if attr in op.__dict__:
                    delattr(op, attr)  # (it was inherited)
            else:
                setattr(op, attr, saved)
    _SAVED.clear()
    _lazy.module("ops.registry").closed -= 1


class profile:
    """``with profile() as prof:`` times the ops and backward nodes run inside; then
    ``prof.key_averages().table(...)``. PyTorch's keywords (``use_cuda``, ``record_shapes``,
    ``profile_memory``, ``with_stack`` …) are accepted; the times are the host's (for CUDA
    tensors, the launch, as the ops do not wait for the GPU)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.use_cuda = use_cuda
        self._events: list = []
        self.function_events = None

    def __enter__(self):
        if not self.enabled:
            return self
        with _LOCK:
            if not _ACTIVE:
                _wrap_registry()
            _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        with _LOCK:
            _ACTIVE.remove(self)
            if not _ACTIVE:
                _unwrap_registry()
        self.function_events = EventList(sorted(self._events, key=lambda e: e.start))
        return False

    def events(self) -> EventList:
        """The events timed (none before the block has run, as in PyTorch)."""
        return self.function_events if self.function_events is not None else EventList()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        return self.events().key_averages()

    def table(self, sort_by=None, row_limit: int = 100, **kwargs) -> str:
        return self.events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table() if self.function_events is not None else "<unfinished profile>"


class record_function:
    """A named range in the profile (``with record_function("my_block"):``); also a
    decorator."""

    def __init__(self, name: str, args=None):
        self.name = name
        self._event = None

    def __enter__(self):
        self._event = _begin(self.name)
        return self

    def __exit__(self, *exc):
        _end(self._event)
        self._event = None
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapped
