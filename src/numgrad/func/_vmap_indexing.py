"""Batching rules for ``vmap`` (``_vmap.RULES``) of the ops that read or write at index tensors
and masks, and of those whose results' sizes are read from the values: ``index_put``,
``masked_scatter``, ``masked_select``, ``index_fill``, ``put``, ``take_along_dim``, ``isin``, the
writes into views (``slice_scatter`` ...), ``as_strided``, the counting ops (``bincount``,
``histc``), ``bucketize``/``searchsorted``, and ``nonzero``/``unique`` (which PyTorch's vmap
refuses).

Counting ops run as one count over the whole batch, each example's values offset into a range of
its own. Where the examples' results differ in size (``bincount`` of examples whose largest
values differ, ``masked_select`` with a batched mask) PyTorch's vmap raises, and so do these, with
its messages; where a rule would have to read values it cannot (nested levels) or the op would
raise its own error, the rule declines and the op runs once per example (``_vmap._fallback``),
which raises as PyTorch's loop would.
"""
from __future__ import annotations

from .. import arange, bincount, where, zeros
from .._dtype import bool_
from ..tensor import Tensor
from . import _vmap
from ._vmap import (
    BatchedTensor, _batched, _bound, _broadcast, _flat, _get, _make, _rule, _value_at, innermost,
)


def _aligned(x, lvl, rank: int) -> Tensor:
    """``x``'s physical value with ones after the batch dimension up to ``rank`` logical
    dimensions (``x`` expanded along the batch where it is not batched)."""
    v = _batched(x, lvl)
    for _ in range(rank - (v.ndim - 1)):
        v = v.unsqueeze(1)
    return v


@_rule("index_put", "index_put_")
def _index_put(func, lvl, args, kwargs):
    """``index_put(x, indices, values, accumulate)`` with the indices shared: the batch's own
    positions index the batch dimension in front of them."""
    x = args[0]
    indices, _ = _get(args, kwargs, 1, "indices")
    values, _ = _get(args, kwargs, 2, "values")
    accumulate, _ = _get(args, kwargs, 3, "accumulate", False)
    if any(not isinstance(i, Tensor) or type(i) is BatchedTensor or i.dtype.is_floating_point
           for i in indices):
        return NotImplemented  # (batched indices, None: the loop)
    if any(i.dtype == bool_ for i in indices):  # (a shared mask: the positions it selects)
        indices = tuple(p for i in indices
                        for p in (i.nonzero().unbind(1) if i.dtype == bool_ else (i,)))
    if any(i.dtype.itemsize == 1 for i in indices):
        return NotImplemented  # (uint8 masks: the loop)
    v = _value_at(x, lvl.id)
    if v is None:
        if _vmap._name(func) == "index_put_":
            return _vmap.RULES["__setitem__"](None, lvl, (x, tuple(indices), values), {})
        v = _batched(x, lvl)
    shape = _broadcast([tuple(i.shape) for i in indices])
    rows = arange(lvl.size, device=v.device).reshape((lvl.size, *([1] * len(shape))))
    rank = len(shape) + x.ndim - len(indices)
    vals = _aligned(values, lvl, rank) if type(values) is BatchedTensor else values
    out = func(v, (rows, *indices), vals, accumulate)
    return x if _vmap._name(func) == "index_put_" else _make(out, lvl)


@_rule("masked_scatter")
def _masked_scatter(func, lvl, args, kwargs):
    """``masked_scatter(x, mask, source)``: example b's k-th masked position takes element k of
    its own source, gathered by the running count of its mask."""
    x, mask = args[0], args[1]
    source, _ = _get(args, kwargs, 2, "source")
    rank = max(x.ndim, mask.ndim)
    shape = _broadcast([tuple(x.shape), tuple(mask.shape)])
    size = lvl.size
    vx = _flat(_aligned(x, lvl, rank).expand((size, *shape)))
    vm = _flat(_aligned(mask, lvl, rank).expand((size, *shape)))
    vs = _flat(_batched(source, lvl))
    n_source = vs.shape[1]
    taken = vm.long().cumsum(1) - 1
    if type(taken) is BatchedTensor or not taken.numel():
        return NotImplemented
    if int(taken.amax()) >= n_source:
        return NotImplemented  # (a source too small: the op's own error, from the loop)
    picked = vs.gather(1, taken.clamp(0, max(n_source - 1, 0)))
    return _make(where(vm, picked, vx).reshape((size, *shape)), lvl)


_MASKED_SELECT = ("vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We "
                  "cannot support this because for each batch this would return a differently "
                  "shaped Tensor. Please file an issue at https://github.com/pytorch/pytorch/"
                  "issues if you need this feature.")


@_rule("masked_select")
def _masked_select(func, lvl, args, kwargs):
    """With the mask shared, every example selects as many: the batch keeps its dimension. A
    batched mask would give each example its own size: PyTorch's error."""
    x = args[0]
    mask, _ = _get(args, kwargs, 1, "mask")
    if type(mask) is BatchedTensor and mask._level == lvl.id:
        raise RuntimeError(_MASKED_SELECT)
    shape = _broadcast([tuple(x.shape), tuple(mask.shape)])
    v = _aligned(x, lvl, len(shape)).expand((lvl.size, *shape))
    return _make(v[:, mask.expand(shape)], lvl)


