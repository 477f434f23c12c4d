"""Scaled dot-product attention on the CPU, forward and backward, as PyTorch's flash kernel for
the CPU (``_scaled_dot_product_flash_attention_for_cpu``): the output and each query row's
logsumexp, which is all the backward keeps; the backward recomputes the weights from it.

The products (Q·Kᵀ, P·V, and the backward's five) are BLAS's GEMMs, one per (batch, head)
through NumPy's stacked ``matmul``, as PyTorch's kernel calls ``cpublas::gemm`` per block: a Numba
loop is a fraction of a GEMM's speed here (no FMA contraction without ``fastmath``). Everything
between them is one Numba pass over each row of scores: the scale, the causal and the explicit
mask (a float bias, ``-inf`` where a bool mask is False), the row's max, the exps, the sum and the
logsumexp (forward); the weights again from the logsumexp, and ``P * (dP - rowsum(dO * O)) *
scale`` (backward). Spans of the batch, each its products and its rows, are shared among Python
threads where the scores are many and the machine is not busy (``_workers``, as the convolutions:
Numba's ``prange`` threads and BLAS's took turns at each small step; the values do not depend on
the split), BLAS on one thread meanwhile; a batch of fewer samples than threads shares each
sample's key heads instead.

With ``is_causal`` the queries go in blocks of rows (``_query_blocks``, PyTorch's split sizes),
each block's products over the keys up to its last row's diagonal only: the scores past it are
neither computed nor multiplied (a quarter of the products' work at 64 positions, 38 % at 1,024).
The backward's key and value gradients are the blocks' parts summed, the block of the last rows
first. One sample of 1,024 positions, 4 heads of 64, float32, causal, forward and backward
through the op (the heads a view of a (B, T, H, E) tensor), before and after in alternating
processes: one thread 77.2 -> 66.0 ms (1.48 -> 1.01 times PyTorch's flash kernel), two threads
94.4 -> 37.6 ms with the heads shared (2.72 -> 1.06); at 64 positions (the tiny GPT) as fast
as one block.

PyTorch's semantics: a row whose every key is masked gives 0 and no gradient (logsumexp 0); a NaN
score makes its row NaN (as PyTorch's math path; its flash kernel's NaN handling depends on its
vector loop).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ... import _pool
from ..._threads import one_blas_thread
from . import _workers
from .layout import ascontiguous
from .mathfuncs import fast_exp
from .softmax import _lane_max, _lane_sum, _zero_of



def _like(v, x):
    """``x`` in ``v``'s float type (the overload below, in compiled code)."""
    return type(v)(x)


@overload(_like, inline="always")
def _like_typed(v, x):
    if v == types.float32:
        return lambda v, x: np.float32(x)
    return lambda v, x: np.float64(x)


@njit(cache=True, error_model="numpy", inline="always")
def _bias_row(row, bias, b, h, i, strides, has_bias, causal, scale):
    """``row`` (the scores of query ``i``, counted over the whole sequence) scaled, plus the
    mask's bias, up to its last key not past the diagonal with ``causal`` (in a loop that
    vectorises): returns that part of the row (the causal rest is ``-inf``, weight 0, which the
    callers write as such)."""
    n = row.shape[0]
    valid = min(i + 1, n) if causal else n
    sb, sh, si, sj = strides
    start = b * sb + h * sh + i * si
    if has_bias:
        for j in range(valid):
            row[j] = row[j] * scale + bias[start + j * sj]
    else:
        for j in range(valid):
            row[j] = row[j] * scale
    return row[:valid]


@njit(cache=True, error_model="numpy", inline="always")
def _row_max(row):
    """The max of ``row``: NaN if it holds one (``_lane_max`` may skip a NaN, which the sum of
    the exps then shows, but not where every other score is ``-inf``)."""
    m = _lane_max(row)
    if m == -np.inf:
        for j in range(row.shape[0]):
            if row[j] != row[j]:
                return row[j]
    return m


