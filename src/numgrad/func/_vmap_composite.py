"""Batching rules for ``vmap`` (``_vmap.RULES``) written as compositions of ops that have rules
of their own: the products (``outer``, ``inner``, ``vdot``, ``kron``, ``tensordot``,
``block_diag``), the solves whose batch dimensions broadcast, the normalisations
(``batch_norm``, ``group_norm``, ``layer_norm``, ``rms_norm``), attention, ``bilinear``, ``prelu``
and ``hinge_embedding_loss``, the shape compositions (``tile``, ``rot90``, ``atleast_*d``,
``meshgrid``, ``diag`` ...), ``quantile``, ``isclose``, and the in-place random fills (by the
level's randomness, as the random factories).
"""
from __future__ import annotations

import numpy as np

from .. import cat, ones, where, zeros
from .._dtype import bool_, promote_types
from ..tensor import Tensor
from . import _vmap
from ._vmap import (
    BatchedTensor, _batched, _bound, _broadcast, _flat, _get, _make, _rule, _value_at, innermost,
)
from ..ops.attention import attention_weights


@_rule("block_diag")
def _block_diag(func, lvl, args, kwargs):
    """The blocks of every example side by side: each block padded with zeros to the full width
    and the rows stacked, one ``cat`` for the batch."""
    if kwargs or not args:
        return NotImplemented
    size = lvl.size
    blocks, dtype = [], None
    for t in args:
        shape = tuple(t.shape)
        if len(shape) > 2:
            return NotImplemented  # (PyTorch's error, from the loop)
        rows, cols = (1, 1) if not shape else (1, shape[0]) if len(shape) == 1 else shape
        blocks.append((_batched(t, lvl).reshape((size, rows, cols)), rows, cols))
        dtype = t.dtype if dtype is None else promote_types(dtype, t.dtype)
    width = sum(c for _, _, c in blocks)
    device = blocks[0][0].device
    lines, left = [], 0
    for v, rows, cols in blocks:
        parts = [zeros((size, rows, left), dtype=dtype, device=device), v.to(dtype),
                 zeros((size, rows, width - left - cols), dtype=dtype, device=device)]
        lines.append(cat(parts, 2))
        left += cols
    return _make(cat(lines, 1), lvl)


# --- more ops of the trailing dimensions, and compositions
@_rule("diag")
def _diag(func, lvl, args, kwargs):
    """``diag``: a vector's diagonal matrix (``diag_embed``), a matrix's diagonal."""
    v = _value_at(args[0], lvl.id)
    offset, _ = _get(args, kwargs, 1, "diagonal", 0)
    if v is None or v.ndim not in (2, 3):
        return NotImplemented
    if v.ndim == 2:
        return _make(v.diag_embed(offset, 1, 2), lvl)
    return _make(v.diagonal(offset, 1, 2), lvl)


