"""``numgrad.autograd.forward_ad``: forward-mode AD with dual tensors, PyTorch's API.

Inside ``with dual_level():``, ``make_dual(primal, tangent)`` gives a tensor that carries a tangent
(a forward gradient) at that level; every op run on it computes, besides its value, the tangent of
its output by the op's forward rule (``Op.jvp``, declared in ``numgrad.ops`` next to its backward,
as PyTorch's ``derivatives.yaml`` declares ``result:`` next to ``self:``), and ``unpack_dual``
reads it back. An op without a forward rule raises PyTorch's NotImplementedError.

How tangents are kept. A tangent is not stored on the tensor (its slots are the reverse mode's):
a table maps a tensor (by identity, dropped when the tensor dies) to its tangents, one per level.
Levels nest (``numgrad.func.jvp`` inside ``jvp`` gives ``jacfwd(jacfwd(f))``): an op's output gets
one tangent per level found among its inputs, computed lowest level first, each by the op's rule
run with the levels from its own upwards hidden, so that the tangent of an inner (higher) level
carries the tangents of the outer ones, as functorch's nested wrappers do, and no rule ever sees
its own level (which would recurse). ``registry.apply`` calls ``propagate`` after each op while a
level is open; the eager fast lane is closed meanwhile, so every op goes through it.

Only one user-visible level at a time, as PyTorch (``Nested forward mode AD is not supported``);
``numgrad.func`` opens its own nested ones.
"""
from __future__ import annotations

import threading
import weakref
from typing import NamedTuple

from ..tensor import Tensor
from ..ops.indexing import (_base_key, _is_host, _positions_in, kernels_of, AsStrided, _put,
    IndexPutImpl)
from ..ops import registry
from . import function  # (function.py imports this module first: its Function is read at call time)
from ..creation import zeros_like
from .. import _lazy
from .._lowp import BF16, NARROW
from .node import SavedTensor

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view of the dual tensor's values) and the
    tangent at the level (None if there is none)."""

    primal: Tensor
    tangent: Tensor | None


_levels: list = []  # the open levels, innermost last
_next_level = [0]
_table: dict = {}  # id(tensor) -> [weakref to it, {level: tangent}]
class _Limit(threading.local):
    """Only levels below ``value`` are seen (while a rule of a level runs): this thread's, so
    that a rule running in one thread hides no level from another thread's ops."""

    value = 1 << 60


_limit = _Limit()
_user_level = [None]  # the level opened by dual_level()/enter_dual_level(), if any


def _forget(ref, key=None):
    entry = _table.get(key)
    if entry is not None and entry[0] is ref:
        del _table[key]


def _entry(t):
    """{level: tangent} of ``t``, or None: its own, or, for a saved output rebuilt by a node,
    its array's (``_keep_for_saved_output``). A view written through since its tangent was set
    (or never given one) reads it off its root's (``_view_tangents``)."""
    entry = _table.get(id(t))
    if entry is not None and entry[0]() is t:
        if t._base is None or entry[2] == t._version_counter.value or not _levels:
            return entry[1]
        return _view_tangents(t, entry[1])
    if t._base is not None and _levels:
        found = _view_tangents(t, None)
        if found is not None:
            return found
    if _by_data:
        found = _by_data.get(id(t._data))
        if found is not None and found[0]() is t._data:
            _set_all(t, found[1])
            return found[1]
    return None


def _set_all(t, tangents: dict) -> None:
    for level, tangent in tangents.items():
        _set_tangent(t, level, tangent)


def _tangents(t) -> dict | None:
    """{level: tangent} of ``t`` for the levels seen now, or None."""
    entry = _entry(t)
    if entry is None:
        return None
    limit = _limit.value
    found = {k: v for k, v in entry.items() if k < limit}
    return found or None


