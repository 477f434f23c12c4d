"""What tracing hands to numgrad's own code instead of arrays: ``TracedArray``, and ``GraphBreak``
for what a trace cannot hold.

While ``numgrad.compile`` traces a function, every array numgrad computes comes from the kernels
(``kernels/interface.py``), which the tracer records; the arrays it gives back, and the data of the
tensors the function reads from outside, are ``TracedArray`` views of the real arrays. They behave
as the arrays they view for everything that describes them (shape, dtype, strides, flags, views),
but reading a value out of one (``.item()``, ``bool()``, indexing out a scalar, printing) or
computing with NumPy outside the kernels would make the recorded program depend on something it
does not record, so it raises ``GraphBreak`` instead, while its trace is active. After the trace
they are plain arrays in all but name.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .. import dispatch

def active_trace():
    """The trace (or re-run call, ``rerun.Lazy``) recording in this thread, or None (also once
    it has stopped at a break): the active dispatch mode (``numgrad.dispatch``)."""
    return dispatch.current()


def graph_break(what: str, trace=None) -> None:
    """Something the trace cannot hold happens now: with ``fullgraph`` the error is raised here;
    otherwise the trace stops recording (the function goes on running eagerly, so its results
    and effects are eager's) and the break is reported when the call ends."""
    trace = trace if trace is not None else dispatch.current()
    if trace is not None and trace.active:
        trace.graph_break(what)


def value_read(what: str, trace=None) -> None:
    """A value is read out of a traced tensor (``.item()``, printing, NumPy computing on its
    data): a trace notes it (its calls then need their Python at every call: the re-run path)
    and goes on recording; a re-run call (``rerun.Lazy``) first computes what is pending."""
    trace = trace if trace is not None else dispatch.current()
    if trace is not None and trace.active:
        trace.read(what)


class GraphBreak(RuntimeError):
    """Raised while tracing where the function needs something a compiled program cannot replay:
    a value read from a tensor, Python control flow on tensor values, printing, hooks, random
    numbers, an op with no code generator. ``what`` says which, ``where`` the user's line."""

    def __init__(self, what: str):
        self.what = what
        self.where = _user_frame()
        super().__init__(f"numgrad.compile cannot trace {what}" +
                         (f" (at {self.where})" if self.where else ""))


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_frame() -> str:
    """``file:line`` of the innermost frame on the stack outside numgrad (the user's code)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE + os.sep) and "importlib" not in path:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def value_read(what: str, trace=None) -> None:
    """A value is read out of a traced tensor (``.item()``, printing, NumPy computing on its
    data): a trace notes it (its calls then need their Python at every call: the re-run path)
    and goes on recording; a re-run call (``rerun.Lazy``) first computes what is pending."""
    trace = trace if trace is not None else active_trace()
    if trace is not None and trace.active:
        trace.read(what)


def _reading(array, what: str) -> None:
    trace = array._trace
    if trace is not None and trace.active:
        trace.read(what)


def _writing(array, what: str) -> None:
    """A write into a traced tensor's memory outside the kernels: no recorded program holds
    it, so it is a break."""
    trace = array._trace
    if trace is not None and trace.active:
        graph_break(what, trace)


class TracedArray(np.ndarray):
    """A view of an array recorded by a trace (``_trace``), with its root value (``_root``: the
    trace's value that owns the memory; a view made by NumPy keeps its base's)."""

    # (slots, not an instance dict: the re-run path makes one of these per recorded kernel
    # call, and a slotted array is made and filled in half the time)
    __slots__ = ("_trace", "_root", "_whole")
    # _whole: an array the re-run path handed out for its root, not a view made of it

    def __array_finalize__(self, obj):
        if type(obj) is TracedArray:
            self._trace = obj._trace
            self._root = obj._root
        else:
            self._trace = self._root = None
        self._whole = False

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(isinstance(x, TracedArray) for x in kwargs.get("out", ())):
            _writing(self, f"NumPy's {ufunc.__name__} into a traced tensor's data (outside the "
                           "kernels)")
        _reading(self, f"NumPy's {ufunc.__name__} on a traced tensor's data (outside the kernels)")
        plain = [x.view(np.ndarray) if isinstance(x, TracedArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, TracedArray) else x
                                  for x in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in _WRITING:
            _writing(self, f"NumPy's {func.__name__} into a traced tensor's data (outside the "
                           "kernels)")
        elif func.__name__ not in _STRUCTURAL:
            _reading(self, f"NumPy's {func.__name__} on a traced tensor's data (outside the "
                           "kernels)")
        return super().__array_function__(func, types, args, kwargs)

    def __getitem__(self, index):
        out = super().__getitem__(index)
        if not isinstance(out, np.ndarray):
            _reading(self, "a value read from a tensor (indexing out an element)")
        return out

    def __setitem__(self, index, value):
        _writing(self, "a write into a tensor's data outside the kernels")
        super().__setitem__(index, value)

    def item(self, *args):
        _reading(self, "Tensor.item() (a value read from a tensor)")
        return super().item(*args)

    def tolist(self):
        _reading(self, "Tensor.tolist() (a value read from a tensor)")
        return super().tolist()

    def __bool__(self):
        _reading(self, "bool() of a tensor (Python control flow on a tensor's value)")
        return super().__bool__()

    def __float__(self):
        _reading(self, "float() of a tensor (a value read from a tensor)")
        return super().__float__()

    def __int__(self):
        _reading(self, "int() of a tensor (a value read from a tensor)")
        return super().__int__()

    def __index__(self):
        _reading(self, "a tensor used as an index (a value read from a tensor)")
        return super().__index__()

    def __repr__(self):
        _reading(self, "printing a tensor (its values are read)")
        return super().__repr__()

    __str__ = __repr__

    def fill(self, value):
        _writing(self, "a write into a tensor's data outside the kernels")
        super().fill(value)

    def copy(self, order="C"):
        _reading(self, "a copy of a tensor's data outside the kernels")
        return super().copy(order)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        if copy or np.dtype(dtype) != self.dtype:  # (else a no-op: ``self``)
            _reading(self, "a conversion of a tensor's data outside the kernels")
        return super().astype(dtype, order, casting, subok, copy)


# NumPy functions that write into an array argument.
_WRITING = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis",
                      "random"})
# NumPy functions that only describe or view an array, never read its values.
_STRUCTURAL = frozenset({
    "shape", "ndim", "size", "result_type", "may_share_memory", "shares_memory", "broadcast_to",
    "expand_dims", "squeeze", "transpose", "swapaxes", "moveaxis", "reshape", "ravel",
    "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d",
})


def plain(x):
    """``x`` as a plain ndarray view if it is a ``TracedArray``, else ``x``."""
    return x.view(np.ndarray) if isinstance(x, TracedArray) else x
