"""Dispatch modes: what may stand between numgrad's ops and the kernels, per thread.

Eager numgrad computes every array through a device's kernel module (``kernels/interface.py``):
``registry.apply`` hands each op the module of its inputs' device. A *mode* pushed on a thread's
stack (``with mode:``) takes part in that for the ops that thread runs, as PyTorch's
``TorchDispatchMode`` does for its dispatcher:

- ``use(module)`` gives the kernel module the ops use instead of a device's ``module``
  (``numgrad.compile``'s recording kernels, which record each call or defer it);
- the eager core tells the mode what it cannot see through the kernels: an array made from
  Python data (``note_created``), a value about to be read out as Python numbers (``read``), and
  something a recorded program cannot hold (``graph_break``); ``stands_for`` says whether an
  array is one of the mode's (a traced or a pending array, not plain data).

The innermost mode is the one that answers (modes do not nest into each other: numgrad.compile
runs a compiled function called from a traced one as part of it). With no mode pushed on any
thread, which is the common case, ``current()`` is one global read: eager's hot path pays
nothing more. This module imports nothing from numgrad: the core (tensors, ops, the engine)
reaches the compiler only through it.
"""
from __future__ import annotations

import threading

import numpy as np

from . import _lazy
from ._dtype import float_number

__all__ = ["Mode", "current", "note_created", "number_array", "graph_break", "stands_for"]

_local = threading.local()  # .stack: this thread's modes, innermost last
_pushed = 0  # modes pushed on all threads together (under ``_lock``)
_lock = threading.Lock()


class Mode:
    """A dispatch mode that changes nothing; subclasses override what they take part in. A mode
    is active while it is on its thread's stack and its ``active`` is true (a trace that
    stopped at a break stays pushed until its call ends, but no longer records)."""

    active = True
    # Whether the eager fast lane (``registry.lane_mode``) may serve this mode's ops: it then
    # hands ``record`` the kernel call the op's ``forward`` makes, as ``registry.apply`` would
    # have it made, and records the node by the op's generated recorder, as ``registry.apply``
    # does.
    # True for a mode that sees the kernel calls alone (the re-run path's), not for one that
    # sees the ops themselves (a trace).
    lane = False

    def use(self, module):
        """The kernel module the ops of this thread use instead of ``module`` (a device's)."""
        return module

    def record(self, name: str, args: tuple):
        """``K.<name>(*args)`` with ``K`` the CPU kernels of ``use``: the fast lane's kernel
        call, for a mode with ``lane`` (which may take it more directly)."""
        return getattr(self.use(_lazy.module("kernels.cpu")), name)(*args)

    def record_scalar(self, code: int, a, other):
        """``record("binary", (code, a, a.dtype.type(other)))``: the fast lane's binary kernel
        call with a Python number (a mode may match it without making the NumPy scalar)."""
        return self.record("binary", (code, a, a.dtype.type(other) if -65504.0 <= other <= 65504.0
                                      else float_number(a.dtype, other)))

    def record_pair(self, code: int, a, b):
        """``record("binary", (code, a, b))``."""
        return self.record("binary", (code, a, b))

    def record_unary(self, code: int, a):
        """``record("unary", (code, a))``."""
        return self.record("unary", (code, a))

    def note_created(self, array) -> None:
        """``array`` was just made by numgrad from Python data (a fill, a seed gradient)."""

    def read(self, what: str) -> None:
        """A value is about to be read out of a tensor of this mode's as Python numbers."""

    def graph_break(self, what: str) -> None:
        """Something happens that a recorded program cannot hold (``what`` says which)."""

    def stands_for(self, array) -> bool:
        """Whether ``array`` is one of this mode's arrays (not plain data)."""
        return False

    def __enter__(self):
        global _pushed
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        with _lock:
            stack.append(self)
            _pushed += 1
        return self

    def __exit__(self, *exc) -> None:
        global _pushed
        stack = _local.stack
        with _lock:
            stack.remove(self)
            _pushed -= 1


def current() -> Mode | None:
    """This thread's innermost active mode, or None."""
    if not _pushed:
        return None
    stack = getattr(_local, "stack", None)
    if stack:
        mode = stack[-1]
        if mode.active:
            return mode
    return None


def note_created(array) -> None:
    """``array`` was just made by numgrad from Python data: the active mode is told (a trace
    takes it as a constant of its program, not as a tensor read from outside)."""
    mode = current()
    if mode is not None:
        mode.note_created(array)


def number_array(value, dtype) -> np.ndarray:
    """``np.asarray(value, dtype)``: a Python number an op hands its kernels as an array. One
    it makes (0-d, new) is noted as made from Python data, so that a trace takes it as a
    constant at once, where it would otherwise look for a tensor holding it among every object
    of the process (the garbage collector's referrers: 0.1 s a kernel call in a large one).
    A number beyond a float dtype's range is +-inf there, without NumPy's overflow warning."""
    if (type(value) is float or type(value) is int) and not -65504.0 <= value <= 65504.0:
        with np.errstate(over="ignore"):
            array = np.asarray(value, dtype)
    else:
        array = np.asarray(value, dtype)
    if _pushed and array is not value and array.ndim == 0:
        note_created(array)
    return array


def graph_break(what: str) -> None:
    """Something a recorded program cannot hold happens now (a hook runs, the data leaves as an
    array): the active mode is told."""
    mode = current()
    if mode is not None:
        mode.graph_break(what)


def stands_for(array):
    """The active mode if ``array`` is one of its arrays (a traced or a pending one), else
    None."""
    mode = current()
    return mode if mode is not None and mode.stands_for(array) else None