def _set_tangent(t, level: int, tangent) -> None:
    key = id(t)
    entry = _table.get(key)
    if entry is None or entry[0]() is not t:
        ref = weakref.ref(t, lambda r, key=key: _forget(r, key))
        entry = _table[key] = [ref, {}, None]
    entry[1][level] = tangent
    entry[2] = t._version_counter.value  # (a view's tangent is current as of this version)


# --------------------------------------------------------------------------- views' tangents
# As PyTorch's, a view's tangent is a view of its base's: after an in-place write to the base
# (or to another of its views) the view reads its tangent off the base's (``as_strided`` of it,
# the ``AsStrided`` op, whose forward rule is the op itself), and a write into a view writes its
# tangent into the base's (``_write_root``). The base a view's tangent follows is its root base,
# except below a dual tensor: ``make_dual`` gives a view of the primal whose tangent is its own
# (the primal has none), and the views made of it follow it (``_roots``, recorded as views are
# made while a level is open).
_roots: dict = {}  # id(view) -> (weakref to it, the tensor its tangent follows, or None)


def _root(t):
    """The tensor whose tangent ``t``'s is a view of, or None."""
    found = _roots.get(id(t))
    if found is not None and found[0]() is t:
        return found[1]
    return t._base


def _set_root(t, root) -> None:
    key = id(t)
    _roots[key] = (weakref.ref(t, lambda r, key=key: _forget_root(r, key)), root)


def _forget_root(ref, key):
    found = _roots.get(key)
    if found is not None and found[0] is ref:
        del _roots[key]


def _key_in(root, view):
    positions = _positions_in(root._data, view._data)
    if not _is_host(root._data):
        positions = kernels_of(root._data).upload(positions)
    return _base_key(positions, root)


def _view_tangents(view, own):
    """The tangents of ``view`` read off its root's (None where the root has none: ``own``)."""
    root = _root(view)
    found = _entry(root) if root is not None else None
    if not found:
        return own
    key = _key_in(root, view)
    limit = _limit.value
    try:
        for level, tangent in found.items():
            _limit.value = level  # (the outer levels' tangents of the tangent carried along)
            _set_tangent(view, level, registry.apply(AsStrided, (tangent,), (tangent._data,),
                                                     key=key))
    finally:
        _limit.value = limit
    return _table[id(view)][1]


def write_into(view, key, values, op, accumulate: bool) -> None:
    """The tangents of ``view[key] = values`` (``op``, ``accumulate``: the write's) for a view
    whose write goes through its base (``indexing._write``): the view's, its root's after."""
    own = dict(_entry(view) or {})
    given = _entry(values) or {}
    limit = _limit.value
    try:
        for level in sorted(set(own) | set(given)):
            _limit.value = level
            old, new = own.get(level), given.get(level)
            new = zeros_like(values) if new is None else new
            _set_tangent(view, level, _put(op, zeros_like(view) if old is None else old, key,
                                           new if new.dtype == view.dtype else new.to(view.dtype),
                                           accumulate))
    finally:
        _limit.value = limit
    _write_root(view)


def _write_root(view) -> None:
    """After a write into ``view`` gave it its tangents (or none): its root's tangents (zeros
    where it had none) with the view's positions replaced by the view's (zeros where it has
    none), as PyTorch's tangent, a view of the root's, is written."""
    root = _root(view)
    if root is None:
        return
    entry = _table.get(id(view))
    own = entry[1] if entry is not None and entry[0]() is view else {}
    found = _entry(root) or {}
    if not own and not found:
        return
    key = _key_in(root, view)
    limit = _limit.value
    try:
        for level in sorted(set(own) | set(found)):
            _limit.value = level
            old, new = found.get(level), own.get(level)
            _set_tangent(root, level, _put(IndexPutImpl, zeros_like(root) if old is None else old,
                                           key, zeros_like(view) if new is None else new))
    finally:
        _limit.value = limit


def _open_level() -> int:
    level = _next_level[0]
    _next_level[0] += 1
    _levels.append(level)
    if len(_levels) == 1:
        registry.closed += 1  # (every op through registry.apply, which propagates tangents)
        registry._forward_ad = propagate
    return level


