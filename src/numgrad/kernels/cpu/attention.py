"""Scaled dot-product attention on the CPU, forward and backward, as PyTorch's flash kernel for
the CPU (``_scaled_dot_product_flash_attention_for_cpu``): the output and each query row's
logsumexp, which is all the backward keeps; the backward recomputes the weights from it.

The products (Q·Kᵀ, P·V, and the backward's five) are BLAS's GEMMs, one per (batch, head)
through NumPy's stacked ``matmul``, as PyTorch's kernel calls ``cpublas::gemm`` per block: a Numba
loop is a fraction of a GEMM's speed here (no FMA contraction without ``fastmath``). Everything
between them is one Numba pass over each row of scores: the scale, the causal and the explicit
mask (a float bias, ``-inf`` where a bool mask is False), the row's max, the exps, the sum and the
logsumexp (forward); the weights again from the logsumexp, and ``P * (dP - rowsum(dO * O)) *
scale`` (backward). The rows of (batch, head) blocks are shared among Numba's threads where the
scores are large and the machine is not busy (``_workers.busy``; the values do not depend on it).

PyTorch's semantics: a row whose every key is masked gives 0 and no gradient (logsumexp 0); a NaN
score makes its row NaN (as PyTorch's math path; its flash kernel's NaN handling depends on its
vector loop).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .elementwise import PARALLEL_THRESHOLD, _threaded
from .mathfuncs import fast_exp
from .softmax import _lane_max, _lane_sum, _zero_of

# Numba's cache keys a kernel on its own file only; these inline mathfuncs.py, so this digest of
# it (checked by tests/test_attention.py, as softmax.py's by tests/test_mathfuncs.py) invalidates
# the cache with it.
MATHFUNCS_DIGEST = "9fb3bd72168999de"


@njit(cache=True, error_model="numpy", inline="always")
def _bias_row(row, bias, b, h, i, strides, has_bias, causal, scale):
    """``row`` (one query's scores) scaled, plus the mask's bias, ``-inf`` past the diagonal
    with ``causal`` (each a loop of its own: they vectorise)."""
    n = row.shape[0]
    sb, sh, si, sj = strides
    start = b * sb + h * sh + i * si
    if has_bias:
        for j in range(n):
            row[j] = row[j] * scale + bias[start + j * sj]
    else:
        for j in range(n):
            row[j] = row[j] * scale
    if causal:
        ninf = _zero_of(scale) - np.float32(np.inf)  # (-inf in the rows' dtype)
        for j in range(i + 1, n):
            row[j] = ninf


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


@njit(cache=True, error_model="numpy", inline="always")
def _forward_block(scores, bias, strides, has_bias, causal, scale, lse, n):
    heads = scores.shape[1]
    b, h = n // heads, n % heads
    for i in range(scores.shape[2]):
        row = scores[b, h, i]
        _bias_row(row, bias, b, h, i, strides, has_bias, causal, scale)
        m = _row_max(row)
        if m == -np.inf:  # (every key masked: weights 0, PyTorch's logsumexp 0)
            row[:] = 0
            lse[b, h, i] = 0
            continue
        for j in range(row.shape[0]):  # (the exps first, alone: they vectorise, as the sum)
            row[j] = fast_exp(row[j] - m)
        total = _lane_sum(row)
        inv = 1.0 / total
        for j in range(row.shape[0]):
            row[j] = row[j] * inv
        lse[b, h, i] = m + math.log(total)


@njit(cache=True, error_model="numpy")
def _forward_rows(scores, bias, strides, has_bias, causal, scale, lse):
    for n in range(scores.shape[0] * scores.shape[1]):
        _forward_block(scores, bias, strides, has_bias, causal, scale, lse, n)


@njit(cache=True, error_model="numpy", parallel=True)
def _forward_rows_parallel(scores, bias, strides, has_bias, causal, scale, lse):
    for n in prange(scores.shape[0] * scores.shape[1]):
        _forward_block(scores, bias, strides, has_bias, causal, scale, lse, n)


@njit(cache=True, error_model="numpy", inline="always")
def _backward_block(scores, dp, out, grad, bias, strides, has_bias, causal, scale, lse, n):
    """Row by row: the weights ``P`` into ``scores``, ``P * (dP - D) * scale`` into ``dp``, ``D``
    the row's ``sum(dO * O)``."""
    heads = scores.shape[1]
    b, h = n // heads, n % heads
    for i in range(scores.shape[2]):
        row, d_row = scores[b, h, i], dp[b, h, i]
        _bias_row(row, bias, b, h, i, strides, has_bias, causal, scale)
        o, g = out[b, h, i], grad[b, h, i]
        dot = 0.0
        for e in range(o.shape[0]):
            dot += o[e] * g[e]
        s = lse[b, h, i]
        for j in range(row.shape[0]):
            p = fast_exp(row[j] - s)
            row[j] = p
            d_row[j] = p * (d_row[j] - dot) * scale


@njit(cache=True, error_model="numpy")
def _backward_rows(scores, dp, out, grad, bias, strides, has_bias, causal, scale, lse):
    for n in range(scores.shape[0] * scores.shape[1]):
        _backward_block(scores, dp, out, grad, bias, strides, has_bias, causal, scale, lse, n)


@njit(cache=True, error_model="numpy", parallel=True)
def _backward_rows_parallel(scores, dp, out, grad, bias, strides, has_bias, causal, scale, lse):
    for n in prange(scores.shape[0] * scores.shape[1]):
        _backward_block(scores, dp, out, grad, bias, strides, has_bias, causal, scale, lse, n)


def _threads(scores: np.ndarray) -> bool:
    """Whether the rows are worth Numba's threads (large, several blocks, the machine free)."""
    return (scores.size >= PARALLEL_THRESHOLD and scores.shape[0] * scores.shape[1] > 1
            and _threaded(scores.dtype, scores.dtype))


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


def _scores(q, k):
    """``q @ kᵀ`` per (batch, head), (B, Hq, L, S) C-contiguous, key heads shared by groups."""
    kt = np.swapaxes(k, -1, -2)
    if k.shape[1] == q.shape[1]:
        return np.matmul(q, kt)
    s = np.matmul(_grouped(q, k.shape[1]), kt[:, :, None])
    return s.reshape(q.shape[:3] + (k.shape[2],))


def attention_forward(q, k, v, mask, causal: bool, scale: float):
    """``(softmax(q @ kᵀ * scale + bias) @ v, logsumexp)`` of 4-D ``q`` (B, Hq, L, E), ``k``,
    ``v`` (B, Hk, S, E), Hk dividing Hq; ``mask`` None, bool or float broadcasting to (B, Hq, L,
    S). The output is laid out as ``q`` and the logsumexp (B, L, Hq), as PyTorch's."""
    B, H, L = q.shape[:3]
    scores = _scores(q, k)
    bias, strides, has_bias = _bias(mask, scores.shape, scores.dtype)
    lse = np.empty((B, L, H), q.dtype).transpose(0, 2, 1)
    kernel = _forward_rows_parallel if _threads(scores) else _forward_rows
    kernel(scores, bias, strides, has_bias, causal, scores.dtype.type(scale), lse)
    out = np.empty_like(q)  # (in the query's layout, as PyTorch's)
    if k.shape[1] == H:
        np.matmul(scores, v, out=out)
    else:
        np.matmul(_grouped(scores, k.shape[1]), v[:, :, None], out=_grouped(out, k.shape[1]))
    return out, lse


def attention_backward(grad, q, k, v, out, lse, mask, causal: bool, scale: float,
                       needs=(True, True, True)):
    """The gradients of ``attention_forward`` with respect to ``q``, ``k``, ``v`` (None where
    ``needs`` says not), from the output's gradient ``grad``, the output and the logsumexp."""
    scores = _scores(q, k)
    kv_heads = k.shape[1]
    grouped = kv_heads != q.shape[1]
    vt = np.swapaxes(v, -1, -2)
    dp = np.matmul(_grouped(grad, kv_heads), vt[:, :, None]).reshape(scores.shape) if grouped \
        else np.matmul(grad, vt)
    bias, strides, has_bias = _bias(mask, scores.shape, scores.dtype)
    dt = scores.dtype.type
    kernel = _backward_rows_parallel if _threads(scores) else _backward_rows
    kernel(scores, dp, np.ascontiguousarray(out), np.ascontiguousarray(grad, q.dtype), bias,
           strides, has_bias, causal, dt(scale), np.ascontiguousarray(lse))
    need_q, need_k, need_v = needs
    dq = dk = dv = None
    if need_q:  # dS · K
        dq = np.matmul(_grouped(dp, kv_heads), k[:, :, None]).reshape(q.shape) if grouped \
            else np.matmul(dp, k)
    if need_k:  # dSᵀ · Q, summed over each key head's group
        dk = np.matmul(np.swapaxes(dp, -1, -2), q) if not grouped else \
            np.matmul(np.swapaxes(_grouped(dp, kv_heads), -1, -2), _grouped(q, kv_heads)).sum(2)
    if need_v:  # Pᵀ · dO
        dv = np.matmul(np.swapaxes(scores, -1, -2), grad) if not grouped else \
            np.matmul(np.swapaxes(_grouped(scores, kv_heads), -1, -2),
                      _grouped(grad, kv_heads)).sum(2)
    return dq, dk, dv
