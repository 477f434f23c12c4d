"""Matrix products called from inside Numba functions: NumPy's own BLAS, its GEMM.

``numgrad.compile`` runs a whole step as one Numba function where it can (``compiler/whole.py``);
its matrix products must then be called from compiled code, not through ``np.matmul``. Numba's
own ``np.dot`` needs SciPy (not a dependency), so the GEMM of the BLAS NumPy ships
(``scipy-openblas``, 64-bit integers) is declared to LLVM under a name of numgrad's
(``numgrad_sgemm``, ``numgrad_dgemm``) and called with the arguments NumPy's ``matmul`` gives it
for two 2-D operands (row-major, each operand as it is laid out or transposed), so the products
are NumPy's to the bit. The code refers to the symbol by name, never by address, so it caches
across processes; each process registers the address when this module is imported.
``AVAILABLE`` is False where that BLAS is not found (another NumPy build): then nothing calls in.
"""
from __future__ import annotations

import ctypes
import glob
import os

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types

# (name in the library, the name LLVM knows it by): the 64-bit-integer CBLAS interface
_SYMBOLS = {"s": ("scipy_cblas_sgemm64_", "numgrad_sgemm"),
            "d": ("scipy_cblas_dgemm64_", "numgrad_dgemm")}


def _register() -> bool:
    folder = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(folder, "*openblas*"))):
        try:
            library = ctypes.CDLL(path)  # (already loaded by NumPy: the same handle)
            addresses = {k: ctypes.cast(getattr(library, name), ctypes.c_void_p).value
                         for k, (name, _) in _SYMBOLS.items()}
        except (OSError, AttributeError):
            continue
        for k, (_, alias) in _SYMBOLS.items():
            llvm.add_symbol(alias, addresses[k])
        return True
    return False


AVAILABLE = _register()

_i32, _i64, _ptr = types.int32, types.int64, types.uintp
_sgemm = types.ExternalFunction("numgrad_sgemm", types.void(
    _i32, _i32, _i32, _i64, _i64, _i64, types.float32, _ptr, _i64, _ptr, _i64, types.float32,
    _ptr, _i64))
_dgemm = types.ExternalFunction("numgrad_dgemm", types.void(
    _i32, _i32, _i32, _i64, _i64, _i64, types.float64, _ptr, _i64, _ptr, _i64, types.float64,
    _ptr, _i64))

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@njit(cache=True)
def sgemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c):
    """``c = op(a) @ op(b)`` for float32: ``c`` (m, n) C-contiguous; ``a``, ``b`` arrays whose
    first element starts each operand, with leading dimensions ``lda``, ``ldb``."""
    _sgemm(np.int32(_ROW_MAJOR), np.int32(_TRANS if trans_a else _NO_TRANS),
           np.int32(_TRANS if trans_b else _NO_TRANS), m, n, k, np.float32(1.0), a.ctypes.data,
           lda, b.ctypes.data, ldb, np.float32(0.0), c.ctypes.data, n)


@njit(cache=True)
def dgemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c):
    """``sgemm`` for float64."""
    _dgemm(np.int32(_ROW_MAJOR), np.int32(_TRANS if trans_a else _NO_TRANS),
           np.int32(_TRANS if trans_b else _NO_TRANS), m, n, k, 1.0, a.ctypes.data, lda,
           b.ctypes.data, ldb, 0.0, c.ctypes.data, n)


@njit(cache=True, nogil=True)
def gemm_columns(a, b, c, start, stop):
    """``c[:, start:stop] = a @ b[:, start:stop]`` for float32 or float64 2-D arrays whose
    rows are contiguous (each with its own row stride, read as the leading dimension), in the
    GEMM call NumPy's ``matmul`` makes for those views: its bits."""
    m, k, n = a.shape[0], a.shape[1], stop - start
    if m == 0 or n <= 0:
        return
    item = c.itemsize
    lda, ldb, ldc = a.strides[0] // item, b.strides[0] // item, c.strides[0] // item
    pb, pc = b.ctypes.data + start * item, c.ctypes.data + start * item
    if item == 4:
        _sgemm(np.int32(_ROW_MAJOR), np.int32(_NO_TRANS), np.int32(_NO_TRANS), m, n, k,
               np.float32(1.0), a.ctypes.data, lda, pb, ldb, np.float32(0.0), pc, ldc)
    else:
        _dgemm(np.int32(_ROW_MAJOR), np.int32(_NO_TRANS), np.int32(_NO_TRANS), m, n, k, 1.0,
               a.ctypes.data, lda, pb, ldb, 0.0, pc, ldc)


def operand(array: np.ndarray):
    """(transposed, leading dimension) with which NumPy's matmul hands a 2-D operand to GEMM
    (its ``is_blasable2d`` tests, in its order), or None where it would not (a copy first)."""
    if array.ndim != 2 or array.dtype.kind != "f":
        return None
    item = array.itemsize
    s0, s1 = array.strides
    rows, cols = array.shape
    if s1 == item and s0 % item == 0 and s0 // item >= cols:
        return False, s0 // item
    if s0 == item and s1 % item == 0 and s1 // item >= rows:
        return True, s1 // item
    return None
