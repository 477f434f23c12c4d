"""Matrix products on CUDA: one shared-memory tiled GEMM, with the CPU module's interface
(``matmul(a, b, trans_a, trans_b)``, ``dot``).

``out[z] = op(a[z]) @ op(b[z])`` for each matrix ``z`` of a batch, ``op`` transposing where asked,
so a backward formula (``grad @ b.T``, ``a.T @ grad``) reads its operands where they lie instead
of copying a transpose first. An operand without a batch dimension is shared by every matrix of
the batch (batch stride 0).

Each block computes a ``BM`` x ``BN`` tile of the output. For each step of ``BK`` along the
reduced dimension its threads stage the matching ``BM`` x ``BK`` tile of ``op(a)`` and ``BK`` x
``BN`` tile of ``op(b)`` in shared memory (zero-padded past the edges, so any shape works; loads
follow the operand's contiguous dimension, so they coalesce whether it is transposed or not),
then each thread accumulates a ``TM`` x ``TN`` block of outputs in registers: per step of the
reduced dimension it reads ``TM + TN`` values from shared memory for ``TM * TN`` multiply-adds.
A thread's outputs are strided by the thread grid (row ``ty + i * TY``, column ``tx + j * TX``),
so a warp reads consecutive shared-memory words and writes consecutive output columns. Blocks
stride over the tiles of every matrix of the batch (a 1-D grid of at most 65535 blocks).
Accumulation is in the operands' dtype
(float32 or float64), as BLAS.

The simulator runs each thread as a Python thread: it gets small tiles (the same code), which
also makes the tests cross tile edges with small matrices.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, float64

from ..formulas import OP_CODES
from .elementwise import binary
from .memory import _SIMULATOR, empty
from .layout import ascontiguous

if _SIMULATOR:
    BM = BN = 16
    BK = 8
    TM = TN = 2
else:
    BM = BN = 64
    BK = 16
    TM = TN = 4
TX, TY = BN // TN, BM // TM  # threads per block along columns and rows
NT = TX * TY
_MAX_BLOCKS = 1 if _SIMULATOR else 65535


def _make_gemm(dtype):
    @cuda.jit
    def gemm(a, b, out, batch, M, N, K, trans_a, trans_b, stride_a, stride_b):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * TX + tx
        tiles_n = (N + BN - 1) // BN
        tiles = (M + BM - 1) // BM * tiles_n
        As = cuda.shared.array((BK, BM), dtype)
        Bs = cuda.shared.array((BK, BN), dtype)
        ra = cuda.local.array(TM, dtype)
        rb = cuda.local.array(TN, dtype)
        acc = cuda.local.array((TM, TN), dtype)
        for w in range(cuda.blockIdx.x, batch * tiles, cuda.gridDim.x):  # uniform in the block
            z = w // tiles
            row0 = (w % tiles) // tiles_n * BM
            col0 = (w % tiles) % tiles_n * BN
            abase = z * stride_a
            bbase = z * stride_b
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] = 0
            for k0 in range(0, K, BK):
                for e in range(tid, BM * BK, NT):
                    if trans_a:  # a is (K, M): consecutive threads take consecutive rows m
                        kk = e // BM
                        m = e % BM
                    else:  # a is (M, K): consecutive threads take consecutive kk
                        m = e // BK
                        kk = e % BK
                    gm = row0 + m
                    gk = k0 + kk
                    if gm < M and gk < K:
                        As[kk, m] = a[abase + (gk * M + gm if trans_a else gm * K + gk)]
                    else:
                        As[kk, m] = 0
                for e in range(tid, BN * BK, NT):
                    if trans_b:  # b is (N, K)
                        n = e // BK
                        kk = e % BK
                    else:  # b is (K, N)
                        kk = e // BN
                        n = e % BN
                    gn = col0 + n
                    gk = k0 + kk
                    if gn < N and gk < K:
                        Bs[kk, n] = b[bbase + (gn * K + gk if trans_b else gk * N + gn)]
                    else:
                        Bs[kk, n] = 0
                cuda.syncthreads()
                for kk in range(BK):
                    for i in range(TM):
                        ra[i] = As[kk, ty + i * TY]
                    for j in range(TN):
                        rb[j] = Bs[kk, tx + j * TX]
                    for i in range(TM):
                        for j in range(TN):
                            acc[i, j] += ra[i] * rb[j]
                cuda.syncthreads()
            obase = z * M * N
            for i in range(TM):
                r = row0 + ty + i * TY
                if r < M:
                    for j in range(TN):
                        c = col0 + tx + j * TX
                        if c < N:
                            out[obase + r * N + c] = acc[i, j]

    return gemm


_GEMM = {np.dtype(np.float32): _make_gemm(float32), np.dtype(np.float64): _make_gemm(float64)}
_TYPE_NAMES = {"int64": "Long", "int32": "Int", "bool": "Bool", "float16": "Half"}
_CONFIGS: dict = {}


def _launch(kernel, blocks: int):
    # (The simulator's kernel[...] configures the kernel object itself and returns it, so a cached
    # configuration there is whichever came last: the kernel strides over tiles, so any works.)
    key = (kernel, blocks)
    configured = _CONFIGS.get(key)
    if configured is None:
        if len(_CONFIGS) > 4096:
            _CONFIGS.clear()
        configured = _CONFIGS[key] = kernel[blocks, (TX, TY)]
    return configured


def matmul(a, b, trans_a: bool = False, trans_b: bool = False):
    """``op(a) @ op(b)``, ``op`` transposing the last two dimensions where asked: ``a`` 2-D or
    3-D (a batch), ``b`` 1-D (a vector, never transposed), 2-D or 3-D (the same batch)."""
    a, b = ascontiguous(a), ascontiguous(b)
    kernel = _GEMM.get(a.dtype)
    if kernel is None or b.dtype != a.dtype:
        name = _TYPE_NAMES.get(a.dtype.name, a.dtype.name)
        raise RuntimeError(f'"addmm_cuda" not implemented for \'{name}\'')
    vector = b.ndim == 1
    if vector:
        b, trans_b = b.reshape(b.shape[0], 1), False
    ash, bsh = tuple(a.shape), tuple(b.shape)  # (device shapes refuse negative indices)
    M, K = ash[-1:-3:-1] if trans_a else ash[-2:]
    N = bsh[-2] if trans_b else bsh[-1]
    batch = ash[0] if a.ndim == 3 else bsh[0] if b.ndim == 3 else 1
    out = empty((batch, M, N), a.dtype)
    if out.size:
        tiles = batch * -(-M // BM) * -(-N // BN)
        _launch(kernel, min(tiles, _MAX_BLOCKS))(
            a.reshape(a.size), b.reshape(b.size), out.reshape(out.size), batch, M, N, K,
            bool(trans_a), bool(trans_b), M * K if a.ndim == 3 else 0, K * N if b.ndim == 3 else 0)
    shape = ((batch,) if a.ndim == 3 or b.ndim == 3 else ()) + (M,) + (() if vector else (N,))
    return out.reshape(shape)


def dot(a, b):
    """The dot product of two vectors, as a 0-d array (a 1 x K by K x 1 product)."""
    a, b = ascontiguous(a), ascontiguous(b)
    return matmul(a.reshape(1, a.shape[0]), b).reshape(())


# (the CPU adds a bias row to each block of a split product on the thread that computed it;
# here the product and the row addition are the general ones)
ROW_BIAS_FUSED_MACS = None


def matmul_add_row(a, b, c, trans_a: bool = False, trans_b: bool = False):
    """``op(a) @ op(b) + c``, ``c`` a row of the product's width added to each row."""
    return binary(OP_CODES["ADD"], matmul(a, b, trans_a, trans_b), c)