def _stack_error(lengths):
    first = lengths[0]
    k = next(k for k, n in enumerate(lengths) if n != first)
    return RuntimeError(f"stack expects each tensor to be equal size, but got [{first}] at entry "
                        f"0 and [{lengths[k]}] at entry {k}")


def _counts(flat, weights, size, length):
    """The counts (or weight sums) of the batch's values ``flat`` (B, n), example b's offset into
    ``[b * length, (b + 1) * length)``: one ``bincount``."""
    offsets = arange(size, device=flat.device).reshape((size, 1)) * length
    out = bincount((flat + offsets).reshape(-1),
                   None if weights is None else weights.reshape(-1), minlength=size * length)
    return out.reshape((size, length))


@_rule("bincount")
def _bincount(func, lvl, args, kwargs):
    """Each example's counts, in one count over the batch; examples whose counts would differ in
    length raise what PyTorch's vmap (a loop, then a stack) raises."""
    x = args[0]
    weights, _ = _get(args, kwargs, 1, "weights")
    minlength, _ = _get(args, kwargs, 2, "minlength", 0)
    v = _value_at(x, lvl.id)
    if v is None and type(weights) is BatchedTensor and weights._level == lvl.id:
        v = _batched(x, lvl)  # (the values shared, the weights batched)
    if v is None or type(v) is BatchedTensor or v.ndim != 2 or v.dtype.is_floating_point or \
            v.dtype == bool_ or weights is not None and tuple(weights.shape) != tuple(x.shape) or \
            type(weights) is BatchedTensor and weights._level != lvl.id:
        return NotImplemented  # (nested levels, or the op's own errors: the loop)
    size = lvl.size
    flat = _flat(v)
    if flat.shape[1] and int(flat.amin()) < 0:
        return NotImplemented  # (the op's own error, from the loop)
    tops = flat.amax(1).tolist() if flat.shape[1] else [-1] * size
    lengths = [max(t + 1, minlength) for t in tops]
    if len(set(lengths)) > 1:
        raise _stack_error(lengths)
    w = None if weights is None else _flat(_batched(weights, lvl))
    return _make(_counts(flat, w, size, lengths[0]), lvl)


@_rule("histc")
def _histc(func, lvl, args, kwargs):
    """Each example's histogram, its bins computed as the kernel computes them (in the input's
    dtype; the examples' own ranges where ``min == max``), counted in one ``bincount``."""
    x = args[0]
    bins, _ = _get(args, kwargs, 1, "bins", 100)
    lo, _ = _get(args, kwargs, 2, "min", 0)
    hi, _ = _get(args, kwargs, 3, "max", 0)
    v = _value_at(x, lvl.id)
    if v is None or type(v) is BatchedTensor or not v.dtype.is_floating_point or \
            int(bins) <= 0 or "out" in kwargs:
        return NotImplemented
    size, bins = lvl.size, int(bins)
    flat = _flat(v)
    if not flat.shape[1]:
        return _make(zeros((size, bins), dtype=v.dtype, device=v.device), lvl)
    np_type = innermost(v)._data.dtype.type
    if float(lo) == float(hi):
        low = flat.amin(1, keepdim=True)
        high = flat.amax(1, keepdim=True)
        same = low == high
        low, high = where(same, low - 1, low), where(same, high + 1, high)
        if not bool(low.isfinite().all()) or not bool(high.isfinite().all()):
            return NotImplemented  # (the op's own error, from the loop)
        width = high - low
    else:
        low, high = float(np_type(lo)), float(np_type(hi))
        if not low < high:
            return NotImplemented
        width = float(np_type(high) - np_type(low))
    inside = (flat >= low).logical_and(flat <= high)
    position = ((flat - low) * bins / width).trunc().nan_to_num(0).long().clamp(0, bins - 1)
    counts = _counts(where(inside, position, 0), inside.to(v.dtype), size, bins)
    return _make(counts.to(v.dtype), lvl)


@_rule("index_fill")
def _index_fill(func, lvl, args, kwargs):
    """``index_fill`` with a batched (0-d tensor) value: a mask of the filled positions, shared
    by the examples, and ``where``."""
    x = args[0]
    d, _ = _get(args, kwargs, 1, "dim")
    index, _ = _get(args, kwargs, 2, "index")
    value, _ = _get(args, kwargs, 3, "value")
    if type(index) is BatchedTensor or type(value) is not BatchedTensor:
        return _vmap._index_write(func, lvl, args, kwargs)
    mask = zeros(tuple(x.shape), dtype=bool_, device=x.device).index_fill(d, index, True)
    return where(mask, value.to(x.dtype), x)


@_rule("bucketize")
def _bucketize(func, lvl, args, kwargs):
    """Shared boundaries: one ``bucketize`` of the whole batch."""
    boundaries, _ = _get(args, kwargs, 1, "boundaries")
    v = _value_at(args[0], lvl.id)
    if v is None or type(boundaries) is BatchedTensor:
        return NotImplemented
    return _make(func(v, *args[1:], **kwargs), lvl)


