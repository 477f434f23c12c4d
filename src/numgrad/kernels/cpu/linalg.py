"""Matrix products on the CPU: BLAS through NumPy (a tuned GEMM beats any JIT loop). Transposed
operands are NumPy views, which BLAS takes as they are (no copy).

A large 2-D product (more than ``ONE_THREAD_MACS`` multiply-adds) is split into ``parts``
blocks of rows of the result (or of columns, where it has more columns than rows), each one
GEMM on one BLAS thread, computed on numgrad's worker threads (``_workers``). OpenBLAS's own
threads are then never woken by numgrad: after each threaded product they spin for about 0.1 s
(``OPENBLAS_THREAD_TIMEOUT``'s default) and on a 2-core machine took the core that numgrad's
next kernels needed (the MNIST CNN's step: 244 ms of CPU for 131 ms of wall time). Where the
helper threads spin between jobs, the blocks are posted to them without the GIL (``_blocks``,
``_spin.run_split``): handed over as a Python job, a block started 15-25 us late, which made
products of a few million multiply-adds twice as slow as OpenBLAS's own threads (the MLP
micro-workload's step 0.83 -> 0.72 ms posted, a small Transformer's 9.2 -> 8.4). The split
depends on the shape and ``_workers.count()`` only, never on the machine's load, so a product's
bits are the same at every call; ``numgrad.compile``'s whole programs (``compiler/whole.py``)
call GEMM themselves for products of at most ``ONE_THREAD_MACS`` only, which OpenBLAS computes
on one thread as this module does, and leave larger ones to this function."""
from __future__ import annotations

import numpy as np

from ... import _pool
from ..._threads import one_blas_thread
from ..formulas import OP_CODES
from . import _workers, blas, elementwise

# OpenBLAS computes a GEMM of at most this many multiply-adds on one thread whatever its thread
# count (``SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD`` in its ``interface/gemm.c``).
ONE_THREAD_MACS = 65536 * 4


def _t(x: np.ndarray) -> np.ndarray:
    return x.T if x.ndim == 2 else np.swapaxes(x, -1, -2)


# A product of fewer multiply-adds than this is computed whole, on one BLAS thread, though it
# is over one BLAS thread's size: split in two, its blocks cost more than they saved. Medians of
# 300 alternating calls, float32, one thread whole against two threads posted (``_blocks``):
# 128 x 64 @ 64 x 128 (1M) 26-37 us whole, 27-54 split; at 2M the split took 0.84-0.95 of the
# whole's time, at 4M 0.70-0.72, at 8M 0.64-0.70.
SPLIT_MACS = 1 << 21