@_rule("fliplr", "flipud")
def _flip_lr_ud(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    if v is None or v.ndim < (3 if _vmap._name(func) == "fliplr" else 2):
        return NotImplemented  # (the op's own error, from the loop)
    return _make(v.flip(2 if _vmap._name(func) == "fliplr" else 1), lvl)


@_rule("sum_to_size")
def _sum_to_size(func, lvl, args, kwargs):
    """The logical size, with ones in front up to the logical rank, summed to after the batch
    dimension."""
    v = _value_at(args[0], lvl.id)
    size = _vmap._sizes(args) if len(args) > 1 else tuple(kwargs["size"])
    n = v.ndim - 1 if v is not None else 0
    if v is None or len(size) > n:
        return NotImplemented
    padded = (1,) * (n - len(size)) + tuple(size)
    return _make(v.sum_to_size((v.shape[0], *padded)).reshape((v.shape[0], *size)), lvl)


@_rule("prelu")
def _prelu(func, lvl, args, kwargs):
    """``prelu(x, w)``: ``x`` where positive, else ``w * x``, ``w`` along the channels (the
    second dimension), composed of batched ops."""
    x, w = args[0], args[1] if len(args) > 1 else kwargs["weight"]
    if kwargs and "weight" not in kwargs or w.ndim > 1:
        return NotImplemented
    if w.numel() != 1 and x.ndim >= 2:
        w = w.reshape((-1, *([1] * (x.ndim - 2))))
    elif w.numel() == 1:
        w = w.reshape(())
    else:
        return NotImplemented  # (the op's own error, from the loop)
    return where(x > 0, x, w * x)


@_rule("group_norm")
def _group_norm(func, lvl, args, kwargs):
    """With the affine weight or bias batched (per-example gradients make them so): the
    normalisation, batched by folding, then the affine part as batched ops."""
    names = ("input", "num_groups", "weight", "bias", "eps")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    w, b = bound.get("weight"), bound.get("bias")
    if type(w) is not BatchedTensor and type(b) is not BatchedTensor:
        return _vmap._fold(func, lvl, args, kwargs)
    x = bound["input"]
    out = func(x, bound["num_groups"], None, None, bound.get("eps", 1e-5))
    shape = (-1, *([1] * (x.ndim - 2)))
    if w is not None:
        out = out * w.reshape(shape)
    return out if b is None else out + b.reshape(shape)


# --- solves whose batch dimensions broadcast
def _lead(v, rank: int):
    """The physical ``v`` with ones after the batch dimension up to ``rank`` dimensions in all
    (its own batch dimensions then broadcast against the other operand's, right-aligned)."""
    for _ in range(rank - v.ndim):
        v = v.unsqueeze(1)
    return v


@_rule("solve", "solve_ex", "cholesky_solve")
def _solve(func, lvl, args, kwargs):
    """``linalg.solve(A, B)`` (and ``solve_ex``, ``cholesky_solve(B, L)``) whatever the operands'
    batch dimensions: each operand physical (expanded where unbatched), a vector right-hand side
    made a column (PyTorch's rule: 1-D, or A's shape without its last dimension), the batch
    dimensions lined up after the vmap batch. ``left=False`` as the transposed system."""
    name = _vmap._name(func)
    names = ("input", "input2", "upper") if name == "cholesky_solve" else ("A", "B")
    bound = dict(zip(names, args))
    rest = {k: v for k, v in kwargs.items() if k not in names}
    bound.update({k: v for k, v in kwargs.items() if k in names})
    if set(rest) - {"left", "upper", "check_errors"} or len(args) > len(names):
        return NotImplemented
    if name == "cholesky_solve":
        b, a = bound["input"], bound["input2"]
        upper = bound.get("upper", rest.pop("upper", False))
        rest["upper"] = upper
    else:
        a, b = bound["A"], bound["B"]
    left = rest.pop("left", True)
    vector = name != "cholesky_solve" and (
        b.ndim == 1 or b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape)[:-1])
    if vector and not left:
        return NotImplemented
    va, vb = _batched(a, lvl), _batched(b, lvl)
    if vector:
        vb = vb.unsqueeze(-1)
    rank = max(va.ndim, vb.ndim)
    va, vb = _lead(va, rank), _lead(vb, rank)
    if not left:  # (X A = B: A^T X^T = B^T)
        va, vb = va.mT, vb.mT
    out = func(vb, va, **rest) if name == "cholesky_solve" else func(va, vb, **rest)
    first = out[0] if name == "solve_ex" else out
    if not left:
        first = first.mT
    if vector:
        first = first.squeeze(-1)
    if name == "solve_ex":
        return _make(first, lvl), _make(out[1], lvl)
    return _make(first, lvl)


@_rule("batch_norm")
def _batch_norm(func, lvl, args, kwargs):
    """``batch_norm``: with batch statistics (training, no running statistics) each example's
    own, the vmap batch folded into the channels; in evaluation with a batched affine weight or
    bias, the normalisation then the affine part (as PyTorch's rule composes it); otherwise
    the examples folded into N (``_fold``). Running statistics updated per example loop."""
    names = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum",
             "eps")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    x, w, b = bound["input"], bound.get("weight"), bound.get("bias")
    rm, rv = bound.get("running_mean"), bound.get("running_var")
    training, eps = bound.get("training", False), bound.get("eps", 1e-5)
    if set(bound) - set(names) or type(rm) is BatchedTensor or type(rv) is BatchedTensor or \
            x.ndim < 2:
        return NotImplemented
    affine_batched = type(w) is BatchedTensor or type(b) is BatchedTensor
    if not training:
        if not affine_batched:
            return _vmap._fold(func, lvl, args, kwargs)
        shape = (-1, *([1] * (x.ndim - 2)))
        out = func(x, rm, rv, None, None, False, 0.0, eps)
        out = out if w is None else out * w.reshape(shape)
        return out if b is None else out + b.reshape(shape)
    if rm is not None or rv is not None:
        return NotImplemented
    size = lvl.size
    v = _batched(x, lvl)  # (B, N, C, *spatial)
    n, c = v.shape[1], v.shape[2]
    folded = v.movedim(0, 1).reshape((n, size * c, *tuple(v.shape)[3:]))
    if not folded.numel():
        raise RuntimeError("input tensor must have at least one element, but got input_sizes = "
                           f"{list(folded.shape)}")
    wf = None if w is None else _batched(w, lvl).reshape(-1)
    bf = None if b is None else _batched(b, lvl).reshape(-1)
    out = func(folded, None, None, wf, bf, True, bound.get("momentum", 0.1), eps)
    return _make(out.reshape((n, size, c, *tuple(v.shape)[3:])).movedim(1, 0), lvl)


