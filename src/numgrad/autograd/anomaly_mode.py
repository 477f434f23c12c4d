"""Anomaly detection: ``set_detect_anomaly``, ``detect_anomaly`` and the metadata they record.

When it is on, every node recorded remembers the stack of the forward call that made it (and, for
a node recorded by a backward pass with ``create_graph=True``, the node whose backward made it).
When a node then fails during backward, the engine warns with that stack before the error goes
on; with ``check_nan``, a node whose gradients contain NaN is such a failure. When it is off, the
cost is one flag check per recorded node and per node run.

As in PyTorch, the mode is process-wide, not per thread.
"""
from __future__ import annotations

import os
import threading
import traceback
import warnings


class _State:
    enabled = False
    check_nan = True


state = _State()
_running = threading.local()  # the node whose backward this thread is running, if any

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LAYERS = os.path.join(_PACKAGE, "nn") + os.sep  # library code whose frames are worth showing


def is_anomaly_enabled() -> bool:
    """Returns True if anomaly detection is on."""
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Returns True if anomaly detection checks gradients for NaN."""
    return state.check_nan


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    state.enabled = bool(mode)
    state.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine.

    Running the forward pass inside it lets the backward pass show the traceback of the forward
    operation that created a failing backward function; with ``check_nan`` (the default), a
    backward computation that produces NaN raises an error. It slows programs down: use it only
    for debugging.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = state.enabled
        self.check_nan = check_nan
        self.prev_check_nan = state.check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Sets anomaly detection on or off: at once when called, and back to what it was at the end
    of a ``with`` block when used as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = state.enabled
        self.prev_check_nan = state.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class AnomalyMetadata:
    """What a node recorded in anomaly mode remembers: the forward stack, and its parent node."""

    __slots__ = ("stack", "parent")

    def __init__(self, stack: list, parent) -> None:
        self.stack = stack
        self.parent = parent


def record(node) -> None:
    """Stores on ``node`` the stack of the forward call that is recording it."""
    node._anomaly = AnomalyMetadata(_forward_stack(), getattr(_running, "node", None))


def _forward_stack() -> list:
    """The formatted stack without the recording machinery's own innermost frames (numgrad's
    internals play the part of PyTorch's C++: the trace ends in the caller's code)."""
    frames = traceback.extract_stack()
    end = len(frames)
    while end and frames[end - 1].filename.startswith(_PACKAGE) and not frames[
            end - 1].filename.startswith(_LAYERS):
        end -= 1
    return traceback.format_list(frames[:end])


class running:
    """Marks ``node`` as the node whose backward runs (its recorded nodes get it as parent)."""

    __slots__ = ("node", "prev")

    def __init__(self, node) -> None:
        self.node = node

    def __enter__(self) -> None:
        self.prev = getattr(_running, "node", None)
        _running.node = self.node

    def __exit__(self, *exc) -> None:
        _running.node = self.prev


def warn_forward_trace(node) -> None:
    """Warns with the forward stack of the failing ``node``, then those of its parents, in
    PyTorch's words (nothing for a node recorded while anomaly mode was off, as PyTorch)."""
    meta = getattr(node, "_anomaly", None)
    if meta is None:
        return
    warnings.warn(
        f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
        + "".join(meta.stack),
        stacklevel=2,
    )
    parent = meta.parent
    while parent is not None:
        parent_meta = getattr(parent, "_anomaly", None)
        if parent_meta is None:
            break
        warnings.warn(
            f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of forward call "
            "that induced the previous calculation:\n" + "".join(parent_meta.stack),
            stacklevel=2,
        )
        parent = parent_meta.parent
