"""Helpers shared by the ops modules: the ``numgrad.ops`` package (imported on first use: the
families import before it is complete), an index tensor for the samples, a dimension wrapped, a
function's in-place form and its ``out=`` form.
"""
from __future__ import annotations

from ..tensor import Tensor, _wrap_dim


def _ops():
    from .. import ops

    return ops


def _i(m, x, values, dtype=None):
    """An index tensor on ``x``'s device, for the samples."""
    return m.tensor(values, device=x.device) if dtype is None else m.tensor(
        values, dtype=dtype, device=x.device)


def _dim(input: Tensor, dim) -> int:
    nd = input._data.ndim
    return _wrap_dim(int(dim), nd) % max(nd, 1)


def _inplace(fn):
    def method(input: Tensor, *args, **kwargs) -> Tensor:
        from .inplace import _write

        return _write(input, fn, *args, saves_self=False, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"``{fn.__name__}`` in place."
    return method


def _with_out(fn, name: str):
    from .._out import with_out

    return with_out(fn, name)
