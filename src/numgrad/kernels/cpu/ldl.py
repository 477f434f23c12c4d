"""The LDL^T factorisation of symmetric matrices with Bunch-Kaufman pivoting, and its solve, on
the CPU (``K.ldl_factor``, ``K.ldl_solve``): the factors and pivots exactly as LAPACK's
``?sytrf`` gives them with ``uplo='L'`` (PyTorch returns LAPACK's), and ``?sytrs``'s solve.

``ldl_factor`` reads the lower triangle of each matrix; the result holds ``L`` below the
diagonal (its unit diagonal implied) and the 1x1 and 2x2 blocks of ``D`` on the diagonal and
first subdiagonal, zeros above. The pivots are LAPACK's, 1-based int32: ``p[k] > 0`` a 1x1 block
whose row and column ``k`` were swapped with ``p[k]``; ``p[k] = p[k+1] < 0`` a 2x2 block at
``k, k+1`` whose row and column ``k+1`` were swapped with ``-p[k]``. ``info`` is the 1-based
column of the first zero pivot (0 if none): the factorisation goes on past it, as LAPACK's.
Computed in the input's dtype, as LAPACK's single and double precision routines.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_ALPHA = (1.0 + 17.0 ** 0.5) / 8.0  # (Bunch-Kaufman's bound, LAPACK's)


@njit(cache=True)
def _first_largest(a, z, i0, i1, j0, j1):
    """(index, |value|) of the first largest magnitude of ``a[z, i, j]`` along a row
    (``i0 == i1``) or a column (``j0 == j1``) from ``(i0, j0)`` to ``(i1, j1)`` inclusive."""
    best, at = abs(a[z, i0, j0]), 0
    n = max(i1 - i0, j1 - j0)
    for s in range(1, n + 1):
        v = abs(a[z, i0 + s, j0] if j0 == j1 else a[z, i0, j0 + s])
        if v > best:
            best, at = v, s
    return at, best


@njit(cache=True)
def _swap(a, z, i, j, k, l):
    t = a[z, i, j]
    a[z, i, j] = a[z, k, l]
    a[z, k, l] = t


@njit(cache=True)
def _sytf2_lower(a, ipiv, info, alpha):
    """LAPACK's unblocked ``?sytf2`` (``uplo='L'``, 0-based here) on each matrix of ``a``
    (``(batch, n, n)``, overwritten), its pivots into ``ipiv`` (1-based) and ``info``."""
    batch, n, _ = a.shape
    for z in range(batch):
        info[z] = 0
        k = 0
        while k < n:
            kstep = 1
            absakk = abs(a[z, k, k])
            imax, colmax = k, 0.0
            if k + 1 < n:
                s, colmax = _first_largest(a, z, k + 1, n - 1, k, k)
                imax = k + 1 + s
            kp = k
            # (a zero column; C's fmax: a NaN diagonal counts as zero, as MKL's, which
            # PyTorch's CPU build calls)
            if (colmax if absakk != absakk else max(absakk, colmax)) == 0.0:
                if info[z] == 0:
                    info[z] = k + 1
            else:
                if not absakk >= alpha * colmax:
                    # the largest off-diagonal magnitude in row (and column) imax
                    s, rowmax = _first_largest(a, z, imax, imax, k, imax - 1)
                    if imax + 1 < n:
                        s, v = _first_largest(a, z, imax + 1, n - 1, imax, imax)
                        rowmax = max(rowmax, v)
                    if absakk >= alpha * colmax * (colmax / rowmax):
                        kp = k
                    elif abs(a[z, imax, imax]) >= alpha * rowmax:
                        kp = imax
                    else:
                        kp = imax
                        kstep = 2
                kk = k + kstep - 1
                if kp != kk:  # (rows and columns kk and kp of the trailing matrix swapped)
                    for i in range(kp + 1, n):
                        _swap(a, z, i, kk, i, kp)
                    for j in range(kk + 1, kp):
                        _swap(a, z, j, kk, kp, j)
                    _swap(a, z, kk, kk, kp, kp)
                    if kstep == 2:
                        _swap(a, z, k + 1, k, kp, k)
                if kstep == 1:
                    if k + 1 < n:
                        d11 = 1.0 / a[z, k, k]
                        for j in range(k + 1, n):
                            t = -d11 * a[z, j, k]
                            if t != 0.0:
                                for i in range(j, n):
                                    a[z, i, j] += a[z, i, k] * t
                        for i in range(k + 1, n):
                            a[z, i, k] *= d11
                elif k + 2 < n:
                    d21 = a[z, k + 1, k]
                    d11 = a[z, k + 1, k + 1] / d21
                    d22 = a[z, k, k] / d21
                    t = 1.0 / (d11 * d22 - 1.0)
                    d21 = t / d21
                    for j in range(k + 2, n):
                        wk = d21 * (d11 * a[z, j, k] - a[z, j, k + 1])
                        wkp1 = d21 * (d22 * a[z, j, k + 1] - a[z, j, k])
                        for i in range(j, n):
                            a[z, i, j] = a[z, i, j] - a[z, i, k] * wk - a[z, i, k + 1] * wkp1
                        a[z, j, k] = wk
                        a[z, j, k + 1] = wkp1
            if kstep == 1:
                ipiv[z, k] = kp + 1
            else:
                ipiv[z, k] = ipiv[z, k + 1] = -(kp + 1)
            k += kstep


@njit(cache=True)
def _swap_rows(b, z, i, j):
    for c in range(b.shape[2]):
        t = b[z, i, c]
        b[z, i, c] = b[z, j, c]
        b[z, j, c] = t


@njit(cache=True)
def _sytrs_lower(a, ipiv, b):
    """LAPACK's ``?sytrs`` (``uplo='L'``): ``b`` (``(batch, n, nrhs)``) overwritten with the
    solution of ``A X = B`` for ``A`` as ``_sytf2_lower`` factored it (``a``, ``ipiv``: the
    same batch)."""
    batch, n, nrhs = b.shape
    for z in range(batch):
        k = 0
        while k < n:  # L D Y = B
            if ipiv[z, k] > 0:
                _swap_rows(b, z, k, ipiv[z, k] - 1)
                for i in range(k + 1, n):
                    for c in range(nrhs):
                        b[z, i, c] -= a[z, i, k] * b[z, k, c]
                for c in range(nrhs):
                    b[z, k, c] /= a[z, k, k]
                k += 1
            else:
                _swap_rows(b, z, k + 1, -ipiv[z, k] - 1)
                for i in range(k + 2, n):
                    for c in range(nrhs):
                        b[z, i, c] -= a[z, i, k] * b[z, k, c]
                        b[z, i, c] -= a[z, i, k + 1] * b[z, k + 1, c]
                akm1k = a[z, k + 1, k]
                akm1 = a[z, k, k] / akm1k
                ak = a[z, k + 1, k + 1] / akm1k
                denom = akm1 * ak - 1.0
                for c in range(nrhs):
                    bkm1 = b[z, k, c] / akm1k
                    bk = b[z, k + 1, c] / akm1k
                    b[z, k, c] = (ak * bkm1 - bk) / denom
                    b[z, k + 1, c] = (akm1 * bk - bkm1) / denom
                k += 2
        k = n - 1
        while k >= 0:  # L^T X = Y
            step = 1 if ipiv[z, k] > 0 else 2
            for j in range(k - step + 1, k + 1):
                for c in range(nrhs):
                    s = b[z, j, c]
                    for i in range(k + 1, n):
                        s -= a[z, i, j] * b[z, i, c]
                    b[z, j, c] = s
            _swap_rows(b, z, k, abs(ipiv[z, k]) - 1)
            k -= step


@njit(cache=True)
def _pivots_ok(ipiv, n) -> bool:
    """Whether each row of ``ipiv`` is a sequence LAPACK's factorisation can give (each in
    1..n; negative ones in equal pairs), so that the solve reads nothing out of bounds."""
    for z in range(ipiv.shape[0]):
        k = 0
        while k < n:
            p = ipiv[z, k]
            if p > 0:
                if p > n:
                    return False
                k += 1
            elif p < 0 and -p <= n and k + 1 < n and ipiv[z, k + 1] == p:
                k += 2
            else:
                return False
    return True


def ldl_factor(a: np.ndarray) -> tuple:
    """(LD, pivots, info) of each matrix of ``a`` (``(*, n, n)``, floating)."""
    shape = a.shape
    n = shape[-1]
    work = np.ascontiguousarray(np.tril(a).reshape(math.prod(shape[:-2]), n, n))
    ipiv = np.zeros(work.shape[:2], np.int32)
    info = np.zeros(work.shape[0], np.int32)
    if work.size:
        _sytf2_lower(work, ipiv, info, work.dtype.type(_ALPHA))
    return work.reshape(shape), ipiv.reshape(shape[:-1]), info.reshape(shape[:-2])


def ldl_solve(ld: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X`` with ``A X = B`` for ``A`` given by ``ldl_factor``'s ``ld`` and ``pivots``
    (broadcast over their batch and ``b``'s)."""
    n, nrhs = b.shape[-2], b.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    x = np.array(np.broadcast_to(b, batch + (n, nrhs)), dtype=ld.dtype)
    if x.size:
        a = np.ascontiguousarray(np.broadcast_to(ld, batch + ld.shape[-2:])).reshape(-1, n, n)
        p = np.ascontiguousarray(np.broadcast_to(pivots, batch + pivots.shape[-1:]),
                                 dtype=np.int32).reshape(-1, n)
        x = x.reshape(-1, n, nrhs)
        if not _pivots_ok(p, n):  # (LAPACK reads out of bounds; PyTorch checks nothing)
            raise RuntimeError("torch.linalg.ldl_solve: the pivots are not LAPACK's (each in "
                               "1..n, the negative ones in equal pairs)")
        _sytrs_lower(a, p, x)
    return x.reshape(batch + (n, nrhs))
