"""The LSTM layer's CPU kernels: a whole sequence each way, as PyTorch's CPU path (oneDNN's RNN
layer) runs it. Forward, each step is one matrix product of the hidden state with ``W_hh`` (BLAS)
and one pass over the four gates (``_cell``: their activations, the cell state and the hidden
state). Backward runs the steps in reverse, each one pass over the gates (``_cell_backward``) and
one product with ``W_hh`` for the hidden state's gradient, and then ``W_hh``'s gradient as one
product over all steps. The input projection (``x W_ih^T + b``, every step at once) is the
caller's ``linear``, so its gradients are one product each too.

The steps of a block of rows run inside one Numba function (``_forward_rows``,
``_backward_rows``), which calls NumPy's own GEMM (``blas.gemm_columns``) for each step's product:
no Python between the steps, which on two threads took turns at the interpreter 35 times a layer.
The word-LM's layer (35 steps, batch 20, hidden 200, two threads): forward 2.70 -> 1.70 ms,
backward 4.53 -> 3.45 (with ``_column_blocks``), medians of 30; its training step 86.5 -> 82.7 ms.
Where that BLAS cannot be called from Numba (``blas.AVAILABLE``), the steps loop in Python.

Gate order (i, f, g, o) and formulas as PyTorch's: ``c' = f c + i g``, ``h' = o tanh(c')``, with
i, f, o sigmoids and g a tanh of the step's row of the projection plus ``h W_hh^T``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..._threads import blas_core, one_blas_thread
from ... import _pool
from . import _workers, blas
from .linalg import ONE_THREAD_MACS
from .mathfuncs import fast_sigmoid, fast_tanh


# The steps' products run on one BLAS thread: a loop of small products otherwise waits on
# BLAS's threads at every step; a large one is split over numgrad's worker threads
# (``linalg.matmul_into``), as eager's products are.


@njit(cache=True, error_model="numpy", nogil=True)
def _cell(gx, gh, c_prev, acts, c, h):
    """One step's gates, cell and hidden state, a row of the batch at a time, in two loops
    that vectorise (mathfuncs' sigmoid and tanh, where libm's were called per element; each
    inlined once or twice: every copy costs compile time)."""
    batch, hidden = c_prev.shape
    for b in range(batch):
        x, r, a, cp, cb, hb = gx[b], gh[b], acts[b], c_prev[b], c[b], h[b]
        for j in range(4 * hidden):
            z = x[j] + r[j]
            a[j] = fast_tanh(z) if 2 * hidden <= j < 3 * hidden else fast_sigmoid(z)
        for j in range(hidden):
            cell = a[hidden + j] * cp[j] + a[j] * a[2 * hidden + j]
            cb[j] = cell
            hb[j] = a[3 * hidden + j] * fast_tanh(cell)


@njit(cache=True, error_model="numpy", nogil=True)
def _cell_backward(acts, c, c_prev, dh_out, dh_rec, dc_next, dgates, dc_prev):
    batch, hidden = c_prev.shape
    for b in range(batch):
        a, cb, cp, dho, dhr, dcn = acts[b], c[b], c_prev[b], dh_out[b], dh_rec[b], dc_next[b]
        dg, dcp = dgates[b], dc_prev[b]
        for j in range(hidden):
            i = a[j]
            f = a[hidden + j]
            g = a[2 * hidden + j]
            o = a[3 * hidden + j]
            tc = fast_tanh(cb[j])
            dh = dho[j] + dhr[j]
            dc = dcn[j] + dh * o * (1.0 - tc * tc)
            dg[j] = dc * g * i * (1.0 - i)
            dg[hidden + j] = dc * cp[j] * f * (1.0 - f)
            dg[2 * hidden + j] = dc * i * (1.0 - g * g)
            dg[3 * hidden + j] = dh * tc * o * (1.0 - o)
            dcp[j] = dc * f


# The rows of the batch are independent all through a sequence (row b of each step's state
# reads row b of the last step's only), so on several threads a layer's recurrence is cut into
# blocks of rows, each run through every step on one thread: one start and join per layer,
# where splitting each step's product joined the threads 35 times a layer and left the gates to
# one of them. The blocks are cut at multiples of ROW_TILE rows, with 2 rows or more each:
# OpenBLAS (Haswell's kernels, float32 and float64) computes such a block's rows with the same
# bits as the whole product (a cut elsewhere, or a 1-row block, which NumPy gives to GEMV, moved
# the last bits), so a layer's values are the same on one thread and on several. One thread
# runs the whole batch as one block: the same blocks on one thread as on two cost it 20% more
# CPU (a step's products of 12 and 8 rows took 1.25x one of 20 rows).
ROW_TILE = 12
# Layers of fewer steps x rows x gates x hidden multiply-adds run on the calling thread.
THREADED_MACS = 1 << 22


def _batch_spans(steps: int, batch: int, gates: int, hidden: int):
    """The blocks of rows of a layer's recurrence, and the threads that run them: one block a
    thread, of equal rows (2 or more), where every step's product is made by OpenBLAS's
    small-matrix kernels (``_small_steps``); else cut at multiples of ``ROW_TILE``."""
    threads = _workers.threads_for(-(-batch // ROW_TILE),
                                   steps * batch * gates * hidden >= THREADED_MACS)
    if threads > 1 and batch >= 2 * threads and _small_steps(batch, gates, hidden):
        return _workers.spans(batch, threads), threads
    return _tiled(batch, threads), threads


def _small_steps(batch: int, gates: int, hidden: int) -> bool:
    """Whether each column block (``_column_blocks``) of both step products, the forward's
    ``(batch, hidden) @ (hidden, gates)`` and the backward's ``(batch, gates) @ (gates,
    hidden)``, is a small-matrix kernel's product for the whole batch: each entry is then one
    sum over the depth whatever the rows around it, so blocks of any rows have the whole batch's
    bits, and the rows are shared evenly. Cut at multiples of ``ROW_TILE``, the character
    LSTM's batch of 32 was blocks of 12, 12 and 8 rows, one thread running 20 of them: halves
    took its layer's forward and backward 0.86 and 0.91 of their time (64 steps, hidden 128,
    two threads, 40 alternating pairs), the word-LM's (batch 20, hidden 200) 0.95 and 0.96."""
    if not IN_NUMBA or blas_core() not in SMALL_KERNEL_CORES:
        return False
    return all((stop - start) * batch * depth <= SMALL_MACS
               for depth, cols in ((hidden, gates), (gates, hidden))
               for start, stop in _column_blocks(batch, depth, cols))