# --- compositions of ops with rules, for functions that are kernels of their own
@_rule("outer", "ger")
def _outer(func, lvl, args, kwargs):
    a, b = args[0], args[1] if len(args) > 1 else kwargs.get("vec2", kwargs.get("other"))
    return a.unsqueeze(-1) * b


@_rule("vdot")
def _vdot(func, lvl, args, kwargs):
    """``sum(conj(a) * b)`` (the first operand conjugated, as ``vdot``'s)."""
    a, b = args[0], args[1] if len(args) > 1 else kwargs["other"]
    return (a.conj() * b).sum()


@_rule("inner")
def _inner(func, lvl, args, kwargs):
    a, b = args[0], args[1]
    if not a.ndim or not b.ndim:
        return a * b
    n = a.shape[-1]
    flat = a.reshape((-1, n)) @ b.reshape((-1, n)).transpose(0, 1)
    return flat.reshape((*tuple(a.shape)[:-1], *tuple(b.shape)[:-1]))


@_rule("softmin")
def _softmin(func, lvl, args, kwargs):
    return (-args[0]).softmax(*args[1:], **kwargs)


@_rule("atleast_1d", "atleast_2d", "atleast_3d")
def _atleast(func, lvl, args, kwargs):
    if len(args) != 1 or kwargs or not isinstance(args[0], Tensor):
        return NotImplemented
    x, want = args[0], int(_vmap._name(func)[-2])
    if x.ndim >= want:
        return x
    if x.ndim == 0:
        return x.reshape((1,) * want)
    if want == 2 or x.ndim == 2:  # ((n,) -> (1, n); (m, n) -> (m, n, 1))
        return x.unsqueeze(0) if x.ndim == 1 else x.unsqueeze(-1)
    return x.unsqueeze(0).unsqueeze(-1)  # ((n,) -> (1, n, 1))


@_rule("tile")
def _tile(func, lvl, args, kwargs):
    x = args[0]
    reps = _vmap._sizes(args) if len(args) > 1 else tuple(kwargs["dims"])
    return x.repeat((1,) * (x.ndim - len(reps)) + tuple(reps))


@_rule("rot90")
def _rot90(func, lvl, args, kwargs):
    x = args[0]
    k, _ = _get(args, kwargs, 1, "k", 1)
    dims, _ = _get(args, kwargs, 2, "dims", (0, 1))
    if x.ndim < 2 or len(dims) != 2:
        return NotImplemented  # (the op's own error, from the loop)
    d0, d1 = dims
    k %= 4
    if k == 1:
        return x.flip(d1).transpose(d0, d1)
    if k == 2:
        return x.flip((d0, d1))
    if k == 3:
        return x.flip(d0).transpose(d0, d1)
    return x.clone()


@_rule("repeat_interleave")
def _repeat_interleave(func, lvl, args, kwargs):
    x = args[0]
    repeats, _ = _get(args, kwargs, 1, "repeats")
    dim, _ = _get(args, kwargs, 2, "dim")
    if not isinstance(repeats, int) or "output_size" in kwargs or not isinstance(x, Tensor):
        return NotImplemented
    if dim is None:
        x, dim = x.flatten(), 0
    dim = _vmap._norm(dim, x.ndim)
    shape = tuple(x.shape)
    out = x.unsqueeze(dim + 1).expand((*shape[:dim + 1], repeats, *shape[dim + 1:]))
    return out.flatten(dim, dim + 1)


