"""The LSTM layer's CPU kernels: a whole sequence each way, as PyTorch's CPU path (oneDNN's RNN
layer) runs it. Forward, each step is one matrix product of the hidden state with ``W_hh`` (BLAS)
and one pass over the four gates (``_cell``: their activations, the cell state and the hidden
state). Backward runs the steps in reverse, each one pass over the gates (``_cell_backward``) and
one product with ``W_hh`` for the hidden state's gradient, and then ``W_hh``'s gradient as one
product over all steps. The input projection (``x W_ih^T + b``, every step at once) is the
caller's ``linear``, so its gradients are one product each too.

Gate order (i, f, g, o) and formulas as PyTorch's: ``c' = f c + i g``, ``h' = o tanh(c')``, with
i, f, o sigmoids and g a tanh of the step's row of the projection plus ``h W_hh^T``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..._threads import one_blas_thread
from .linalg import matmul, matmul_into
from .mathfuncs import fast_sigmoid, fast_tanh


# The steps' products run on one BLAS thread: a loop of small products otherwise waits on
# BLAS's threads at every step; a large one is split over numgrad's worker threads
# (``linalg.matmul_into``), as eager's products are.


@njit(cache=True, error_model="numpy")
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


@njit(cache=True, error_model="numpy")
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


def lstm_forward(gx: np.ndarray, h0: np.ndarray, c0: np.ndarray, w_hh: np.ndarray):
    """One LSTM layer over a sequence: ``gx`` (T, B, 4H) the steps' input projections with both
    biases, ``h0`` and ``c0`` (B, H), ``w_hh`` (4H, H). Returns ``(y, acts, cs)``: ``y``
    (T + 1, B, H) the hidden states h_1 .. h_T and then c_T; ``acts`` (T, B, 4H) the gates after
    their activations and ``cs`` (T, B, H) the cell states, which the backward reads."""
    gx = np.ascontiguousarray(gx)
    h = np.ascontiguousarray(h0)
    c = np.ascontiguousarray(c0)
    steps, batch, gates = gx.shape
    hidden = gates // 4
    y = np.empty((steps + 1, batch, hidden), gx.dtype)
    acts = np.empty((steps, batch, gates), gx.dtype)
    cs = np.empty((steps, batch, hidden), gx.dtype)
    gh = np.empty((batch, gates), gx.dtype)
    w_t = np.ascontiguousarray(w_hh.T)  # (row-major: BLAS's NN kernel, 1.8x NT's at 20 x 200)
    with one_blas_thread():  # (a large step's product is split by matmul_into, as eager's)
        for t in range(steps):
            matmul_into(h, w_t, gh)
            _cell(gx[t], gh, c, acts[t], cs[t], y[t])
            h, c = y[t], cs[t]
    y[steps] = c
    return y, acts, cs


def lstm_backward(grad: np.ndarray, acts: np.ndarray, cs: np.ndarray, y: np.ndarray,
                  h0: np.ndarray, c0: np.ndarray, w_hh: np.ndarray):
    """The gradients of ``lstm_forward``'s inputs given ``grad``, that of its ``y``:
    ``(d gx (T, B, 4H), d h0, d c0 (B, H), d w_hh (4H, H))``."""
    grad = np.ascontiguousarray(grad)
    h0 = np.ascontiguousarray(h0)
    c0 = np.ascontiguousarray(c0)
    steps, batch, gates = acts.shape
    hidden = gates // 4
    dgx = np.empty_like(acts)
    dh_rec = np.zeros((batch, hidden), acts.dtype)
    dc = grad[steps].copy()
    dc_prev = np.empty_like(dc)
    with one_blas_thread():
        for t in range(steps - 1, -1, -1):
            _cell_backward(acts[t], cs[t], cs[t - 1] if t else c0, grad[t], dh_rec, dc, dgx[t],
                           dc_prev)
            matmul_into(dgx[t], w_hh, dh_rec)
            dc, dc_prev = dc_prev, dc
    h_prev = np.concatenate((h0[None], y[:steps - 1]), 0) if steps else y[:0]
    # (on numgrad's worker threads, one BLAS thread each: OpenBLAS's own threads, once woken,
    # spin for ~0.1 s and took the cores the next kernels needed, 124 ms of CPU a word-LM step)
    dw_hh = matmul(dgx.reshape(steps * batch, gates), h_prev.reshape(steps * batch, hidden),
                   True, False)
    return dgx, dh_rec, dc, dw_hh