def _tiled(rows: int, threads: int) -> list:
    """``(start, stop)`` blocks of ``range(rows)`` for ``threads`` threads, cut at multiples of
    ``ROW_TILE`` with 2 rows or more each (one block for one thread)."""
    if threads <= 1 or rows < ROW_TILE + 2:
        return [(0, rows)]
    step = ROW_TILE * max(1, round(rows / (threads * ROW_TILE)))
    cuts = [0, *range(step, rows - 1, step), rows]
    return list(zip(cuts[:-1], cuts[1:]))


# OpenBLAS's AVX-512 kernel families take a product of up to 100**3 multiply-adds through its
# small-matrix kernels, which read the operands where they are; a larger one packs both first,
# which at an LSTM step's shapes costs a quarter of the product. There, a step's product is made
# in blocks of columns under that size (``_column_blocks``): the word-LM's (20 x 200) @ (200 x 800)
# in 4 blocks took 64.5 us against 82.1 one thread, its rows 12 and 8 (two threads) 42.7 and 30.3
# against 57.0 and 46.2; the backward's (x 800) @ (800 x 200) in 4 blocks of 50 columns 71.5
# against 87.4, 44.0 and 37.2 against 55.3 and 47.8 (float64 1.2-1.4x too). Haswell's kernels
# have no such path, and the blocks cost them 10-30%: one product there.
IN_NUMBA = blas.AVAILABLE  # (the steps' products called from the kernels; else np.matmul's)
SMALL_KERNEL_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")
SMALL_MACS = 100 ** 3
MIN_BLOCK = 32  # (narrower blocks are not made: the calls would cost more than the packing)
# The blocks are as wide as fits, in multiples of 16 columns, the last one narrower: the
# character LSTM's (32 x 128) @ (128 x 512) steps in blocks of 171 columns and their backward's
# (32 x 512) @ (512 x 128) in blocks of 43 (equal thirds) took 7% and 5% more of the layer's
# forward and backward (64 steps, two threads, 40 alternating pairs) than blocks of 240 and 48.