@_rule("diagflat")
def _diagflat(func, lvl, args, kwargs):
    offset, _ = _get(args, kwargs, 1, "offset", 0)
    return args[0].flatten().diag(offset)


@_rule("kron")
def _kron(func, lvl, args, kwargs):
    """The two operands' dimensions interleaved (one of them ones), multiplied, folded."""
    a, b = args[0], args[1]
    n = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (n - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (n - b.ndim) + tuple(b.shape))
    sa, sb = tuple(a.shape), tuple(b.shape)
    wide_a = a.reshape(tuple(s for d in sa for s in (d, 1)))
    wide_b = b.reshape(tuple(s for d in sb for s in (1, d)))
    return (wide_a * wide_b).reshape(tuple(x * y for x, y in zip(sa, sb)))


@_rule("isclose")
def _isclose(func, lvl, args, kwargs):
    a, b = args[0], args[1]
    rtol, _ = _get(args, kwargs, 2, "rtol", 1e-5)
    atol, _ = _get(args, kwargs, 3, "atol", 1e-8)
    equal_nan, _ = _get(args, kwargs, 4, "equal_nan", False)
    if not (a.dtype.is_floating_point and b.dtype.is_floating_point) or a.dtype != b.dtype:
        return NotImplemented
    close = a == b
    if equal_nan:
        close = close.logical_or(a.isnan().logical_and(b.isnan()))
    error = (a - b).abs()
    within = error.isfinite().logical_and(error <= atol + (b * rtol).abs())
    return close.logical_or(within)