@_rule("searchsorted")
def _searchsorted(func, lvl, args, kwargs):
    """A shared 1-D sorted sequence: one search of the whole batch; both batched (or the
    sequence N-D), each batched along (``_both_batched``)."""
    seq = args[0]
    values = args[1] if len(args) > 1 else kwargs.get("input", kwargs.get("self"))
    v = _value_at(values, lvl.id) if isinstance(values, Tensor) else None
    if type(seq) is not BatchedTensor and seq.ndim == 1 and v is not None and \
            "sorter" not in kwargs:
        return _make(func(seq, v, *args[2:], **kwargs), lvl)
    return _vmap._both_batched(func, lvl, args, kwargs)


@_rule("put")
def _put(func, lvl, args, kwargs):
    bound = _bound(func, args, kwargs)
    if bound is None or type(bound["index"]) is BatchedTensor:
        return NotImplemented
    x, index, source = bound["input"], bound["index"], bound["source"]
    n = x.numel()
    flat = x.reshape((n,)).index_put(((index.flatten() + n) % max(n, 1),), source.flatten(),
                                     bound.get("accumulate", False))
    return flat.reshape(tuple(x.shape))


# --- results whose size is read from each example's values: PyTorch's vmap errors
def _dynamic(aten_name):
    def rule(func, lvl, args, kwargs):
        raise RuntimeError("vmap: We do not support batching operators that can output dynamic "
                           f"shape. Attempted to vmap over aten::{aten_name}. Please file an "
                           "issue at https://github.com/pytorch/pytorch/issues if you need this "
                           "feature.")
    return rule


_dynamic_nonzero = _dynamic("nonzero")


@_rule("nonzero")
def _nonzero(func, lvl, args, kwargs):
    as_tuple, _ = _get(args, kwargs, 1, "as_tuple", False)
    if as_tuple:
        raise RuntimeError("Batching rule not implemented for aten::nonzero_numpy. We could not "
                           "generate a fallback.")
    return _dynamic_nonzero(func, lvl, args, kwargs)


_vmap.RULES["unique"] = _dynamic("_unique2")


_vmap.RULES["unique_consecutive"] = _dynamic("unique_consecutive")


@_rule("isin")
def _isin(func, lvl, args, kwargs):
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    elements, tests = bound["elements"], bound["test_elements"]
    if not isinstance(elements, Tensor) or not isinstance(tests, Tensor):
        return NotImplemented
    found = (elements.unsqueeze(-1) == tests.reshape((-1,))).any(-1)
    return found.logical_not() if bound.get("invert", False) else found


def _written_copy(x, lvl):
    """``x`` as a new batched tensor of this level (its own storage) to write into."""
    return _make(_batched(x, lvl).clone(), lvl)


@_rule("slice_scatter", "select_scatter", "diagonal_scatter")
def _scatter_into_view(func, lvl, args, kwargs):
    """``*_scatter(input, src, ...)``: a copy of ``input`` (batched) with ``src`` written into
    the view the arguments name, by the batched views' and writes' rules."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    name = _vmap._name(func)
    out = _written_copy(bound["input"], lvl)
    src = bound["src"]
    if name == "diagonal_scatter":
        view = out.diagonal(bound.get("offset", 0), bound.get("dim1", 0), bound.get("dim2", 1))
        view.copy_(src)
        return out
    dim = _vmap._norm(bound.get("dim", 0), out.ndim)
    if name == "select_scatter":
        key = (slice(None),) * dim + (bound["index"],)
    else:
        key = (slice(None),) * dim + (slice(bound.get("start"), bound.get("end"),
                                            bound.get("step", 1)),)
    out[key] = src
    return out


@_rule("as_strided", "as_strided_copy")
def _as_strided(func, lvl, args, kwargs):
    """Each example as if it had a storage of its own (PyTorch's rule): the strides and the
    offset taken from the example's first element, the batch by the physical batch stride."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    x = bound["input"]
    v = _value_at(x, lvl.id)
    if v is None or type(v) is BatchedTensor:
        return NotImplemented
    offset = bound.get("storage_offset")
    start = v.storage_offset() + (0 if offset is None else offset)
    out = v.as_strided((v.shape[0], *tuple(bound["size"])), (v.stride(0),
                                                              *tuple(bound["stride"])), start)
    return _make(out.clone() if _vmap._name(func) == "as_strided_copy" else out, lvl)


@_rule("as_strided_scatter")
def _as_strided_scatter(func, lvl, args, kwargs):
    raise RuntimeError("Error: aten::as_strided_scatter requires special handling, and does not "
                       "yet have a batching rule. Feel free to file a github issue!")


@_rule("take_along_dim")
def _take_along_dim(func, lvl, args, kwargs):
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    if bound.get("dim") is not None:
        return _vmap._gather(func, lvl, args, kwargs)
    return bound["input"].flatten().gather(0, bound["indices"].flatten())