def _column_blocks(rows: int, depth: int, cols: int) -> list:
    """``(start, stop)`` blocks of the columns of a step's ``(rows, depth) @ (depth, cols)``:
    each under ``SMALL_MACS`` multiply-adds for the whole batch's ``rows`` (a block of fewer rows
    on a thread then takes the same kernel: the same bits on any number of threads), where
    OpenBLAS has its small-matrix kernels and blocks of ``MIN_BLOCK`` columns or more do;
    else one block."""
    if rows * depth * cols <= SMALL_MACS or blas_core() not in SMALL_KERNEL_CORES:
        return [(0, cols)]
    width = SMALL_MACS // max(1, rows * depth)
    width -= width % 16  # (whole AVX-512 vectors of float32, above)
    if width < MIN_BLOCK:
        return [(0, cols)]
    return [(start, min(cols, start + width)) for start in range(0, cols, width)]


@njit(cache=True, nogil=True)
def _product(a, b, out, width):
    """``out = a @ b``, ``width`` columns at a time (``_column_blocks``' step)."""
    cols = b.shape[1]
    for start in range(0, cols, width):
        blas.gemm_columns(a, b, out, start, min(cols, start + width))


@njit(cache=True, error_model="numpy", nogil=True)
def _forward_rows(gx, h0, c0, w_t, acts, cs, y, gh, r0, r1, width):
    """Rows ``r0:r1`` of ``lstm_forward``'s recurrence through every step, the steps' products
    called from here (``blas.gemm_columns``): no Python between the steps."""
    h, c, g = h0[r0:r1], c0[r0:r1], gh[r0:r1]
    for t in range(gx.shape[0]):
        _product(h, w_t, g, width)
        _cell(gx[t, r0:r1], g, c, acts[t, r0:r1], cs[t, r0:r1], y[t, r0:r1])
        h, c = y[t, r0:r1], cs[t, r0:r1]


@njit(cache=True, error_model="numpy", nogil=True)
def _backward_rows(grad, acts, cs, c0, w_hh, dgx, dh_rec, dc_a, dc_b, r0, r1, width):
    """Rows ``r0:r1`` of ``lstm_backward``'s reversed recurrence, as ``_forward_rows``."""
    dc, dc_prev, dh = dc_a[r0:r1], dc_b[r0:r1], dh_rec[r0:r1]
    for t in range(acts.shape[0] - 1, -1, -1):
        _cell_backward(acts[t, r0:r1], cs[t, r0:r1], cs[t - 1, r0:r1] if t else c0[r0:r1],
                       grad[t, r0:r1], dh, dc, dgx[t, r0:r1], dc_prev)
        _product(dgx[t, r0:r1], w_hh, dh, width)
        dc, dc_prev = dc_prev, dc


