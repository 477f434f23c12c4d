"""Convolution CPU kernels (``K.conv``): im2col (unfold) into a BLAS matrix product, forward and
backward, for 2-D and 3-D convolutions (1-D ones arrive as 2-D on a unit height). A 3-D
convolution (5-D arrays, ``padding`` six numbers, ``stride`` and ``dilation`` triples) goes
through ``_im2col3`` / ``_col2im3``, the same loops with a depth; transposed convolutions are
``conv_backward_input`` (their forward) and the other two (their gradients), composed in
``ops/conv.py``.

Shapes: input ``(N, C, H, W)``, weight ``(O, C // groups, kh, kw)``, output ``(N, O, oh, ow)``;
``padding`` is ``(top, bottom, left, right)`` (PyTorch's 'same' can need one more on the far
side), ``stride`` and ``dilation`` are ``(h, w)`` pairs. The columns are made a batch of
``B`` samples at a time (``CHUNK`` entries, see below), ``K = C*kh*kw`` rows channel-major so
that each group's rows are one contiguous block, ``L = oh*ow``:

- forward: columns ``(B, K, L)``; ``out[n, g] = W[g] @ cols[n, g]`` written straight into the
  output's ``(B, O, L)``, plus the bias;
- grad of the input: ``cols[n, g] = W[g].T @ grad[n, g]`` into ``(B, K, L)``, folded back
  (col2im, summing overlaps) into those samples' rows of the input's gradient;
- grad of the weight: ``grad[n, g] @ cols[n, g].T`` per sample and group, columns ``(B, K, L)``,
  summed over the samples.

Stride-1, undilated, ungrouped 2-D convolutions whose depth ``C*kh`` is 64 or more (the MNIST
CNN's conv2, a ResNet block's) make no columns for the forward and the weight's gradient: they
read shifted views of the input's padded rows (``_Shifted``); their input's gradient, where the
depth ``O*kh`` is 64 or more, is the same kind of convolution of the output's gradient with the
flipped weight (``_phased_input``), with no col2im.

Measured against direct loops on the small CNN of benchmarks/conv.py (batch 64, 1→16→32
channels, 8×8 images, 3×3 kernels, padding 1), im2col into BLAS was faster for forward and
backward (the figures are in that script's docstring), so it is the one kept.

Integer dtypes go through the same code (NumPy's integer matmul instead of BLAS), as PyTorch's
CPU convolution accepts them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..._threads import get_num_threads, one_blas_thread
from ... import _pool
from . import _workers


@njit(cache=True, inline="always")
def _im2col_row(x, n, r, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols, at):
    """Row ``r`` of sample ``n``'s columns, written at ``cols[at:at + oh*ow]``: ``cols[at + y*ow
    + z] = x[n, c, y*sh - pt + i*dh, z*sw - pl + j*dw]`` (0 outside ``x``) for ``r = (c*kh +
    i)*kw + j``. The outputs ``z`` that read inside the row are found once per kernel column
    (``z0 <= z < z1``), so the copy has no test per element."""
    height, width = x.shape[2], x.shape[3]
    c = r // (kh * kw)
    i = (r // kw) % kh
    j = r % kw
    shift = j * dw - pl
    z0 = min(ow, max(0, -(shift // sw)))  # (the first z with z*sw + shift >= 0)
    z1 = max(z0, min(ow, -((shift - width) // sw)))  # (the first z with z*sw + shift >= width)
    for y in range(oh):
        iy = y * sh - pt + i * dh
        base = at + y * ow
        if iy < 0 or iy >= height:
            cols[base:base + ow] = 0
            continue
        src = x[n, c, iy]
        cols[base:base + z0] = 0
        if sw == 1:  # (a contiguous copy, which LLVM vectorises)
            dst = cols[base + z0:base + z1]
            part = src[z0 + shift:z1 + shift]
            for z in range(z1 - z0):
                dst[z] = part[z]
        else:
            for z in range(z0, z1):
                cols[base + z] = src[z * sw + shift]
        cols[base + z1:base + ow] = 0


@njit(cache=True, nogil=True)
def _im2col(x, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols, sn, sr):
    """The columns of C-contiguous ``x`` ``(N, C, H, W)`` into the flat ``cols``: row ``r`` of
    sample ``n`` (``_im2col_row``) at ``n*sn + r*sr``, so that ``(sn, sr) = (K*L, L)`` lays
    them out ``(N, K, L)`` (``K = C*kh*kw``, ``L = oh*ow``) and ``(L, N*L)`` as ``(K, N*L)``."""
    rows = x.shape[1] * kh * kw
    for n in range(x.shape[0]):
        for r in range(rows):
            _im2col_row(x, n, r, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols, n * sn + r * sr)


@njit(cache=True, inline="always")
def _col2im_channel(cols, sn, sr, n, c, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, out):
    """``out[n, c]`` (overwritten) as the sum of the column entries read from it (the adjoint of
    ``_im2col_row`` over the rows of channel ``c``)."""
    height, width = out.shape[2], out.shape[3]
    dst = out[n, c]
    for iy in range(height):
        for ix in range(width):
            dst[iy, ix] = 0
    for i in range(kh):
        for j in range(kw):
            at = n * sn + ((c * kh + i) * kw + j) * sr
            shift = j * dw - pl
            z0 = min(ow, max(0, -(shift // sw)))
            z1 = max(z0, min(ow, -((shift - width) // sw)))
            for y in range(oh):
                iy = y * sh - pt + i * dh
                if iy < 0 or iy >= height:
                    continue
                base = at + y * ow
                if sw == 1:  # (contiguous, vectorised)
                    d = dst[iy, z0 + shift:z1 + shift]
                    part = cols[base + z0:base + z1]
                    for z in range(z1 - z0):
                        d[z] += part[z]
                else:
                    d = dst[iy]
                    for z in range(z0, z1):
                        d[z * sw + shift] += cols[base + z]


@njit(cache=True, nogil=True)
def _col2im(cols, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, out, sn, sr):
    """The adjoint of ``_im2col`` (the same layout arguments): ``out`` ``(N, C, H, W)``
    (overwritten) sums each column entry at the input position it was read from."""
    for n in range(out.shape[0]):
        for c in range(out.shape[1]):
            _col2im_channel(cols, sn, sr, n, c, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, out)


@njit(cache=True, inline="always")
def _row3(q, channels, kd, kh, kw, sn, sr):
    """Row ``q`` of a 3-D im2col over the batch, ``(n*C + c)*kd*kh*kw + (a*kh + i)*kw + j``:
    ``(n, c, a, i, j)`` and where it starts in the flat columns (``n*sn + r*sr``)."""
    r = q % (channels * kd * kh * kw)
    n = q // (channels * kd * kh * kw)
    return n, r // (kd * kh * kw), (r // (kh * kw)) % kd, (r // kw) % kh, r % kw, n * sn + r * sr


@njit(cache=True, nogil=True)
def _im2col3(x, kd, kh, kw, sd, sh, sw, pf, pt, pl, dd, dh, dw, od, oh, ow, cols, sn, sr):
    """``_im2col`` with a depth: ``cols[n*sn + (((c*kd + a)*kh + i)*kw + j)*sr + (t*oh + y)*ow
    + z] = x[n, c, t*sd - pf + a*dd, y*sh - pt + i*dh, z*sw - pl + j*dw]`` (0 outside)."""
    n_batch, channels, depth, height, width = x.shape
    for q in range(n_batch * channels * kd * kh * kw):
        n, c, a, i, j, at = _row3(q, channels, kd, kh, kw, sn, sr)
        for t in range(od):
            it = t * sd - pf + a * dd
            for y in range(oh):
                iy = y * sh - pt + i * dh
                base = at + (t * oh + y) * ow
                if it < 0 or it >= depth or iy < 0 or iy >= height:
                    for z in range(ow):
                        cols[base + z] = 0
                    continue
                src = x[n, c, it, iy]
                for z in range(ow):
                    ix = z * sw - pl + j * dw
                    if 0 <= ix < width:
                        cols[base + z] = src[ix]
                    else:
                        cols[base + z] = 0


@njit(cache=True, nogil=True)
def _col2im3(cols, kd, kh, kw, sd, sh, sw, pf, pt, pl, dd, dh, dw, od, oh, ow, out, sn, sr):
    """The adjoint of ``_im2col3``: ``out`` ``(N, C, D, H, W)`` (overwritten) sums."""
    n_batch, channels, depth, height, width = out.shape
    out[...] = 0
    for q in range(n_batch * channels * kd * kh * kw):
        n, c, a, i, j, at = _row3(q, channels, kd, kh, kw, sn, sr)
        for t in range(od):
            it = t * sd - pf + a * dd
            if it < 0 or it >= depth:
                continue
            for y in range(oh):
                iy = y * sh - pt + i * dh
                if iy < 0 or iy >= height:
                    continue
                dst = out[n, c, it, iy]
                base = at + (t * oh + y) * ow
                for z in range(ow):
                    ix = z * sw - pl + j * dw
                    if 0 <= ix < width:
                        dst[ix] += cols[base + z]


@njit(cache=True, nogil=True)
def _padded_rows(x, n, count, at, kh, pt, pl, oh, wp, rows, ci=0):
    """The rows of samples ``n:n + count`` that a stride-1 convolution's kernel rows read, for
    ``_Shifted``: ``rows[c*kh + i, k*at + y*wp + u] = x[n + k, c, y + i - pt, u - pl]`` for ``y
    < oh``, ``u < wp`` (0 outside ``x``: the padding), each output row ``y`` read at the full
    padded width ``wp``, sample ``n + k`` from ``k*at`` on; entries from ``k*at + oh*wp`` to
    ``(k + 1)*at`` are left as they are. With ``ci`` > 0 the rows are ``i*ci + c`` instead of
    ``c*kh + i`` (tap-major: ``_transposed_phases``)."""
    height, width = x.shape[2], x.shape[3]
    for k in range(count):
        for c in range(x.shape[1]):
            src_c = x[n + k, c]
            for i in range(kh):
                row = rows[i * ci + c if ci else c * kh + i]
                for y in range(oh):
                    iy = y + i - pt
                    base = k * at + y * wp
                    if iy < 0 or iy >= height:
                        row[base:base + wp] = 0
                        continue
                    row[base:base + pl] = 0
                    dst = row[base + pl:base + pl + width]
                    src = src_c[iy]
                    for z in range(width):
                        dst[z] = src[z]
                    row[base + pl + width:base + wp] = 0


@njit(cache=True, nogil=True)
def _shifted_sum(prod, out_c, kw, wp, at, b, out):
    """``out[k, o, y, z] = prod[o, k*at + y*wp + z] + prod[O + o, k*at + y*wp + z + 1] + ... +
    prod[(kw-1)*O + o, k*at + y*wp + z + kw - 1]`` (+ ``b[o]`` where ``b`` has entries), added
    in that order: the ``kw`` kernel columns' products of ``_Shifted`` for sample ``k`` (its
    columns from ``k*at`` on), each read ``j`` entries on, the last ``kw - 1`` of each padded
    row dropped. ``out`` ``(B, O, oh, ow)`` may be a strided view."""
    oh, ow = out.shape[2], out.shape[3]
    for k in range(out.shape[0]):
        for o in range(out_c):
            for y in range(oh):
                dst = out[k, o, y]
                base = k * at + y * wp
                src = prod[o, base:base + ow]
                for z in range(ow):
                    dst[z] = src[z]
                for j in range(1, kw):
                    src = prod[j * out_c + o, base + j:base + j + ow]
                    for z in range(ow):
                        dst[z] += src[z]
                if b.shape[0]:
                    bias = b[o]
                    for z in range(ow):
                        dst[z] += bias


@njit(cache=True, nogil=True)
def _grad_columns(g, n, wp, out):
    """``out[y*wp + z, o] = g[n, o, y, z]`` for ``z < ow``: sample ``n``'s output gradient
    transposed at the padded width, for ``_Shifted.backward_weight`` (the entries of the
    dropped columns, ``z >= ow``, are left as they are: zeros). Eight channels at a time, each
    read along its rows: reading all the channels of one entry reads them a channel's stride
    apart, which the cache maps onto the same sets where that stride is 4 KiB (the ResNet
    block's 32x32: 3.1 ms a call of 16 samples against 0.8 this way, 1.7 against 2.0 on the
    MNIST CNN's conv2, one thread, between the products as the weight's gradient runs it)."""
    out_c, oh, ow = g.shape[1], g.shape[2], g.shape[3]
    src = g[n]
    for o0 in range(0, out_c - 7, 8):
        for y in range(oh):
            for z in range(ow):
                dst = out[y * wp + z]
                for o in range(8):
                    dst[o0 + o] = src[o0 + o, y, z]
    for o in range(out_c - out_c % 8, out_c):
        for y in range(oh):
            for z in range(ow):
                out[y * wp + z, o] = src[o, y, z]


@njit(cache=True, nogil=True)
def _phase_sum(prod, out_c, at, wp, blocks, shifts, taps, sw, out):
    """One row phase of ``_transposed_phases``: ``out[k, c, y, b + sw*z]`` (``out`` the phase's
    rows, ``(B, C, oh, W)``, overwritten) for each column phase ``b`` = the sum over its
    ``taps[b]`` kernel columns ``j`` of ``prod[(blocks[b] + j)*C + c, k*at + y*wp + z +
    shifts[b] + j]``, in order of ``j``."""
    oh, width = out.shape[2], out.shape[3]
    for k in range(out.shape[0]):
        for c in range(out_c):
            for y in range(oh):
                dst = out[k, c, y]
                base = k * at + y * wp
                for b in range(sw):
                    count = (width - b + sw - 1) // sw
                    src = prod[blocks[b] * out_c + c, base + shifts[b]:]
                    for z in range(count):
                        dst[b + sw * z] = src[z]
                    for j in range(1, taps[b]):
                        src = prod[(blocks[b] + j) * out_c + c, base + shifts[b] + j:]
                        for z in range(count):
                            dst[b + sw * z] += src[z]


@njit(cache=True, nogil=True)
def _im2col_phased(x, kh, kw, sh, sw, pt, pl, oh, ow, phases, cols, sn, sr):
    """``_im2col`` of an undilated convolution at a stride over 1 (the same columns): ``x``
    ``(N, C, H, W)`` split first into its ``sh*sw`` phases, ``phases[a*sw + b, n, c, u, v] =
    x[n, c, u*sh + a, v*sw + b]`` (0 past ``x``; ``phases`` ``(sh*sw, N, C, hq, wq)``), so that
    each column row is a stride-1 copy from one phase, in runs that LLVM vectorises, where
    ``_im2col_row`` gathered every ``sw``-th entry."""
    n_batch, channels, height, width = x.shape
    hq, wq = phases.shape[3], phases.shape[4]
    for a in range(sh):
        for b in range(sw):
            ph = phases[a * sw + b]
            for n in range(n_batch):
                for c in range(channels):
                    for u in range(hq):
                        row = ph[n, c, u]
                        iy = u * sh + a
                        if iy >= height:
                            row[:] = 0
                            continue
                        src = x[n, c, iy]
                        for v in range(wq):
                            ix = v * sw + b
                            row[v] = src[ix] if ix < width else 0
    for n in range(n_batch):
        for r in range(channels * kh * kw):
            c, i, j = r // (kh * kw), (r // kw) % kh, r % kw
            a, b = (i - pt) % sh, (j - pl) % sw
            dy, dx = (i - pt - a) // sh, (j - pl - b) // sw
            src_c = phases[a * sw + b, n, c]
            at = n * sn + r * sr
            z0 = min(ow, max(0, -dx))
            z1 = max(z0, min(ow, wq - dx))
            for y in range(oh):
                iy = y + dy
                base = at + y * ow
                if iy < 0 or iy >= hq:
                    cols[base:base + ow] = 0
                    continue
                cols[base:base + z0] = 0
                dst = cols[base + z0:base + z1]
                part = src_c[iy, z0 + dx:z1 + dx]
                for z in range(z1 - z0):
                    dst[z] = part[z]
                cols[base + z1:base + ow] = 0


def output_size(size: int, k: int, s: int, before: int, after: int, d: int) -> int:
    return (size + before + after - d * (k - 1) - 1) // s + 1


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _geometry(kernel, stride, padding, dilation, out_sp) -> tuple:
    """The kernels' scalar arguments, in their order: the kernel size, the stride, the padding
    before each dimension, the dilation and the output size (2-D or 3-D)."""
    return (tuple(kernel) + tuple(stride) + tuple(padding[0::2]) + tuple(dilation)
            + tuple(out_sp))


# Columns are made and used a batch of samples at a time (``CHUNK`` entries at most, one sample
# at least) in a buffer each thread reuses: they stay in the cache between im2col, the GEMM and
# col2im, where the whole batch's columns (42 MB at the MNIST CNN's second convolution) went
# through memory three times. The batches are shared among ``get_num_threads()`` Python threads
# (this one included), each taking the next batch when done with one, its GEMMs on one BLAS
# thread: one fork and join per call, where Numba's parallel im2col and BLAS's threads took
# turns at each of many small steps (on a busy 2-core machine each turn waits for a core, which
# made a step of the CNN's second convolution 30 to 80 times slower than on one thread).
CHUNK = 1 << 18
THREADED_COLS = 1 << 18  # (columns from this size on, in all, are made on several threads: the
# MNIST CNN's conv1, 389K, was under 1 << 19 and ran on one thread; on two, its forward 1.59 ->
# 1.05 ms, weight gradient 1.10 -> 0.78, medians of 21 alternating, load 1.5)


def _on_threads(items: list, work, size: int) -> None:
    """``work(item, slot)`` for each of ``items``, ``slot`` the running thread's number (its own
    buffers), on up to ``get_num_threads()`` threads when ``size`` (the columns' entries in all)
    is large enough; BLAS on one thread meanwhile, unless a single large item has it alone
    (small products on BLAS's threads spin them: the MNIST CNN's conv1, 64 products of 32 x 9
    by 9 x 676, took 38 ms of process time on two threads, 3 ms on one)."""
    threads = _workers.threads_for(len(items), size >= THREADED_COLS)
    if threads <= 1:
        with one_blas_thread(len(items) > 1 or size < THREADED_COLS):
            for item in items:
                work(item, 0)
        return
    _workers.run(items, work, threads)


def _unfold_into(x, geometry, cols, sn, sr, phases=None, slot=0):
    """im2col of ``x`` (2-D or 3-D) into the flat ``cols``, laid out by ``sn``, ``sr``; by
    ``_im2col_phased`` where ``phases`` (``_Phases``, thread ``slot``'s) is given and applies."""
    if phases is not None and phases.taken:
        kh, kw, sh, sw, pt, pl = geometry[:6]
        _im2col_phased(x, kh, kw, sh, sw, pt, pl, geometry[8], geometry[9],
                       phases.buffer(slot, x.shape[0]), cols, sn, sr)
        return
    (_im2col3 if len(geometry) > 10 else _im2col)(x, *geometry, cols, sn, sr)


class _Phases:
    """The phases buffer of ``_im2col_phased``, one per thread slot and batch size, where the
    convolution is 2-D, undilated and strided (``taken``). One thread, CPU, medians of 15
    alternating, under load: the conv_transpose2d workload's weight gradient (the im2col of a
    32x32 gradient at stride 2, 4x4, 16 samples of 32 channels) 6.91 -> 5.68 ms, its input's
    gradient (a stride-2 convolution) 6.67 -> 5.32; a ResNet downsampling convolution (64 ->
    128, 3x3, stride 2, 32x32 x16) forward 10.92 -> 9.48, weight gradient 11.66 -> 10.16."""

    __slots__ = ("taken", "shape", "dtype", "held")

    def __init__(self, x_shape, dtype, geometry):
        self.taken = (PHASED and len(geometry) == 10 and geometry[2:4] != (1, 1)
                      and geometry[6:8] == (1, 1))
        sh, sw = geometry[2:4]
        self.shape = (sh * sw, x_shape[1], -(-x_shape[2] // sh), -(-x_shape[3] // sw))
        self.dtype, self.held = dtype, {}

    def buffer(self, slot, count):
        buffer = self.held.get((slot, count))
        if buffer is None:
            shape = self.shape[:1] + (count,) + self.shape[1:]
            buffer = self.held[slot, count] = _pool.empty(shape, self.dtype)
        return buffer


def _fold_into(cols, geometry, out, sn, sr):
    """col2im of the flat ``cols`` (laid out by ``sn``, ``sr``) into ``out`` (overwritten)."""
    (_col2im3 if len(geometry) > 10 else _col2im)(cols, *geometry, out, sn, sr)


def _batches(n: int, per_sample: int) -> tuple:
    """``(start, stop)`` of each batch of samples whose columns fill at most ``CHUNK`` entries,
    and the most samples in one. Where the threads share them (``THREADED_COLS``), there are a
    multiple of ``get_num_threads()`` batches of equal size (give or take a sample): 64 samples
    of 10,000 column entries were 26, 26 and 12 samples, one of two threads idle a third of the
    time. (The split depends on the shapes and the thread count
    only, never the load: a weight gradient's sums repeat bit for bit.)"""
    per_sample = max(per_sample, 1)
    step = max(1, min(n, CHUNK // per_sample))
    parts = -(-n // step) if n else 0
    threads = get_num_threads()
    if threads > 1 and n * per_sample >= THREADED_COLS:
        parts = min(n, -(-parts // threads) * threads)
        step = -(-n // parts)
    return [(start, min(n, start + step)) for start in range(0, n, step)], step


class _Buffers:
    """One flat buffer of ``size`` entries per thread slot, made on first use."""

    __slots__ = ("size", "dtype", "held")

    def __init__(self, size: int, dtype):
        self.size, self.dtype, self.held = size, dtype, {}

    def __call__(self, slot: int, used: int):
        buffer = self.held.get(slot)
        if buffer is None:
            buffer = self.held[slot] = _pool.empty(self.size, self.dtype)
        return buffer[:used]


def _out_sp(shape, kernel, stride, padding, dilation):
    return tuple(output_size(shape[2 + i], kernel[i], stride[i], padding[2 * i],
                             padding[2 * i + 1], dilation[i]) for i in range(len(kernel)))


BATCH_COLUMNS = 1024


class _Shifted:
    """A stride-1, undilated, ungrouped 2-D convolution without im2col's copies: each output
    row is computed at the padded input's full width ``wp`` (the last ``kw - 1`` columns of
    each, which straddle two rows, are computed and dropped), so that kernel column ``j``'s
    columns are the kernel rows' padded input rows (``_padded_rows``, ``(C*kh, oh*wp)``,
    ``kw`` times fewer entries than im2col's, copied in runs of a whole row) read from ``j``
    on: a view that BLAS reads with its row stride. The forward is one GEMM of the weight's
    ``kw`` kernel columns stacked, ``(kw*O, C*kh)``, by the padded rows (of one sample, or of
    a few side by side where a sample's are short: ``batches``), whose ``kw`` products are
    added each shifted by ``j`` (``_shifted_sum``); the weight's gradient, ``kw`` GEMMs of
    those views by the output's gradient (at the full width, zeros in the dropped columns)
    transposed. One thread, CPU, medians of 9 alternating (under load): the ResNet block's 64
    channels 32x32 x16 forward 20.6 -> 18.0 ms (``kw`` GEMMs of ``(O, C*kh)`` added into one
    sum), then 17.8 -> 16.2 (one stacked GEMM, medians of 15), weight gradient 21.9 -> 19.5;
    the MNIST CNN's conv2 25.0 -> 23.2 -> 22.9 (with its bias) and 25.1 -> 22.6. Taken where
    the depth ``C*kh`` is 64 or more (the CNN's conv1, depth 3, keeps im2col)."""

    __slots__ = ("kh", "kw", "pt", "pl", "oh", "ow", "wp", "span", "depth")

    def __init__(self, input_shape, kernel, padding):
        height, width = input_shape[2], input_shape[3]
        self.kh, self.kw = kernel
        self.pt, self.pl = padding[0], padding[2]
        self.wp = width + padding[2] + padding[3]
        self.oh = height + padding[0] + padding[1] - self.kh + 1
        self.ow = self.wp - self.kw + 1
        self.span = self.oh * self.wp
        self.depth = input_shape[1] * self.kh

    @staticmethod
    def taken(x_shape, dtype, kernel, stride, dilation, groups) -> bool:
        return (len(kernel) == 2 and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
                and groups == 1 and np.dtype(dtype).kind == "f" and kernel[1] > 1
                and x_shape[1] * kernel[0] >= 64)

    def fits(self, out_sp) -> bool:
        return tuple(out_sp) == (self.oh, self.ow)

    def edges_finite(self, x) -> bool:
        """Whether the input entries that the dropped outputs read are finite: its first
        ``kw - 1 - pl`` and last ``kw - 1 - pr`` columns (the rest of each padded row is
        padding). The weight's gradient multiplies them by the dropped outputs' zero
        gradients, and 0 * inf would be NaN where im2col's products never read them: a
        non-finite entry there takes im2col."""
        width = x.shape[3]
        first = max(0, self.kw - 1 - self.pl)
        last = max(0, self.kw - 1 - (self.wp - width - self.pl))
        return bool(np.isfinite(x[..., :first]).all() and
                    np.isfinite(x[..., max(0, width - last):]).all())

    def rows(self, x, n, buffers, slot, count=1):
        """Samples ``n:n + count``'s padded rows, ``(C*kh, count*at)`` (``at = oh*wp + kw -
        1``): column ``j``'s view of sample ``k`` is ``[:, k*at + j:k*at + j + oh*wp]`` (the
        ``kw - 1`` entries past each ``oh*wp`` are zeros, read only by dropped outputs)."""
        rows = buffers(slot, count)
        _padded_rows(x, n, count, self.span + self.kw - 1, self.kh, self.pt, self.pl, self.oh,
                     self.wp, rows)
        return rows

    def buffers(self, dtype, *shape):
        """Zeroed buffers of ``shape`` (default the padded rows' of ``count`` samples, ``(C*kh,
        count*(oh*wp + kw - 1))``), one per thread slot: ``get(slot, count=1)``."""
        held = {}

        def get(slot, count=1):
            buffer = held.get((slot, count))
            if buffer is None:
                size = shape or (self.depth, count * (self.span + self.kw - 1))
                buffer = held[slot, count] = _pool.zeros(size, dtype)
            return buffer
        return get

    def grad_columns(self, g, n, buffers, slot):
        """The output's gradient of sample ``n`` transposed at the full padded width, ``(oh*wp,
        O)`` (the dropped columns' entries 0): the right operand of the weight's gradient,
        contiguous. (Its transposed view ``(O, oh*wp).T`` ran OpenBLAS's products at 81
        GFLOP/s against 95, one thread, the MNIST CNN's conv2: the copy, now transposing,
        costs what the plain one did; the weight's gradient 21.8 -> 19.6 ms on one thread.)"""
        wide = buffers(slot)
        _grad_columns(g, n, self.wp, wide)
        return wide

    def stacked(self, w):
        """The weight ``(O, C, kh, kw)`` as ``(kw*O, C*kh)``, kernel column ``j``'s rows at
        ``j*O``: one GEMM by the padded rows gives every column's product."""
        return np.ascontiguousarray(w.transpose(3, 0, 1, 2)).reshape(
            self.kw * w.shape[0], self.depth)

    def samples(self, x, n, stacked, b, out, rows_of, prods, slot):
        """``out`` ``(B, O, oh, ow)`` (overwritten): samples ``n:n + B`` of ``x`` correlated with
        the weight ``stacked`` (``stacked(w)``), plus ``b`` ``(O,)`` (or no entries): one GEMM
        of ``(kw*O, C*kh)`` by the ``B`` samples' padded rows side by side. ``prods(slot, B)``
        gives ``(kw*O, B*(oh*wp + kw - 1))`` buffers (``product_buffers``)."""
        count = out.shape[0]
        rows = self.rows(x, n, rows_of, slot, count)
        prod = prods(slot, count)
        np.matmul(stacked, rows, out=prod)
        _shifted_sum(prod, out.shape[1], self.kw, self.wp, self.span + self.kw - 1, b, out)

    def product_buffers(self, dtype, out_c):
        held = {}

        def get(slot, count):
            buffer = held.get((slot, count))
            if buffer is None:
                buffer = held[slot, count] = _pool.empty(
                    (self.kw * out_c, count * (self.span + self.kw - 1)), dtype)
            return buffer
        return get

    def batches(self, n) -> list:
        """``(start, stop)`` of each batch of samples whose GEMM is made as one: enough samples
        for ``BATCH_COLUMNS`` columns (``oh*wp`` is 1,088 at the ResNet block's 32x32: one
        sample; 272 at the conv_transpose2d workload's 16x16 phases: four)."""
        step = max(1, min(n, -(-BATCH_COLUMNS // self.span)))
        return [(start, min(n, start + step)) for start in range(0, n, step)]

    def forward(self, x, w, b, out):
        n, out_c = x.shape[0], w.shape[0]
        stacked = self.stacked(w)
        b = np.zeros(0, x.dtype) if b is None else b
        rows_of, prods = self.buffers(x.dtype), self.product_buffers(x.dtype, out_c)

        def work(batch, slot):
            start, stop = batch
            self.samples(x, start, stacked, b, out[start:stop], rows_of, prods, slot)

        _on_threads(self.batches(n), work, n * self.depth * self.kw * self.oh * self.ow)

    def backward_weight(self, g, x, weight_shape):
        n, out_c = x.shape[0], weight_shape[0]
        size = n * self.depth * self.kw * self.oh * self.ow
        threads = max(1, min(get_num_threads(), n)) if size >= THREADED_COLS else 1
        totals = _pool.zeros((threads, self.kw, self.depth, out_c), g.dtype)
        rows_of, wides = self.buffers(x.dtype), self.buffers(g.dtype, self.span, out_c)
        sums = self.buffers(g.dtype, self.depth, out_c)
        span = self.span
        shares = [(t, range(n * t // threads, n * (t + 1) // threads)) for t in range(threads)]

        def work(share, slot):
            t, own = share
            for sample in own:
                rows = self.rows(x, sample, rows_of, slot)
                wide = self.grad_columns(g, sample, wides, slot)
                part = sums(slot)
                for j in range(self.kw):
                    np.matmul(rows[:, j:j + span], wide, out=part)
                    totals[t, j] += part

        _on_threads(shares, work, size)
        total = totals[0]
        for t in range(1, threads):
            total += totals[t]
        return np.ascontiguousarray(total.transpose(2, 1, 0)).reshape(tuple(weight_shape))


PHASED = True  # (a toggle for measurement)
PHASED_WORK = 1.15 # (the most multiply-adds against col2im's GEMM: the padded rows' dropped
# columns, and at stride 1 a padding under k - 1 makes the output larger than the gradient)


def _phase_dim(size, src, k, s, p, a):
    """One dimension of phase ``a`` of ``_phased_input``: the output positions ``a, a + s, ...``
    below ``size`` (``count`` of them) are a stride-1 correlation of the gradient's positions
    ``lo:hi`` (of ``src``), padded by ``before`` and ``after``, with the kernel's taps ``r, r +
    s, ...`` reversed (``taps`` of them). Returns ``(count, r, taps, lo, hi, before, after)``."""
    count = max(0, -(-(size - a) // s))
    r, q = (a + p) % s, (a + p) // s
    taps = len(range(r, k, s))
    start, end = q - taps + 1, count + q  # (the gradient positions read, padding included)
    lo, hi = max(0, start), min(src, end)
    return count, r, taps, lo, hi, lo - start, end - hi


def _phased_input(g, w, input_shape, stride, padding):
    """``conv_backward_input`` of an undilated, ungrouped 2-D convolution without col2im: for
    stride ``s``, the input's gradient in ``s*s`` phases (rows ``a::s``, columns ``b::s``),
    each a stride-1 correlation (``_Shifted``) of the output's gradient ``g`` with the
    weight's taps ``[:, :, r::s, t::s]`` flipped, their channels swapped; at stride 1 one phase,
    the correlation of ``g`` padded by ``k - 1 - p`` with the flipped weight. The same sums as
    col2im's (in another order), but for the padding's zeros times the weight: None (col2im)
    where the weight has an inf or NaN (PyTorch's input gradient has no NaN from those), or a
    phase has no tap or a depth ``O*taps`` under 64 (``_Shifted.taken``'s); a padding over
    ``k - 1`` crops the gradient. Taken at stride 1 (``_transposed_phases`` at larger ones)."""
    n, in_c = input_shape[0], input_shape[1]
    out_c, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    if np.dtype(g.dtype).kind != "f" or not np.isfinite(w).all():
        return None
    phases = []
    for a in range(stride[0]):
        rows = _phase_dim(input_shape[2], g.shape[2], kh, stride[0], padding[0], a)
        for b in range(stride[1]):
            cols = _phase_dim(input_shape[3], g.shape[3], kw, stride[1], padding[2], b)
            if rows[0] == 0 or cols[0] == 0:
                continue  # (no output position in this phase)
            if (rows[2] == 0 or cols[2] == 0 or out_c * rows[2] < 64 or rows[3] >= rows[4]
                    or cols[3] >= cols[4]):
                return None
            phases.append((a, b, rows, cols))
    out = _pool.empty(input_shape, g.dtype)
    work_items, size = [], 0
    for a, b, rows, cols in phases:
        part = g
        if rows[3] > 0 or rows[4] < g.shape[2] or cols[3] > 0 or cols[4] < g.shape[3]:
            part = np.ascontiguousarray(g[:, :, rows[3]:rows[4], cols[3]:cols[4]])
        taps = w[:, :, rows[1]::stride[0], cols[1]::stride[1]][:, :, ::-1, ::-1]
        shifted = _Shifted(part.shape, (rows[2], cols[2]), (rows[5], rows[6], cols[5], cols[6]))
        stacked = shifted.stacked(taps.transpose(1, 0, 2, 3))
        phase = (shifted, part, stacked, out[:, :, a::stride[0], b::stride[1]],
                 shifted.buffers(g.dtype), shifted.product_buffers(g.dtype, in_c))
        work_items += [(phase, batch) for batch in shifted.batches(n)]
        size += n * shifted.depth * shifted.kw * shifted.oh * shifted.wp
    none = np.zeros(0, g.dtype)

    def work(item, slot):
        (shifted, part, stacked, view, rows_of, prods), (start, stop) = item
        shifted.samples(part, start, stacked, none, view[start:stop], rows_of, prods, slot)

    if size * in_c > PHASED_WORK * n * in_c * kh * kw * out_c * g.shape[2] * g.shape[3]:
        return None
    _on_threads(work_items, work, size)
    return out


def _shared_dim(size, src, k, s, p):
    """One dimension of ``_transposed_phases``: each phase's ``(count, r, taps, shift)`` (its
    output positions ``a::s``, its kernel taps ``r::s``, reversed, read from the shared padded
    rows' offset ``shift`` on), the most positions of a phase, the offsets all phases read
    (``span``), and the gradient's ``lo:hi`` with the padding ``before``, ``after``."""
    phases = []
    for a in range(s):
        count, r, taps, lo, hi, before, after = _phase_dim(size, src, k, s, p, a)
        phases.append((count, r, taps, lo - before))  # (the first gradient position read)
    first = min(start for _, _, _, start in phases)
    span = max(start + taps for _, _, taps, start in phases) - first
    most = max(count for count, _, _, _ in phases)
    end = first + most + span - 1
    lo, hi = max(0, first), min(src, end)
    return ([(c, r, t, start - first) for c, r, t, start in phases], most, span, lo, hi,
            lo - first, end - hi)


def _transposed_phases(g, w, input_shape, stride, padding):
    """``conv_backward_input`` at a stride over 1 (a transposed convolution's forward) by
    phases that share their rows: every phase reads the same padded rows of ``g`` (tap-major,
    ``(span_h*O, oh*wp)``), row phase ``a`` the block of its taps from its offset on; one GEMM
    per row phase of the weight's taps for every column phase and kernel column stacked, its
    products added shifted into the phase's output rows (``_phase_sum``). None where it does
    not apply (as ``_phased_input``)."""
    n, in_c = input_shape[0], input_shape[1]
    out_c, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    if np.dtype(g.dtype).kind != "f" or not np.isfinite(w).all():
        return None
    rows_h, _, span_h, lo_h, hi_h, pt, pb = _shared_dim(
        input_shape[2], g.shape[2], kh, stride[0], padding[0])
    rows_w, _, span_w, lo_w, hi_w, pl, pr = _shared_dim(
        input_shape[3], g.shape[3], kw, stride[1], padding[2])
    if (any(t == 0 for _, _, t, _ in rows_h + rows_w) or lo_h >= hi_h or lo_w >= hi_w
            or min(c for c, _, _, _ in rows_h + rows_w) == 0
            or out_c * min(t for _, _, t, _ in rows_h) < 64):
        return None
    part = g
    if lo_h > 0 or hi_h < g.shape[2] or lo_w > 0 or hi_w < g.shape[3]:
        part = np.ascontiguousarray(g[:, :, lo_h:hi_h, lo_w:hi_w])
    shared = _Shifted((n, out_c, hi_h - lo_h, hi_w - lo_w), (span_h, span_w), (pt, pb, pl, pr))
    at, taps_w = shared.span + shared.kw - 1, sum(t for _, _, t, _ in rows_w)
    blocks = np.cumsum([0] + [t for _, _, t, _ in rows_w])[:-1].astype(np.int64)
    shifts = np.array([shift for _, _, _, shift in rows_w], np.int64)
    taps = np.array([t for _, _, t, _ in rows_w], np.int64)
    work = 0
    phases = []
    for a, (count, r, t, shift) in enumerate(rows_h):
        sub = w[:, :, r::stride[0]][:, :, ::-1]  # (O, C, t, kw): tap-major depth t'*O + o
        stacked = np.concatenate([
            sub[:, :, :, rb + stride[1] * (tb - 1 - j)].transpose(1, 2, 0).reshape(
                in_c, t * out_c) for _, rb, tb, _ in rows_w for j in range(tb)])
        phases.append((a, shift * out_c, (shift + t) * out_c, stacked))
        work += taps_w * in_c * t * out_c * shared.oh * shared.wp
    if work > PHASED_WORK * in_c * kh * kw * out_c * g.shape[2] * g.shape[3]:
        return None
    out = _pool.empty(input_shape, g.dtype)
    rows_of, held = shared.buffers(g.dtype), {}

    def product(slot, count):
        buffer = held.get((slot, count))
        if buffer is None:
            buffer = held[slot, count] = _pool.empty((taps_w * in_c, count * at), g.dtype)
        return buffer

    def run(batch, slot):
        start, stop = batch
        rows = rows_of(slot, stop - start)
        _padded_rows(part, start, stop - start, at, span_h, pt, pl, shared.oh, shared.wp, rows,
                     out_c)
        prod = product(slot, stop - start)
        for a, first, last, stacked in phases:
            np.matmul(stacked, rows[first:last], out=prod)
            _phase_sum(prod, in_c, at, shared.wp, blocks, shifts, taps, stride[1],
                       out[start:stop, :, a::stride[0]])

    _on_threads(shared.batches(n), run, n * work // max(1, in_c * taps_w))
    return out


def conv_forward(x, weight, bias, stride, padding, dilation, groups):
    """The cross-correlation of ``x`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) with ``weight``
    ``(O, C/groups, kh, kw)`` (``(O, C/groups, kd, kh, kw)``), plus ``bias`` ``(O,)`` or None:
    ``(N, O, oh, ow)`` (``(N, O, od, oh, ow)``). Each batch's columns ``(B, K, L)`` go through
    one GEMM per sample and group straight into the output's ``(B, O, L)``."""
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(weight)
    n, out_c = x.shape[0], w.shape[0]
    kernel = tuple(w.shape[2:])
    out_sp = _out_sp(x.shape, kernel, stride, padding, dilation)
    geometry = _geometry(kernel, stride, padding, dilation, out_sp)
    rows, length = x.shape[1] * _prod(kernel), _prod(out_sp)
    out = _pool.empty((n, out_c) + out_sp, x.dtype)
    if out.size == 0:
        return out
    if _Shifted.taken(x.shape, x.dtype, kernel, stride, dilation, groups):
        b = None if bias is None else np.ascontiguousarray(bias, x.dtype).reshape(out_c)
        _Shifted(x.shape, kernel, padding).forward(x, w, b, out)
        return out
    inner, per_group = rows // groups, out_c // groups
    weights = w.reshape(groups, per_group, inner)
    out4 = out.reshape(n, groups, per_group, length)
    b = None if bias is None else np.asarray(bias, x.dtype).reshape(groups, per_group, 1)
    spans, step = _batches(n, rows * length)
    buffers = _Buffers(step * rows * length, x.dtype)
    phases = _Phases(x.shape, x.dtype, geometry)

    def work(span, slot):
        start, stop = span
        cols = buffers(slot, (stop - start) * rows * length)
        _unfold_into(x[start:stop], geometry, cols, rows * length, length, phases, slot)
        part = out4[start:stop]
        np.matmul(weights, cols.reshape(stop - start, groups, inner, length), out=part)
        if b is not None:
            part += b

    _on_threads(spans, work, n * rows * length)
    return out


def conv_backward_input(grad, weight, input_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its input (of shape ``input_shape``),
    from the output's gradient ``grad``: ``weight.T @ grad`` per sample and group, folded back
    a batch of samples at a time (also the forward of a transposed convolution). At stride 1
    (undilated, ungrouped, 2-D), the convolution of ``grad`` with the flipped weight instead
    (``_phased_input``): the ResNet block's 64 channels 32x32 x16, one thread, CPU, medians of
    15 alternating, under load: 18.8 -> 17.5 ms (its GEMM's depth 192 against col2im's 64, and
    no scatter-add); the MNIST CNN's conv2 (padding 0: the gradient's padding by ``k - 1`` makes
    the product 27% larger, 21.9 -> 28.4 ms) keeps col2im (``PHASED_WORK``). At a larger stride,
    the phases sharing their padded rows (``_transposed_phases``): the conv_transpose2d
    workload's forward (64 -> 32, 4x4, stride 2, 16x16 x16) 6.8 -> 6.0-6.2 ms (medians of 15
    alternating, two runs; one GEMM per phase, ``_phased_input``'s way, was no faster: 6.84 ->
    6.91)."""
    w = np.ascontiguousarray(weight)
    g = np.ascontiguousarray(grad)
    input_shape = tuple(input_shape)
    n, out_c = input_shape[0], w.shape[0]
    kernel = tuple(w.shape[2:])
    out_sp = tuple(g.shape[2:])
    geometry = _geometry(kernel, stride, padding, dilation, out_sp)
    rows, length = input_shape[1] * _prod(kernel), _prod(out_sp)
    if rows * length * out_c == 0 or 0 in input_shape:
        return _pool.zeros(input_shape, g.dtype)
    if (PHASED and groups == 1 and len(kernel) == 2
            and tuple(dilation) + tuple(stride) == (1, 1, 1, 1)):
        out = _phased_input(g, w, input_shape, stride, padding)
        if out is not None:
            return out
    if (PHASED and groups == 1 and len(kernel) == 2 and tuple(dilation) == (1, 1)
            and tuple(stride) != (1, 1)):
        out = _transposed_phases(g, w, input_shape, stride, padding)
        if out is not None:
            return out
    out = _pool.empty(input_shape, g.dtype)
    inner, per_group = rows // groups, out_c // groups
    weights = np.ascontiguousarray(w.reshape(groups, per_group, inner).transpose(0, 2, 1))
    g4 = g.reshape(n, groups, per_group, length)
    spans, step = _batches(n, rows * length)
    buffers = _Buffers(step * rows * length, g.dtype)

    def work(span, slot):
        start, stop = span
        cols = buffers(slot, (stop - start) * rows * length)
        np.matmul(weights, g4[start:stop], out=cols.reshape(stop - start, groups, inner, length))
        _fold_into(cols, geometry, out[start:stop], rows * length, length)

    _on_threads(spans, work, n * rows * length)
    return out


def conv_backward_weight(grad, x, weight_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its weight (of shape ``weight_shape``),
    from the output's gradient ``grad`` and the input ``x``: per batch of samples, the columns
    ``(B, K, L)`` (the forward's layout) and one GEMM per sample and group of the columns by
    the gradient transposed, ``(K, L) @ (L, O)`` (of the gradient ``(O, L)`` by the columns
    transposed where ``K`` is under 64), summed over the samples. Each thread sums
    the batches of its own share of the samples, in order, and the shares are added in order
    (the same result for the same number of threads). (Columns ``(K, B*L)`` by the gradient
    transposed ``(B*L, O)`` took a transposed copy of the gradient, a slower im2col and a
    final transpose: 26 -> 22 ms of CPU for the ResNet block's 64 channels, 32x32, batch 16,
    2.0 -> 1.1 ms for the MNIST CNN's first convolution, on one thread.)"""
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(grad)
    n, out_c = x.shape[0], weight_shape[0]
    kernel = tuple(weight_shape[2:])
    out_sp = tuple(g.shape[2:])
    geometry = _geometry(kernel, stride, padding, dilation, out_sp)
    rows, length = x.shape[1] * _prod(kernel), _prod(out_sp)
    inner, per_group = rows // groups, out_c // groups
    if _Shifted.taken(x.shape, x.dtype, kernel, stride, dilation, groups) and n * length:
        shifted = _Shifted(x.shape, kernel, padding)
        if shifted.fits(out_sp) and shifted.edges_finite(x):
            return shifted.backward_weight(g, x, weight_shape)
    size = n * rows * length
    threads = max(1, min(get_num_threads(), n)) if size >= THREADED_COLS else 1
    # (the columns by the gradient transposed, (K, L) @ (L, O), where K is 64 or more:
    # OpenBLAS's products of a long depth L ran 1.2-1.5x faster that way than as (O, L) @ (L, K)
    # with the columns transposed; a shallow K, the MNIST CNN's conv1 (9), keeps the latter)
    by_cols = inner >= 64
    totals = _pool.zeros((threads, groups) + ((inner, per_group) if by_cols else
                                              (per_group, inner)), g.dtype)
    if totals.size and n * length:
        g4 = g.reshape(n, groups, per_group, length)
        spans, step = _batches(n, rows * length)
        buffers = _Buffers(step * rows * length, x.dtype)
        phases = _Phases(x.shape, x.dtype, geometry)
        shares = [(t, spans[len(spans) * t // threads:len(spans) * (t + 1) // threads])
                  for t in range(threads)]

        def work(share, slot):
            t, own = share
            for start, stop in own:
                cols = buffers(slot, (stop - start) * rows * length)
                _unfold_into(x[start:stop], geometry, cols, rows * length, length, phases,
                             slot)
                cols4 = cols.reshape(stop - start, groups, inner, length)
                part = (np.matmul(cols4, g4[start:stop].transpose(0, 1, 3, 2)) if by_cols
                        else np.matmul(g4[start:stop], cols4.transpose(0, 1, 3, 2)))
                totals[t] += part[0] if stop - start == 1 else part.sum(0)

        _on_threads(shares, work, size)
    total = totals[0]
    for t in range(1, threads):
        total += totals[t]
    if by_cols:
        total = np.ascontiguousarray(total.transpose(0, 2, 1))
    return total.reshape(tuple(weight_shape))


def unfold(x, kernel, dilation, padding, stride):
    """``F.unfold``: ``x`` (N, C, H, W) as its sliding blocks, (N, C*kh*kw, L) (an unbatched
    (C, H, W): (C*kh*kw, L)), channel-major within a block (im2col in the ``(N, K, L)``
    layout). The result owns its memory (no view of a larger array). Bool blocks are copied
    as bytes."""
    if x.dtype == np.bool_:
        return unfold(np.ascontiguousarray(x).view(np.uint8), kernel, dilation, padding,
                      stride).view(np.bool_)
    unbatched = x.ndim == 3
    x = np.ascontiguousarray(x)
    if unbatched:
        x = x.reshape((1,) + x.shape)
    pads = (padding[0], padding[0], padding[1], padding[1])
    out_sp = _out_sp(x.shape, kernel, stride, pads, dilation)
    rows, length = x.shape[1] * _prod(kernel), _prod(out_sp)
    result = _pool.empty((rows, length) if unbatched else (x.shape[0], rows, length), x.dtype)
    if result.size:
        _unfold_into(x, _geometry(kernel, stride, pads, dilation, out_sp), result.reshape(-1),
                     rows * length, length)
    return result


def fold(cols, output_size, kernel, dilation, padding, stride):
    """``F.fold``, the adjoint of ``unfold``: blocks (N, C*kh*kw, L) summed into
    (N, C, *output_size) (unbatched (C*kh*kw, L): (C, *output_size)); bool blocks are or-ed
    (PyTorch's sum in bool)."""
    if cols.dtype == np.bool_:
        total = fold(np.ascontiguousarray(cols).view(np.uint8).astype(np.int64), output_size,
                     kernel, dilation, padding, stride)
        return total != 0
    unbatched = cols.ndim == 2
    cols = np.ascontiguousarray(cols)
    if unbatched:
        cols = cols.reshape((1,) + cols.shape)
    n, rows, length = cols.shape
    pads = (padding[0], padding[0], padding[1], padding[1])
    out_sp = _out_sp((n, 0) + tuple(output_size), kernel, stride, pads, dilation)
    c = rows // _prod(kernel)
    result = _pool.zeros(((c,) if unbatched else (n, c)) + tuple(output_size), cols.dtype)
    if result.size and cols.size:
        _fold_into(cols.reshape(-1), _geometry(kernel, stride, pads, dilation, out_sp),
                   result.reshape((n, c) + tuple(output_size)), rows * length, length)
    return result