@_rule("tensordot")
def _tensordot(func, lvl, args, kwargs):
    """The contracted dimensions of each operand moved together, both made matrices, one
    matrix product, the free dimensions unfolded."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    a, b, dims = bound["a"], bound["b"], bound.get("dims", 2)
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, (tuple, list)) and len(dims) == 2 and not isinstance(dims[0], Tensor):
        da, db = [list(d) if isinstance(d, (tuple, list)) else [d] for d in dims]
    else:
        return NotImplemented
    da = [_vmap._norm(d, a.ndim) for d in da]
    db = [_vmap._norm(d, b.ndim) for d in db]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    sa, sb = tuple(a.shape), tuple(b.shape)
    k = 1
    for d in da:
        k *= sa[d]
    left = a.permute((*free_a, *da)).reshape((-1, k))
    right = b.permute((*db, *free_b)).reshape((k, -1))
    return (left @ right).reshape((*[sa[d] for d in free_a], *[sb[d] for d in free_b]))


@_rule("rms_norm")
def _rms_norm(func, lvl, args, kwargs):
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    x, shape = bound["input"], bound["normalized_shape"]
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    eps = bound.get("eps")
    if eps is None:
        eps = float(np.finfo(innermost(x)._data.dtype).eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    weight = bound.get("weight")
    return out if weight is None else out * weight


@_rule("scaled_dot_product_attention")
def _attention(func, lvl, args, kwargs):
    """Attention with 4-D examples: the batch folded into their batch dimension, one call (the
    fused op where the examples' calls would take it); other ranks: its matrix products and
    softmax, as the examples' composite (``ops/attention.py``). Not with dropout."""
    bound = _bound(func, args, kwargs)
    if bound is None or bound.get("dropout_p", 0.0):
        return NotImplemented
    q, k, v = bound["query"], bound["key"], bound["value"]
    mask, scale = bound.get("attn_mask"), bound.get("scale")
    causal, gqa = bound.get("is_causal", False), bound.get("enable_gqa", False)
    if q.ndim == k.ndim == v.ndim == 4 and q.shape[0] == k.shape[0] == v.shape[0] and \
            (mask is None or mask.ndim in (2, 4)):
        size, batch = lvl.size, q.shape[0]
        q, k, v = (_batched(t, lvl).flatten(0, 1) for t in (q, k, v))
        if mask is not None and (_value_at(mask, lvl.id) is not None or mask.ndim == 4):
            m = _batched(mask, lvl)
            m = m.unsqueeze(1) if mask.ndim == 2 else m
            m = m.expand((size, batch, *tuple(m.shape)[2:])).flatten(0, 1)
            mask = m
        out = func(q, k, v, attn_mask=mask, is_causal=causal, scale=scale, enable_gqa=gqa)
        return _make(out.unflatten(0, (size, batch)), lvl)
    if gqa or (causal and mask is not None):
        return NotImplemented  # (the examples' own errors or rules, from the loop)
    if scale is None:
        scale = 1.0 / float(q.shape[-1]) ** 0.5
    return attention_weights(q, k, mask, causal, scale) @ v


@_rule("hinge_embedding_loss")
def _hinge_embedding_loss(func, lvl, args, kwargs):
    bound = _bound(func, args, kwargs)
    if bound is None or bound.get("size_average") is not None or \
            bound.get("reduce") is not None:
        return NotImplemented
    x, target = bound["input"], bound["target"]
    margin, reduction = bound.get("margin", 1.0), bound.get("reduction", "mean")
    zero = x * 0
    out = where(target != 1, (margin - x).clamp_min(0), zero) + where(target != -1, x, zero)
    if reduction == "none":
        return out
    return out.mean() if reduction == "mean" else out.sum()


@_rule("cartesian_prod")
def _cartesian_prod(func, lvl, args, kwargs):
    if len(args) == 1 and not kwargs and args[0].ndim == 1:
        return args[0]  # (of one tensor: that tensor, as PyTorch's)
    if kwargs or len(args) < 2 or any(t.ndim != 1 for t in args):
        return NotImplemented
    sizes = tuple(t.shape[0] for t in args)
    columns = []
    for i, t in enumerate(args):
        shape = [1] * len(args)
        shape[i] = sizes[i]
        columns.append(t.reshape(tuple(shape)).expand(sizes).flatten())
    return _vmap.stack(columns, 1)


@_rule("fftshift", "ifftshift")
def _fftshift(func, lvl, args, kwargs):
    """A roll of each of ``dim`` (every dimension when None) by half its size (``ifftshift``:
    back)."""
    x = args[0]
    dim, _ = _get(args, kwargs, 1, "dim")
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return x.clone()
    sign = -1 if _vmap._name(func) == "ifftshift" else 1
    return x.roll(tuple(sign * (x.shape[d] // 2) for d in dims), dims)


# --- in-place random fills: by the level's randomness, as random factories
@_rule("uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_",
       "log_normal_", "cauchy_")
def _random_fill(func, lvl, args, kwargs):
    """'error' raises PyTorch's error; 'different' fills the whole batch (each example its own
    draws); 'same' draws one example's and writes it into every example."""
    x = args[0]
    v = _value_at(x, lvl.id)
    if lvl.randomness == "error":
        raise RuntimeError(_vmap.RANDOMNESS_ERROR)
    if v is None or any(type(a) is BatchedTensor for a in (*args[1:], *kwargs.values())):
        return NotImplemented
    if lvl.randomness == "different":
        func(v, *args[1:], **kwargs)
        return x
    one = func(v[0].clone(), *args[1:], **kwargs)
    v.copy_(one.unsqueeze(0).expand(tuple(v.shape)))
    return x


@_rule("layer_norm")
def _layer_norm(func, lvl, args, kwargs):
    """With the affine weight or bias batched (per-example gradients): the normalisation of
    the trailing dimensions, then the affine part as batched ops (as PyTorch's rule composes
    it); otherwise the op on the physical value (the batch is one more leading dimension)."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    w, b = bound.get("weight"), bound.get("bias")
    if type(w) is not BatchedTensor and type(b) is not BatchedTensor:
        return _vmap._trailing(func, lvl, args, kwargs)
    x = bound["input"]
    out = func(x, bound["normalized_shape"], None, None, bound.get("eps", 1e-5))
    if w is not None:
        out = out * w
    return out if b is None else out + b


# --- functions of an unbatched tensor and a batched one
@_rule("expand_as", "reshape_as", "view_as")
def _as_shape_of(func, lvl, args, kwargs):
    """``x.expand_as(other)`` and kin: by ``other``'s (logical) shape, whichever is batched."""
    x, other = args[0], args[1] if len(args) > 1 else kwargs["other"]
    if _value_at(x, lvl.id) is not None:
        if _vmap._name(func) == "expand_as":
            return _vmap._expand_as(func, lvl, (x, other), {})
        return _vmap._reshape_as(func, lvl, (x, other), {})
    shape = tuple(other.shape)
    return x.expand(shape) if _vmap._name(func) == "expand_as" else x.reshape(shape)


@_rule("broadcast_tensors")
def _broadcast_tensors(func, lvl, args, kwargs):
    tensors = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    shape = _broadcast([tuple(t.shape) for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


@_rule("meshgrid")
def _meshgrid(func, lvl, args, kwargs):
    """Each 1-D tensor along its own dimension, expanded to the grid ('xy': the first two
    swapped), as PyTorch's."""
    tensors = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    indexing = kwargs.get("indexing", "ij")
    if any(t.ndim > 1 for t in tensors) or indexing not in ("ij", "xy") or \
            set(kwargs) - {"indexing"}:
        return NotImplemented
    tensors = [t.reshape((-1,)) for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        order[0], order[1] = 1, 0
    sizes = [tensors[i].shape[0] for i in order]
    out = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[order.index(k)] = t.shape[0]
        out.append(t.reshape(tuple(shape)).expand(tuple(sizes)))
    return tuple(out)


@_rule("renorm")
def _renorm(func, lvl, args, kwargs):
    """Each slice along ``dim`` scaled to a ``p``-norm of at most ``maxnorm`` (PyTorch's
    formula: ``maxnorm / (norm + 1e-7)`` where the norm is larger)."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    x, p, dim, top = bound["input"], bound["p"], bound["dim"], bound["maxnorm"]
    dim = _vmap._norm(dim, x.ndim)
    others = tuple(d for d in range(x.ndim) if d != dim)
    norm = x.norm(p, others, keepdim=True) if others else x.abs()
    return x * where(norm > top, top / (norm + 1e-7), 1.0)


@_rule("quantile", "nanquantile")
def _quantile(func, lvl, args, kwargs):
    """Of each example (flattened where ``dim`` is None) along its dimension; a 1-D ``q`` puts
    its dimension first, in front of the batch's, moved back behind it."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    x, q = bound["input"], bound["q"]
    v = _value_at(x, lvl.id)
    if v is None or type(q) is BatchedTensor or isinstance(q, Tensor) and q.ndim > 1:
        return NotImplemented
    dim, keepdim = bound.get("dim"), bound.get("keepdim", False)
    rest = {k: bound[k] for k in ("interpolation",) if k in bound}
    if dim is None:
        if keepdim:
            return NotImplemented
        out = func(_flat(v), q, 1, False, **rest)
    elif x.ndim == 0:  # (a 0-d example, its dim 0 or -1: each example's value, one of one)
        _vmap._norm(dim, 0)
        out = func(v.unsqueeze(1), q, 1, False, **rest)
    else:
        out = func(v, q, _vmap._norm(dim, x.ndim) + 1, keepdim, **rest)
    if isinstance(q, Tensor) and q.ndim == 1:
        out = out.movedim(0, 1)
    return _make(out, lvl)


@_rule("solve_triangular", "lu_solve")
def _solve_aligned(func, lvl, args, kwargs):
    """Solves whose operands' batch dimensions broadcast (``solve_triangular(A, B)``,
    ``lu_solve(LU, pivots, B)``): each operand physical, lined up after the vmap batch, the
    op's own keywords (``left``, ``upper`` ...) as given."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) != len(args) or any(isinstance(v, Tensor) for v in kwargs.values()):
        return NotImplemented
    phys = [_batched(a, lvl) for a in args]
    # (matrices to one rank; lu_solve's integer pivots, a dimension fewer, to one less)
    # (complex matrices are matrices too: only the integer pivots are a dimension fewer)
    rank = max(p.ndim + (0 if _inexact(p) else 1) for p in phys)
    phys = [_lead(p, rank if _inexact(p) else rank - 1) for p in phys]
    return _make(func(*phys, **kwargs), lvl)


def _inexact(t) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


@_rule("bilinear")
def _bilinear(func, lvl, args, kwargs):
    """``x1^T W_o x2 + b_o`` for each output ``o``, as matrix products of batched ops."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    x1, x2, w, b = bound["input1"], bound["input2"], bound["weight"], bound.get("bias")
    left = (x1.unsqueeze(-2).unsqueeze(-3) @ w).squeeze(-2)  # (..., out, in2)
    out = (left * x2.unsqueeze(-2)).sum(-1)
    return out if b is None else out + b