def _weight_grad(dgx: np.ndarray, h_prev: np.ndarray) -> np.ndarray:
    """``dgx^T @ h_prev`` ((N, 4H) and (N, H): W_hh's gradient over all steps), blocks of its
    rows on numgrad's worker threads, one BLAS thread each (OpenBLAS's own threads, once woken,
    spin for ~0.1 s and took the cores the next kernels needed, 124 ms of CPU a word-LM step),
    cut as ``_tiled`` cuts: the same bits on any number of threads."""
    a = dgx.T
    out = np.empty((a.shape[0], h_prev.shape[1]), dgx.dtype)
    macs = a.shape[0] * a.shape[1] * h_prev.shape[1]
    threads = _workers.threads_for(-(-a.shape[0] // ROW_TILE), macs > ONE_THREAD_MACS)
    spans = _tiled(a.shape[0], threads)

    def block(span, slot):
        np.matmul(a[span[0]:span[1]], h_prev, out=out[span[0]:span[1]])

    with one_blas_thread():
        _workers.run(spans, block, min(threads, len(spans)))
    return out


def lstm_forward(gx: np.ndarray, h0: np.ndarray, c0: np.ndarray, w_hh: np.ndarray):
    """One LSTM layer over a sequence: ``gx`` (T, B, 4H) the steps' input projections with both
    biases, ``h0`` and ``c0`` (B, H), ``w_hh`` (4H, H). Returns ``(y, acts, cs)``: ``y``
    (T + 1, B, H) the hidden states h_1 .. h_T and then c_T; ``acts`` (T, B, 4H) the gates after
    their activations and ``cs`` (T, B, H) the cell states, which the backward reads."""
    gx = np.ascontiguousarray(gx)
    h0 = np.ascontiguousarray(h0)
    c0 = np.ascontiguousarray(c0)
    steps, batch, gates = gx.shape
    hidden = gates // 4
    y = _pool.empty((steps + 1, batch, hidden), gx.dtype)
    acts = _pool.empty((steps, batch, gates), gx.dtype)
    cs = _pool.empty((steps, batch, hidden), gx.dtype)
    gh = np.empty((batch, gates), gx.dtype)
    w_t = np.ascontiguousarray(w_hh.T)  # (row-major: BLAS's NN kernel, 1.8x NT's at 20 x 200)

    width = max(1, _column_blocks(batch, hidden, gates)[0][1])

    def block(span, slot):
        r0, r1 = span
        if IN_NUMBA:
            _forward_rows(gx, h0, c0, w_t, acts, cs, y, gh, r0, r1, width)
            return
        h, c, g = h0[r0:r1], c0[r0:r1], gh[r0:r1]
        for t in range(steps):
            np.matmul(h, w_t, out=g)
            _cell(gx[t, r0:r1], g, c, acts[t, r0:r1], cs[t, r0:r1], y[t, r0:r1])
            h, c = y[t, r0:r1], cs[t, r0:r1]

    spans, threads = _batch_spans(steps, batch, gates, hidden)
    with one_blas_thread():  # (the steps' products are small: BLAS's threads would wait on them)
        _workers.run(spans, block, min(threads, len(spans)))
    y[steps] = cs[steps - 1] if steps else c0
    return y, acts, cs


def lstm_backward(grad: np.ndarray, acts: np.ndarray, cs: np.ndarray, y: np.ndarray,
                  h0: np.ndarray, c0: np.ndarray, w_hh: np.ndarray):
    """The gradients of ``lstm_forward``'s inputs given ``grad``, that of its ``y``:
    ``(d gx (T, B, 4H), d h0, d c0 (B, H), d w_hh (4H, H))``."""
    grad = np.ascontiguousarray(grad)
    h0 = np.ascontiguousarray(h0)
    c0 = np.ascontiguousarray(c0)
    w_hh = np.ascontiguousarray(w_hh)
    steps, batch, gates = acts.shape
    hidden = gates // 4
    dgx = _pool.empty(acts.shape, acts.dtype)
    dh_rec = np.zeros((batch, hidden), acts.dtype)
    dc_a = grad[steps].copy()
    dc_b = np.empty_like(dc_a)

    width = max(1, _column_blocks(batch, gates, hidden)[0][1])

    def block(span, slot):
        r0, r1 = span
        if IN_NUMBA:
            _backward_rows(grad, acts, cs, c0, w_hh, dgx, dh_rec, dc_a, dc_b, r0, r1, width)
            return
        dc, dc_prev, dh = dc_a[r0:r1], dc_b[r0:r1], dh_rec[r0:r1]
        for t in range(steps - 1, -1, -1):
            _cell_backward(acts[t, r0:r1], cs[t, r0:r1], cs[t - 1, r0:r1] if t else c0[r0:r1],
                           grad[t, r0:r1], dh, dc, dgx[t, r0:r1], dc_prev)
            np.matmul(dgx[t, r0:r1], w_hh, out=dh)
            dc, dc_prev = dc_prev, dc

    spans, threads = _batch_spans(steps, batch, gates, hidden)
    with one_blas_thread():
        _workers.run(spans, block, min(threads, len(spans)))
    dc = dc_a if steps % 2 == 0 else dc_b  # (the last step written, swapped once a step)
    h_prev = np.concatenate((h0[None], y[:steps - 1]), 0) if steps else y[:0]
    dw_hh = _weight_grad(dgx.reshape(steps * batch, gates), h_prev.reshape(steps * batch, hidden))
    return dgx, dh_rec, dc, dw_hh