@njit(cache=True, error_model="numpy", nogil=True)
def _forward_rows(scores, bias, strides, has_bias, causal, scale, lse, row0):
    """The weights of the rows of ``scores`` (B, H, rows, keys), query ``row0 + i`` in row
    ``i`` (``_query_blocks``), and their logsumexps into ``lse`` (B, H, L). (One function, not
    a loop calling an inlined one: Numba copies an inlined function's IR, and the copies were
    most of this kernel's first compilation.)"""
    heads = scores.shape[1]
    for n in range(scores.shape[0] * heads):
        b, h = n // heads, n % heads
        for i in range(scores.shape[2]):
            row = scores[b, h, i]
            part = _bias_row(row, bias, b, h, row0 + i, strides, has_bias, causal, scale)
            row[part.shape[0]:] = 0
            m = _row_max(part)
            if m == -np.inf:  # (every key masked: weights 0, PyTorch's logsumexp 0)
                part[:] = 0
                lse[b, h, row0 + i] = 0
                continue
            for j in range(part.shape[0]):  # (the exps first, alone: they vectorise, as the sum)
                part[j] = fast_exp(part[j] - m)
            total = _lane_sum(part)
            inv = _like(scale, 1.0 / total)  # (the rows' dtype: the loop then vectorises wider)
            for j in range(part.shape[0]):
                part[j] = part[j] * inv
            lse[b, h, row0 + i] = m + math.log(total)


@njit(cache=True, error_model="numpy", nogil=True)
def _backward_rows(scores, dp, out, grad, bias, strides, has_bias, causal, scale, lse, row0):
    """Row by row: the weights ``P`` into ``scores``, ``P * (dP - D) * scale`` into ``dp``, ``D``
    the row's ``sum(dO * O)`` (0 past the diagonal with ``causal``); row ``i`` of ``scores``
    and ``dp`` is query ``row0 + i`` of ``out``, ``grad`` and ``lse``."""
    heads = scores.shape[1]
    for n in range(scores.shape[0] * heads):
        b, h = n // heads, n % heads
        for i in range(scores.shape[2]):
            row, d_row = scores[b, h, i], dp[b, h, i]
            part = _bias_row(row, bias, b, h, row0 + i, strides, has_bias, causal, scale)
            valid = part.shape[0]
            row[valid:] = 0
            d_row[valid:] = 0
            o, g = out[b, h, row0 + i], grad[b, h, row0 + i]
            total = 0.0
            for e in range(o.shape[0]):
                total += o[e] * g[e]
            dot = _like(scale, total)
            s = lse[b, h, row0 + i]
            for j in range(valid):
                part[j] = fast_exp(part[j] - s)
            for j in range(valid):
                d_row[j] = part[j] * (d_row[j] - dot) * scale


# From this many scores in all, the batches are shared among threads (``_workers``): on the tiny
# GPT's layer, (16, 4, 64, 64), a pass is about a millisecond, which pays for one start and join.
THREADED_SCORES = 1 << 16