def product_parts(m: int, n: int, k: int, parts: int) -> tuple:
    """How a 2-D product ``(m, k) @ (k, n)`` is split: ``(axis, spans)``, ``axis`` 0 (blocks of
    rows of the result) or 1 (of columns), ``spans`` the (start, stop) of each block; one span
    where the product is not split (under ``SPLIT_MACS``). Each block has at least 2 rows and 2
    columns (NumPy calls GEMM for it, not GEMV)."""
    axis = 0 if m >= n else 1
    size = (m, n)[axis]
    macs = m * n * k
    parts = min(parts, size // 2, max(1, macs // ONE_THREAD_MACS)) if macs >= SPLIT_MACS \
        else 1
    return axis, _workers.spans(size, max(1, parts))


def matmul(a: np.ndarray, b: np.ndarray, trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """``op(a) @ op(b)``, ``op`` transposing the last two dimensions where asked: ``a`` 2-D or
    3-D (a batch), ``b`` 1-D (a vector, never transposed), 2-D or 3-D (the same batch)."""
    if trans_a:
        a = _t(a)
    if trans_b and b.ndim > 1:
        b = _t(b)
    split = _split_size(a, b)
    if split is not None:
        return _split_product(a, b, *split)
    if a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and a.shape[1] == b.shape[0] and \
            a.shape[0] * b.shape[1] * a.dtype.itemsize >= _pool.POOL_FROM:
        return np.matmul(a, b, out=_pool.empty((a.shape[0], b.shape[1]), a.dtype))
    return np.matmul(a, b)


def _split_size(a: np.ndarray, b: np.ndarray):
    """``(m, n, k)`` where ``a @ b`` is split over the threads (``_split_product``): two float
    matrices of one dtype, more multiply-adds than one BLAS thread's, at least 2 rows and
    columns; else None (NumPy's product)."""
    if a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and a.dtype.char in "fd":
        m, k = a.shape
        n = b.shape[1]
        if m * n * k > ONE_THREAD_MACS and min(m, n) >= 2 and k == b.shape[0]:
            return m, n, k
    return None


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` for two float matrices and a C-contiguous ``out`` of their dtype, split
    as ``matmul`` splits it (the kernels that write a product into a buffer of theirs: an LSTM
    layer's steps and weight gradient)."""
    split = _split_size(a, b)
    if split is not None:
        _split_product(a, b, *split, out)
    else:
        np.matmul(a, b, out=out)


# From this many multiply-adds (a split product), ``matmul_add_row`` adds its row to each block
# of the product on the thread that computed it; below, the product and the addition are the
# general ones (which ``numgrad.compile``'s whole programs fuse).
ROW_BIAS_FUSED_MACS = ONE_THREAD_MACS


def matmul_add_row(a: np.ndarray, b: np.ndarray, c: np.ndarray, trans_a: bool = False,
                   trans_b: bool = False) -> np.ndarray:
    """``op(a) @ op(b) + c`` for two float matrices and a row ``c`` of the product's width and
    dtype (F.linear's and addmm's bias), the product split as ``matmul`` splits it and ``c``
    added to each block by the thread that computed it, while the block is in its cache. After
    a split product, the row added on one thread read the other thread's half from the other
    core: 1024 x 128 @ 128 x 384 float32 at two threads took 0.80 ms with its bias against 0.59
    without (0.09 ms more at one thread). float32 blocks start from the row and GEMM adds the
    product to it (``_blocks``, PyTorch's addmm); float64 ones are the product, then one
    rounded addition of the row, as ``binary(ADD, matmul(a, b), c)``."""
    if trans_a:
        a = _t(a)
    if trans_b:
        b = _t(b)
    split = _split_size(a, b)  # (ROW_BIAS_FUSED_MACS: the split's size)
    if split is not None and c.dtype == a.dtype and c.shape == (split[1],):
        return _split_product(a, b, *split, row=c)
    return elementwise.binary(OP_CODES["ADD"], matmul(a, b), c)


def _split_product(a, b, m, n, k, out=None, row=None):
    """``a @ b`` of two float matrices, block by block (``product_parts``) on one BLAS thread,
    plus ``row`` (n,) where given. float32 blocks are computed by the posting kernel
    (``_blocks``): posted to the helper threads without the GIL where they spin, else handed to
    them as Python jobs, the same calls either way; other blocks are NumPy's products, the row
    added to each by the thread that computed it."""
    axis, spans = product_parts(m, n, k, _workers.count())
    if out is None:
        out = _pool.empty((m, n), a.dtype)
    threads = _workers.threads_for(len(spans), True)
    blocks = _blocks(a, b, out, row, axis, spans) if row is not None or len(spans) > 1 else None
    if blocks is not None:
        if not (len(spans) > 1 and threads == len(spans) and _workers.post_products(blocks)):
            _workers.run_products(blocks, threads)
        return out

    def rows(span, slot):
        block = out[span[0]:span[1]]
        np.matmul(a[span[0]:span[1]], b, out=block)
        if row is not None:
            np.add(block, row, out=block)

    def columns(span, slot):
        block = out[:, span[0]:span[1]]
        np.matmul(a, b[:, span[0]:span[1]], out=block)
        if row is not None:
            np.add(block, row[span[0]:span[1]], out=block)

    with one_blas_thread():
        _workers.run(spans, rows if axis == 0 else columns, threads, blas=False)
    return out


def _blocks(a, b, out, row, axis, spans):
    """``_split_product``'s blocks as the posting kernel's products (``_workers.post_products``,
    ``_spin._gemm_job``): each the GEMM call NumPy's ``matmul`` makes for that block
    (``blas.operand``), and where there is a row, the block's rows set to it first and the
    product added by GEMM (beta 1), as PyTorch's addmm adds its bias. (The row added after the
    product, a second pass over the block, took 16-19% of 1024 x 128 @ 128 x 384-512 float32
    products on two threads, 1-2% this way.) The bits are the product's then the row's
    addition where the depth is one of GEMM's blocks (OpenBLAS's: up to 448 here), and PyTorch's
    order past it. None where the blocks are not all such calls: a dtype other than float32,
    which training runs in (float64 products stay NumPy's, which keeps the posting kernel's
    first compilation to 0.6-0.7 s); an operand NumPy would copy first; a strided row; an
    output over an operand (NumPy's matmul copies first); no posting kernel here."""
    if not blas.AVAILABLE or a.dtype.char != "f" or b.dtype != a.dtype or \
            out.dtype != a.dtype:
        return None
    op_a, op_b, op_out = blas.operand(a), blas.operand(b), blas.operand(out)
    if op_a is None or op_b is None or op_out is None or op_out[0] or (
            row is not None and (row.dtype != a.dtype or row.strides[0] != row.itemsize)):
        return None
    if any(x is not None and np.may_share_memory(out, x) for x in (a, b, row)) or \
            not _workers.posting():
        return None
    item = a.itemsize
    (ta, lda), (tb, ldb), ldc = op_a, op_b, op_out[1]
    pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data
    pr = 0 if row is None else row.ctypes.data
    m, k = a.shape
    n = b.shape[1]
    if axis == 0:
        return [(item, ta, tb, stop - start, n, k, pa + start * a.strides[0], lda, pb, ldb,
                 pc + start * out.strides[0], ldc, pr) for start, stop in spans]
    return [(item, ta, tb, m, stop - start, k, pa, lda, pb + start * b.strides[1], ldb,
             pc + start * item, ldc, pr and pr + start * item) for start, stop in spans]


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The dot product of two vectors, as a 0-d array."""
    return np.asarray(np.dot(a, b))