def _close_level(level: int) -> None:
    if not _levels or _levels[-1] != level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    _levels.pop()
    for table in (_table, _by_data):  # (the level's tangents go with it, as PyTorch's)
        for key, entry in list(table.items()):
            entry[1].pop(level, None)
            if not entry[1]:
                table.pop(key, None)
    if not _levels:
        registry.closed -= 1
        registry._forward_ad = None


def enter_dual_level() -> int:
    """Opens a forward-AD level and returns it (PyTorch allows one at a time)."""
    if _user_level[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = _user_level[0] = _open_level()
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Closes the level ``enter_dual_level`` opened; the tangents of that level are dropped."""
    if level is None:
        level = _user_level[0]
    if level is None or level != _user_level[0]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    _close_level(level)
    _user_level[0] = None


class dual_level:
    """Context manager of a forward-AD level: dual tensors made inside it have their tangents
    until it exits."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _current_level(level):
    if level is not None:
        return level
    if _user_level[0] is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    return _user_level[0]


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` whose forward gradient (tangent) at ``level`` (the current one) is
    ``tangent``, which must have its shape and dtype."""
    level = _current_level(level)
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual(): expected tensor and tangent to be Tensors")
    batched = _batched_make_dual(tensor, tangent, level)
    if batched is not None:
        return batched
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if tensor.dtype != tangent.dtype:
        if not (tensor.is_floating_point() or tensor.is_complex()):
            raise ValueError(f"Expected primal to be floating point or complex, but got: "
                             f"{tensor.dtype}")
        raise RuntimeError("Expected tangent to have the same dtype as the primal, but got "
                           f"{tangent.dtype} and {tensor.dtype}")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    dual = tensor.view_as(tensor)  # (a view: a fresh object, the same storage and history)
    _set_tangent(dual, level, tangent)
    _set_root(dual, None)  # (its tangent its own, not a view of the primal's)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """The primal (a view without the tangent of ``level``) and the tangent of ``tensor`` at
    ``level`` (None where it has none)."""
    if level is None:
        level = _user_level[0]
        if level is None:
            return UnpackedDualTensor(tensor, None)
    batched = _batched_unpack_dual(tensor, level)
    if batched is not None:
        return batched
    found = _entry(tensor)
    tangent = found.get(level) if found is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    limit = _limit.value
    _limit.value = level  # (the primal keeps the tangents of outer levels only)
    try:
        primal = tensor.view_as(tensor)
    finally:
        _limit.value = limit
    return UnpackedDualTensor(primal, tangent)


# ----------------------------------------------------------------------------- vmap's duals
def _batched_make_dual(tensor, tangent, level):
    """``make_dual`` where the primal or the tangent is batched by ``numgrad.func.vmap``: the dual
    is made of the physical tensors (the unbatched one expanded), then batched again."""
    _vmap = _lazy.module("func._vmap")

    return _vmap.make_dual(tensor, tangent, level)


def _batched_unpack_dual(tensor, level):
    _vmap = _lazy.module("func._vmap")

    return _vmap.unpack_dual(tensor, level)


# ------------------------------------------------------------------------ propagation through ops
class JvpContext:
    """What a forward rule (``Op.jvp(ctx, *tangents)``) sees: the op's ``inputs`` (tensors and
    constants, as ``registry.apply`` had them) and their promoted ``arrays``, its ``params``, its
    ``result``, and
    ``needs_input_grad`` (which inputs have a tangent). ``saved_tensors`` gives what the op's
    backward would have saved, so that a rule can call the backward formula itself."""

    __slots__ = ("op", "inputs", "arrays", "params", "result", "needs_input_grad",
                 "input_shapes", "input_dtypes", "input_devices")

    def __init__(self, op, inputs, arrays, params, result, needs):
        self.op = op
        self.inputs = inputs
        self.arrays = arrays
        self.params = params
        self.result = result
        self.needs_input_grad = needs
        self.input_shapes = tuple(t._data.shape if isinstance(t, Tensor) else None
                                  for t in inputs)
        self.input_dtypes = tuple(t._data.dtype if isinstance(t, Tensor) else None
                                  for t in inputs)
        self.input_devices = None

    @property
    def saved_tensors(self) -> tuple:
        op = self.op
        saved = [self.inputs[i] for i in op.save_inputs]
        if op.save_output:
            saved.append(self.result)
        return tuple(saved)

    def name(self) -> str:
        return self.op.node


def not_implemented(name: str):
    return NotImplementedError(
        f"Trying to use forward AD with {name} that does not support it because it has not "
        "been implemented yet.\nPlease file an issue to PyTorch at "
        "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we "
        "can prioritize its implementation or submit a PR adding the implementation to "
        "derivatives.yaml")


def propagate(op, inputs, arrays, params, result):
    """Gives ``result`` (the output of ``op`` on ``inputs``) its tangents, one per level seen
    among the inputs, by ``op.jvp``. Called by ``registry.apply`` while a level is open.

    A float16/bfloat16 op, computed in float32 and its result rounded
    (``registry._apply_narrow``), comes here with its narrow arrays and rounded result: the
    rule's ops run on the narrow dtype, each rounding to it, as PyTorch's formulas run on
    Half/BFloat16 tensors (with the rounded output: the backward formulas, which in reverse
    mode get the output as computed, in float32, get it here as PyTorch saves it). Its tangent
    has the result's dtype."""
    if op.is_view and result._base is not None:  # (a view of a dual follows the dual)
        root = _root(inputs[0])
        root = inputs[0] if root is None else root
        if root is not result._base:
            _set_root(result, root)
    found = None
    for t in inputs:
        if isinstance(t, Tensor):
            tangents = _tangents(t)
            if tangents is not None:
                if found is None:
                    found = set()
                found.update(tangents)
    if found is None or not op.differentiable or (result._data.dtype.kind not in "fc" and
                                                  result._data.dtype != BF16):
        return result
    rule = op.jvp
    if rule is None:
        raise not_implemented(op.name)
    dtype = result._data.dtype
    narrow = dtype.num in NARROW
    limit = _limit.value
    try:
        for level in sorted(found):
            _limit.value = level  # (the rule sees the outer levels only)
            tangents = []
            for t in inputs:
                entry = _entry(t) if isinstance(t, Tensor) else None
                tangents.append(entry.get(level) if entry is not None else None)
            needs = tuple(t is not None for t in tangents)
            ctx = JvpContext(op, inputs, arrays, params, result, needs)
            out = rule(ctx, *tangents)
            if out is not None:
                if narrow and out._data.dtype != dtype:  # (a float32 number or constant in
                    out = out.to(result.dtype)           # the rule: rounded as the op's result)
                _set_tangent(result, level, out)
    finally:
        _limit.value = limit
    _keep_for_saved_output(result)
    return result


def copy_tangents(source, target) -> None:
    """Gives ``target`` the tangents of ``source`` (all levels), replacing its own: an in-place
    op's result's tangents go to the tensor written (``ops.inplace._write``)."""
    entry = _entry(source)
    found = dict(entry) if entry is not None else {}
    old = _table.get(id(target))
    if old is not None and old[0]() is target:
        old[1].clear()
    for level, tangent in found.items():
        _set_tangent(target, level, tangent)
    if target._base is not None:  # (a view: its root's tangents written too)
        _write_root(target)


def tangents_of(t) -> dict:
    """{level: tangent} of ``t`` as it is now (a copy; empty where it has none)."""
    return dict(_entry(t) or {})


def restride_tangents(target, tangents: dict) -> None:
    """Gives ``target`` the tangents ``tangents`` (``tangents_of`` the view it has just been
    made, in place: ``t_``, ``squeeze_`` ..., ``ops.shape._restride``), replacing its own. Its
    values have not changed, so its root's tangents stay as they are."""
    old = _table.get(id(target))
    if old is not None and old[0]() is target:
        old[1].clear()
    _set_all(target, tangents)


class FunctionLevels:
    """A custom ``autograd.Function`` called on tensors with tangents: its ``forward`` runs with
    the tangents hidden (its ops are not differentiated one by one), then its ``jvp`` gives the
    outputs' tangents, once per level, as PyTorch's ``Function.jvp``."""

    __slots__ = ("levels", "limit")

    @classmethod
    def of(cls, inputs):
        found = set()
        for t in inputs:
            if isinstance(t, Tensor):
                tangents = _tangents(t)
                if tangents:
                    found.update(tangents)
        if not found:
            return None
        self = cls()
        self.levels = sorted(found)
        self.limit = _limit.value
        _limit.value = self.levels[0]
        return self

    def restore(self) -> None:
        _limit.value = self.limit

    def push_forward(self, fn, ctx, inputs, outputs) -> None:
        if fn.jvp is function.Function.jvp:
            fn.jvp(ctx)  # (PyTorch's NotImplementedError: "You must implement the jvp function")
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        ctx.__dict__["_in_jvp"] = True
        try:
            for level in self.levels:
                _limit.value = level
                tangents = []
                for t in inputs:
                    entry = _entry(t) if isinstance(t, Tensor) else None
                    tangents.append(entry.get(level) if entry is not None else None)
                result = fn.jvp(ctx, *tangents)
                result = result if isinstance(result, tuple) else (result,)
                for out, tangent in zip(outs, result):
                    if isinstance(out, Tensor) and tangent is not None:
                        _set_tangent(out, level, tangent)
        finally:
            del ctx.__dict__["_in_jvp"]
            _limit.value = self.limit


def detach(t: Tensor) -> Tensor:
    """``t.detach()`` keeping ``t``'s tangents (themselves detached): the transforms of
    ``numgrad.func`` detach what they differentiated, and an enclosing ``jvp`` still needs the
    tangents."""
    out = t.detach()
    entry = _entry(t) if _levels else None
    if entry:
        _set_all(out, {k: detach(v) for k, v in entry.items()})
    return out


def _keep_for_saved_output(result) -> None:
    """A node that saves its output rebuilds it, when unpacked, as a fresh tensor around the
    same array (``SavedTensor``): the tangents are found for it by that array too
    (forward-over-reverse: the backward of ``exp`` uses its output's tangent). So is a
    decomposition's output (``rebuilds_output``), which its recorded backward rebuilds."""
    node = result._grad_fn
    op = getattr(node, "op", None)
    if not (getattr(op, "save_output", False) or getattr(op, "rebuilds_output", False)):
        return
    entry = _table.get(id(result))
    if entry is None:  # (no tangent: a zero one)
        return
    _keep_by_data(result._data, entry[1])
    saved = node._saved[-1] if op.save_output and type(node._saved) is tuple and node._saved \
        else None
    if type(saved) is SavedTensor and saved.tensor is None and saved.data is not None and \
            saved.data is not result._data:
        # (a float16/bfloat16 op's node saved its output as computed, widened to float32
        # (``registry._apply_narrow``), before the result was rounded: found by that array too)
        _keep_by_data(saved.data, entry[1])


def _keep_by_data(data, tangents: dict) -> None:
    key = id(data)
    try:
        ref = weakref.ref(data, lambda r, key=key: _forget_data(r, key))
    except TypeError:  # (an array type without weak references: not kept)
        return
    _by_data[key] = (ref, tangents)


_by_data: dict = {}  # id(array) -> (weakref to it, the {level: tangent} of the output it holds)


def _forget_data(ref, key):
    entry = _by_data.get(key)
    if entry is not None and entry[0] is ref:
        del _by_data[key]