def _on_threads(work, batch: int, kv_heads: int, size: int) -> None:
    """``work((batch span, key-head span), slot)`` over parts of the batch: spans ``(start,
    stop)`` of it, or where it has fewer samples than threads, each sample's key heads in spans
    (a long sequence's few samples), on up to ``get_num_threads()`` Python threads where the
    ``size`` scores are many and the machine not busy (``_workers``; the values do not depend on
    it: each (sample, head) is computed alone), each part's products on one BLAS thread (small
    products on BLAS's threads wait on each other), as the convolutions share their batches."""
    threads = _workers.threads_for(batch * kv_heads, size >= THREADED_SCORES)
    if threads <= 1:
        with one_blas_thread():
            work(((0, batch), (0, kv_heads)), 0)
        return
    if batch >= threads:
        parts = [(span, (0, kv_heads)) for span in _workers.spans(batch, threads)]
    else:
        per = -(-threads // batch)
        parts = [((n, n + 1), span) for n in range(batch) for span in _workers.spans(kv_heads, per)]
    _workers.run(parts, work, threads)


def _bias(mask, shape: tuple, dtype):
    """(flat bias, its strides in elements over ``shape`` (B, H, L, S), whether there is one):
    a float ``mask`` as it is, a bool one as 0 where True and ``-inf`` where False, broadcast by
    strides of 0."""
    if mask is None:
        return np.zeros(1, dtype), (0, 0, 0, 0), False
    if mask.dtype == np.bool_:
        bias = np.where(mask, dtype.type(0), dtype.type(-np.inf))
    else:
        bias = np.ascontiguousarray(mask, dtype)
    full = np.broadcast_to(bias, shape)  # (PyTorch's error where it does not broadcast)
    strides = tuple(s // bias.itemsize for s in full.strides)
    return bias.reshape(-1), strides, True


def _grouped(q: np.ndarray, kv_heads: int) -> np.ndarray:
    """``q`` (B, Hq, ...) as (B, Hk, Hq / Hk, ...): each key head's group of query heads."""
    return q.reshape(q.shape[:1] + (kv_heads, q.shape[1] // kv_heads) + q.shape[2:])


def _by_heads(a, b, kv_heads: int, out=None):
    """``a @ b`` per (batch, head), ``a`` (B, Hq, ...) and ``b`` (B, Hk, ...): each key head's
    ``b`` shared by its group of query heads."""
    if kv_heads == a.shape[1]:
        return np.matmul(a, b, out=out)
    made = np.matmul(_grouped(a, kv_heads), b[:, :, None],
                     out=None if out is None else _grouped(out, kv_heads))
    return made.reshape(a.shape[:3] + b.shape[3:])


def _summed_by_heads(a, b, kv_heads: int, out):
    """``out[...] = a @ b`` per (batch, query head), summed over each key head's group: (B, Hk,
    ...)."""
    if kv_heads == a.shape[1]:
        np.matmul(a, b, out=out)
    else:
        out[...] = np.matmul(_grouped(a, kv_heads), _grouped(b, kv_heads)).sum(2)


def _scores(q, kt, kv_heads: int):
    """``q @ kᵀ`` per (batch, head), (B, Hq, L, S), in a pooled buffer where large."""
    return _by_heads(q, kt, kv_heads, out=_pool.empty(q.shape[:3] + kt.shape[3:], q.dtype))


# With ``is_causal``, the queries go in blocks of rows, as PyTorch's flash kernel splits them, each
# block's products over only the keys up to its last row's diagonal: the scores past it are
# neither computed nor multiplied by the values (weight 0). Rows per block: 32 below 192
# queries, 64 below 768, 256 from there (PyTorch's ``q_split_size``); one block below two.
def _query_blocks(L: int, S: int, causal: bool) -> list:
    """``(first row, last row + 1, keys)`` of each block of queries: one block of all ``L``
    rows and ``S`` keys, or with ``causal`` blocks whose keys stop at their last row's diagonal
    (``min(stop, S)``), the last block first (its keys are the most; the backward's key
    gradients are written by it and added to by the others)."""
    size = 32 if L < 192 else 64 if L < 768 else 256
    if not causal or L < 2 * size or S == 0:
        return [(0, L, S)]
    return [(start, min(L, start + size), min(S, start + size))
            for start in range(0, L, size)][::-1]


def attention_forward(q, k, v, mask, causal: bool, scale: float):
    """``(softmax(q @ kᵀ * scale + bias) @ v, logsumexp)`` of 4-D ``q`` (B, Hq, L, E), ``k``,
    ``v`` (B, Hk, S, E), Hk dividing Hq; ``mask`` None, bool or float broadcasting to (B, Hq, L,
    S). The output is laid out as ``q`` and the logsumexp (B, L, Hq), as PyTorch's."""
    B, H, L = q.shape[:3]
    kv_heads, S = k.shape[1], k.shape[2]
    bias, strides, has_bias = _bias(mask, (B, H, L, S), q.dtype)
    lse = np.empty((B, L, H), q.dtype).transpose(0, 2, 1)
    out = _pool.empty_like(q)  # (in the query's layout, as PyTorch's)
    kt, dt_scale = np.swapaxes(k, -1, -2), q.dtype.type(scale)
    blocks = _query_blocks(L, S, causal)

    def work(part, slot):
        (a, b), (h0, h1) = part
        group, kv = H // kv_heads, h1 - h0  # (query heads h0 * group on: key heads h0 on)
        at = (slice(a, b), slice(h0 * group, h1 * group))
        qs, ks, vs, ls = q[at], kt[a:b, h0:h1], v[a:b, h0:h1], lse[at]
        os_, bs = out[at], bias[a * strides[0] + h0 * group * strides[1]:]
        for r0, r1, keys in blocks:
            scores = _scores(qs[:, :, r0:r1], ks[..., :keys], kv)
            _forward_rows(scores, bs, strides, has_bias, causal, dt_scale, ls, r0)
            _by_heads(scores, vs[:, :, :keys], kv, out=os_[:, :, r0:r1])

    _on_threads(work, B, kv_heads, B * H * L * S)
    return out, lse


def attention_backward(grad, q, k, v, out, lse, mask, causal: bool, scale: float,
                       needs=(True, True, True)):
    """The gradients of ``attention_forward`` with respect to ``q``, ``k``, ``v`` (None where
    ``needs`` says not), from the output's gradient ``grad``, the output and the logsumexp."""
    B, H, L = q.shape[:3]
    kv_heads, S = k.shape[1], k.shape[2]
    bias, strides, has_bias = _bias(mask, (B, H, L, S), q.dtype)
    need_q, need_k, need_v = needs
    # (each gradient laid out as its input, as PyTorch's: the heads of a (B, T, H, E) tensor's
    # view get theirs back as such, so that the views' backwards need no copies)
    dq = _pool.empty_like(q) if need_q else None
    dk = _pool.empty_like(k) if need_k else None
    dv = _pool.empty_like(v) if need_v else None
    kt, vt, dt_scale = np.swapaxes(k, -1, -2), np.swapaxes(v, -1, -2), q.dtype.type(scale)
    grad = np.asarray(grad, q.dtype)
    out, lse = ascontiguous(out), np.ascontiguousarray(lse)
    blocks = _query_blocks(L, S, causal)

    def work(part, slot):
        (a, b), (h0, h1) = part
        group, kv = H // kv_heads, h1 - h0  # (query heads h0 * group on: key heads h0 on)
        at = (slice(a, b), slice(h0 * group, h1 * group))
        qs, g, ks, kts, vts = q[at], grad[at], k[a:b, h0:h1], kt[a:b, h0:h1], vt[a:b, h0:h1]
        g_rows, bs = ascontiguous(g), bias[a * strides[0] + h0 * group * strides[1]:]
        for r0, r1, keys in blocks:
            qb, gb = qs[:, :, r0:r1], g[:, :, r0:r1]
            scores = _scores(qb, kts[..., :keys], kv)
            dp = _scores(gb, vts[..., :keys], kv)
            _backward_rows(scores, dp, out[at], g_rows, bs, strides, has_bias, causal, dt_scale,
                           lse[at], r0)
            if need_q:  # dS · K
                _by_heads(dp, ks[:, :, :keys], kv, out=dq[at][:, :, r0:r1])
            first = r1 == L  # (the last rows' block, first: it writes every key's gradient)
            if need_k:  # dSᵀ · Q, summed over each key head's group
                _key_gradient(np.swapaxes(dp, -1, -2), qb, kv, dk[a:b, h0:h1], keys,
                              first)
            if need_v:  # Pᵀ · dO
                _key_gradient(np.swapaxes(scores, -1, -2), gb, kv, dv[a:b, h0:h1], keys,
                              first)

    _on_threads(work, B, kv_heads, B * H * L * S)
    return dq, dk, dv


def _key_gradient(a, b, kv_heads: int, out, keys: int, first: bool) -> None:
    """A block of queries' part of a key-side gradient, ``a @ b`` summed over each key head's
    group, into the first ``keys`` keys of ``out`` (B, Hk, S, E): written there (and zeros past
    them, keys no query reaches) by the first block, added by the others."""
    if first:
        _summed_by_heads(a, b, kv_heads, out[:, :, :keys])
        out[:, :, keys:] = 0
        return
    part = np.empty(out.shape[:2] + (keys, out.shape[3]), out.dtype)
    _summed_by_heads(a, b, kv_heads, part)
    out[:, :, :keys] += part
