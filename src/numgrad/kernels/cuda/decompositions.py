"""Linear algebra on CUDA (``K.linalg_*``), with the CPU module's interface
(``kernels/cpu/decompositions.py``), for batches of small matrices: one thread per matrix (or per
matrix and right-hand side column), each running the serial algorithm in the matrix's own slice
of device memory.

- LU with partial pivoting (LAPACK getf2's pivots and ``info``: the first exactly zero pivot),
  which gives ``det`` (the pivots' product and the permutation's sign), ``slogdet``, and with the
  substitutions ``solve`` and ``inv`` (a solve against the identity);
- Cholesky (potf2's order: a failed pivot stored, its ``info``);
- Householder QR (geqr2/org2r's reflectors and signs, so Q and R are LAPACK's);
- the symmetric eigendecomposition by cyclic Jacobi rotations, eigenvalues ascending;
- the SVD by one-sided Jacobi rotations (singular values descending, left vectors completed to
  an orthonormal basis where a full U is asked or a singular value is zero), and from it
  ``pinv`` and ``lstsq``.

The vectors of eigh and svd are each defined up to sign: these kernels' signs may differ from
LAPACK's (as PyTorch's CUDA and CPU results do), functions of them that do not depend on the
signs agree. Meant for matrices of up to some tens of rows; a failed factorisation reads ``info``
back (a sync, as PyTorch's checked functions do).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..cpu.decompositions import _fail as host_fail
from ..cpu.decompositions import linalg_det_backward as host_det_backward
from ..formulas import OP_CODES
from . import layout
from .elementwise import binary, cast, to_host, upload, where
from .linalg import matmul
from .reduction import reduce_dims, sum_dims
from .memory import empty, launch
from .layout import ascontiguous, flat

_MUL, _DIV, _GT, _MAX, _MAXIMUM = (OP_CODES[k] for k in ("MUL", "DIV", "GT", "MAX", "MAXIMUM"))

_SWEEPS = 60  # Jacobi sweeps at most (quadratic convergence: a dozen suffice in practice)


# ------------------------------------------------------------------ LU
@cuda.jit
def _lu_k(a, batch, n, piv, info, det, logabs, sign):
    """Factors each ``n`` x ``n`` matrix of ``a`` (flat, overwritten by L\\U) with partial
    pivoting; writes its pivots, ``info``, det, log|det| and the sign of det."""
    for z in range(cuda.grid(1), batch, cuda.gridsize(1)):
        base = z * n * n
        info[z] = 0
        d = 1.0
        lg = 0.0
        sg = 1.0
        for k in range(n):
            p = k
            best = abs(a[base + k * n + k])
            for i in range(k + 1, n):
                v = abs(a[base + i * n + k])
                if v > best:
                    best = v
                    p = i
            piv[z * n + k] = p
            if p != k:
                sg = -sg
                d = -d
                for j in range(n):
                    t = a[base + k * n + j]
                    a[base + k * n + j] = a[base + p * n + j]
                    a[base + p * n + j] = t
            u = a[base + k * n + k]
            d *= u
            if u == 0:
                if info[z] == 0:
                    info[z] = k + 1
                continue
            if u < 0:
                sg = -sg
            lg += u if math.isnan(u) else math.log(abs(u))  # (NaN passes through)
            for i in range(k + 1, n):
                f = a[base + i * n + k] / u
                a[base + i * n + k] = f
                for j in range(k + 1, n):
                    a[base + i * n + j] -= f * a[base + k * n + j]
        det[z] = d
        if info[z] != 0:
            logabs[z] = -math.inf
            sign[z] = 0
        else:
            logabs[z] = lg
            sign[z] = 0 if math.isnan(lg) else sg


@cuda.jit
def _lu_solve_k(lu, piv, b, batch, n, k):
    """``b`` (flat ``(batch, n, k)``) overwritten by ``A^-1 b`` from the LU factors, one thread
    per matrix and column."""
    for w in range(cuda.grid(1), batch * k, cuda.gridsize(1)):
        z = w // k
        c = w % k
        base = z * n * n
        bb = z * n * k + c
        for i in range(n):  # the row swaps, in order
            p = piv[z * n + i]
            if p != i:
                t = b[bb + i * k]
                b[bb + i * k] = b[bb + p * k]
                b[bb + p * k] = t
        for i in range(n):  # L y = P b (unit diagonal)
            s = b[bb + i * k]
            for j in range(i):
                s -= lu[base + i * n + j] * b[bb + j * k]
            b[bb + i * k] = s
        for i in range(n - 1, -1, -1):  # U x = y
            s = b[bb + i * k]
            for j in range(i + 1, n):
                s -= lu[base + i * n + j] * b[bb + j * k]
            b[bb + i * k] = s / lu[base + i * n + i]


def _lu(a):
    """(LU copy, pivots, info, det, logabs, sign) of the matrices of ``a`` (``(*, n, n)``)."""
    n = tuple(a.shape)[-1]
    batch = a.size // (n * n) if n else 0
    lu = layout.broadcast_copy(a, tuple(a.shape), a.dtype)  # (a copy, contiguous)
    piv = empty((batch * n,), np.int64)
    info = empty((batch,), np.int64)
    det = empty((batch,), a.dtype)
    logabs = empty((batch,), a.dtype)
    sign = empty((batch,), a.dtype)
    if batch:
        launch(_lu_k, batch)(flat(lu), batch, n, piv, info, det, logabs, sign)
    return lu, piv, info, det, logabs, sign


def _batch_shape(a) -> tuple:
    return tuple((a.shape)[:-2])


def _first(shape: tuple, array):
    """A per-matrix result (flat, one per matrix) in the batch shape."""
    return layout.reshape_view(array, shape)


def _fail(name: str, a, info, message) -> None:
    """PyTorch's error for the first matrix whose ``info`` is nonzero (a read back: a sync)."""
    host = np.asarray(to_host(info)).reshape(-1)
    bad = np.flatnonzero(host)
    if bad.size:
        z = int(bad[0])
        host_fail(name, a, z, message(int(host[z])))


def linalg_det(a):
    shape = _batch_shape(a)
    if not a.size:
        return layout.full(shape, 1.0, a.dtype)
    det = _lu(a)[3]
    return _first(shape, det)


def linalg_slogdet(a):
    shape = _batch_shape(a)
    if not a.size:
        return layout.full(shape, 1.0, a.dtype), layout.zeros(shape, a.dtype)
    _, _, _, _, logabs, sign = _lu(a)
    return _first(shape, sign), _first(shape, logabs)


def _solve_with(a, b, check: bool, name: str, message):
    """(``a^-1 b``, info int32) for matrices of one batch shape."""
    shape = _batch_shape(a)
    n = tuple(a.shape)[-1]
    k = tuple(b.shape)[-1]
    if not a.size or not b.size:
        return layout.zeros(tuple(b.shape), a.dtype), layout.zeros(shape, np.int32)
    lu, piv, info, _, _, _ = _lu(a)
    if check:
        _fail(name, a, info, message)
    x = layout.broadcast_copy(b, tuple(b.shape), a.dtype)
    batch = lu.size // (n * n)
    launch(_lu_solve_k, batch * k)(flat(lu), piv, flat(x), batch, n, k)
    return x, cast(_first(shape, info), np.int32)


def _identity(shape: tuple, n: int, dtype):
    eye = upload(np.eye(n, dtype=dtype))
    return layout.broadcast_copy(eye, shape + (n, n), dtype)


def linalg_inv(a, check: bool):
    n = tuple(a.shape)[-1]
    return _solve_with(a, _identity(_batch_shape(a), n, a.dtype), check, "linalg.inv",
                       lambda i: f"The diagonal element {i} is zero, the inversion could not be "
                       "completed because the input matrix is singular.")


def linalg_solve(a, b, left: bool, check: bool):
    if not left:  # (X a = b: a^T X^T = b^T)
        at = ascontiguous(layout.transpose(a, a.ndim - 1, a.ndim - 2))
        bt = ascontiguous(layout.transpose(b, b.ndim - 1, b.ndim - 2))
        x, info = linalg_solve(at, bt, True, check)
        return ascontiguous(layout.transpose(x, x.ndim - 1, x.ndim - 2)), info
    return _solve_with(a, b, check, "torch.linalg.solve",
                       lambda i: "The solver failed because the input matrix is singular.")


def linalg_det_backward(a, det, grad):
    """``grad det A^-T``, and the cofactors where det is exactly 0: the CPU's (those matrices
    through the host, one read of the determinants)."""
    n = tuple(a.shape)[-1]
    if n == 1:
        g = layout.broadcast_copy(grad, tuple(det.shape), a.dtype)
        return layout.broadcast_copy(layout.reshape_view(g, tuple(det.shape) + (1, 1)),
                                     tuple(a.shape), a.dtype)
    host_det = np.asarray(to_host(det))
    if (host_det == 0).any():
        return upload(host_det_backward(np.asarray(to_host(a)), host_det,
                                        np.asarray(to_host(grad))))
    inv, _ = linalg_inv(a, False)
    gd = binary(_MUL, ascontiguous(grad), ascontiguous(det))
    gd = layout.reshape_view(ascontiguous(gd), tuple(det.shape) + (1, 1))
    return binary(_MUL, _t(inv), gd)


# ------------------------------------------------------------------ Cholesky
@cuda.jit
def _cholesky_k(a, out, batch, n, info):
    """The CPU's ``_cholesky_k`` (the lower factor from the lower triangle; potf2's partial
    result and ``info`` on failure), flat arrays."""
    for z in range(cuda.grid(1), batch, cuda.gridsize(1)):
        base = z * n * n
        info[z] = 0
        for i in range(n * n):
            out[base + i] = 0
        for j in range(n):
            s = a[base + j * n + j]
            for k in range(j):
                s -= out[base + j * n + k] * out[base + j * n + k]
            if not s > 0:
                info[z] = j + 1
                out[base + j * n + j] = s
                for i in range(j + 1, n):
                    for c in range(j, i + 1):
                        out[base + i * n + c] = a[base + i * n + c]
                break
            d = math.sqrt(s)
            out[base + j * n + j] = d
            for i in range(j + 1, n):
                t = a[base + i * n + j]
                for k in range(j):
                    t -= out[base + i * n + k] * out[base + j * n + k]
                out[base + i * n + j] = t / d


def linalg_cholesky(a, upper: bool, check: bool, name: str):
    shape = _batch_shape(a)
    n = tuple(a.shape)[-1]
    if upper:
        a = layout.transpose(a, a.ndim - 1, a.ndim - 2)
    a = ascontiguous(a)
    if not a.size:
        return layout.zeros(tuple(a.shape), a.dtype), layout.zeros(shape, np.int32)
    batch = a.size // (n * n)
    out = empty(tuple(a.shape), a.dtype)
    info = empty((batch,), np.int64)
    launch(_cholesky_k, batch)(flat(a), flat(out), batch, n, info)
    if check:
        _fail(name, a, info, lambda i: "The factorization could not be completed because the "
              f"input is not positive-definite (the leading minor of order {i} is not "
              "positive-definite).")
    if upper:
        out = ascontiguous(layout.transpose(out, out.ndim - 1, out.ndim - 2))
    return out, cast(_first(shape, info), np.int32)


# ------------------------------------------------------------------ QR
@cuda.jit
def _qr_k(w, tau, q, batch, m, n, qcols, want_q):
    """Householder QR of each ``m`` x ``n`` matrix of ``w`` (flat, overwritten: R above the
    diagonal, the reflectors below, as geqr2), and with ``want_q`` the first ``qcols`` columns
    of Q (org2r) into ``q``."""
    k = min(m, n)
    for z in range(cuda.grid(1), batch, cuda.gridsize(1)):
        base = z * m * n
        for j in range(k):
            alpha = w[base + j * n + j]
            xnorm = 0.0
            for i in range(j + 1, m):
                xnorm += w[base + i * n + j] * w[base + i * n + j]
            xnorm = math.sqrt(xnorm)
            t = 0.0
            if xnorm != 0:
                beta = -math.copysign(math.sqrt(alpha * alpha + xnorm * xnorm), alpha)
                t = (beta - alpha) / beta
                scale = 1.0 / (alpha - beta)
                for i in range(j + 1, m):
                    w[base + i * n + j] *= scale
                w[base + j * n + j] = beta
                for c in range(j + 1, n):  # H = I - t v v^T on the trailing columns
                    s = w[base + j * n + c]
                    for i in range(j + 1, m):
                        s += w[base + i * n + j] * w[base + i * n + c]
                    s *= t
                    w[base + j * n + c] -= s
                    for i in range(j + 1, m):
                        w[base + i * n + c] -= s * w[base + i * n + j]
            tau[z * k + j] = t
        if want_q:
            qb = z * m * qcols
            for i in range(m):
                for c in range(qcols):
                    q[qb + i * qcols + c] = 1.0 if i == c else 0.0
            for j in range(k - 1, -1, -1):
                t = tau[z * k + j]
                if t == 0:
                    continue
                for c in range(qcols):
                    s = q[qb + j * qcols + c]
                    for i in range(j + 1, m):
                        s += w[base + i * n + j] * q[qb + i * qcols + c]
                    s *= t
                    q[qb + j * qcols + c] -= s
                    for i in range(j + 1, m):
                        q[qb + i * qcols + c] -= s * w[base + i * n + j]


@cuda.jit
def _upper_rows_k(w, r, batch, m, n, rows):
    """The first ``rows`` rows of each ``m`` x ``n`` matrix of ``w``, zeros below the diagonal."""
    for e in range(cuda.grid(1), batch * rows * n, cuda.gridsize(1)):
        z = e // (rows * n)
        i = (e // n) % rows
        c = e % n
        r[e] = w[z * m * n + i * n + c] if c >= i and i < m else 0


def linalg_qr(a, mode: str):
    m, n = tuple(a.shape)[-2:]
    k = min(m, n)
    shape = _batch_shape(a)
    qcols = m if mode == "complete" else k
    rows = m if mode == "complete" else k
    batch = int(np.prod(shape, dtype=np.int64))
    if not a.size:
        q = layout.zeros((0,), a.dtype) if mode == "r" else (
            _identity(shape, m, a.dtype) if mode == "complete" else
            layout.zeros(shape + (m, qcols), a.dtype))
        return q, layout.zeros(shape + (rows, n), a.dtype)
    w = layout.broadcast_copy(a, tuple(a.shape), a.dtype)
    tau = empty((max(batch * k, 1),), a.dtype)
    want = mode != "r"
    q = empty(shape + (m, qcols) if want else (1,), a.dtype)
    launch(_qr_k, batch)(flat(w), tau, flat(q), batch, m, n, qcols, want)
    r = empty(shape + (rows, n), a.dtype)
    launch(_upper_rows_k, r.size)(flat(w), flat(r), batch, m, n, rows)
    return (q if want else layout.zeros((0,), a.dtype)), r


# ------------------------------------------------------------------ eigh (Jacobi)
@cuda.jit
def _eigh_k(a, s, v, w, batch, n, upper, tol):
    """Eigenvalues (ascending, into ``w``) and eigenvectors (columns of ``v``) of each symmetric
    matrix of ``a`` read from one triangle, by cyclic Jacobi rotations on ``s`` (scratch)."""
    for z in range(cuda.grid(1), batch, cuda.gridsize(1)):
        base = z * n * n
        for i in range(n):
            for j in range(n):
                lo = (i >= j) != upper or i == j
                s[base + i * n + j] = a[base + i * n + j] if lo else a[base + j * n + i]
                v[base + i * n + j] = 1.0 if i == j else 0.0
        for _ in range(_SWEEPS):
            off = 0.0
            total = 0.0
            for i in range(n):
                for j in range(n):
                    x = s[base + i * n + j]
                    total += x * x
                    if i != j:
                        off += x * x
            if off <= tol * tol * total:
                break
            for p in range(n - 1):
                for r in range(p + 1, n):
                    apq = s[base + p * n + r]
                    if apq == 0:
                        continue
                    theta = (s[base + r * n + r] - s[base + p * n + p]) / (2 * apq)
                    t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1))
                    c = 1 / math.sqrt(t * t + 1)
                    sn = t * c
                    for k in range(n):  # columns p, r
                        x = s[base + k * n + p]
                        y = s[base + k * n + r]
                        s[base + k * n + p] = c * x - sn * y
                        s[base + k * n + r] = sn * x + c * y
                    for k in range(n):  # rows p, r
                        x = s[base + p * n + k]
                        y = s[base + r * n + k]
                        s[base + p * n + k] = c * x - sn * y
                        s[base + r * n + k] = sn * x + c * y
                    for k in range(n):
                        x = v[base + k * n + p]
                        y = v[base + k * n + r]
                        v[base + k * n + p] = c * x - sn * y
                        v[base + k * n + r] = sn * x + c * y
        for i in range(n):
            w[z * n + i] = s[base + i * n + i]
        for i in range(n):  # selection sort, ascending, the vectors with them
            best = i
            for j in range(i + 1, n):
                if w[z * n + j] < w[z * n + best]:
                    best = j
            if best != i:
                t = w[z * n + i]
                w[z * n + i] = w[z * n + best]
                w[z * n + best] = t
                for k in range(n):
                    t = v[base + k * n + i]
                    v[base + k * n + i] = v[base + k * n + best]
                    v[base + k * n + best] = t


def linalg_eigh(a, upper: bool, compute_v: bool):
    n = tuple(a.shape)[-1]
    shape = _batch_shape(a)
    if not a.size:
        return layout.zeros(shape + (n,), a.dtype), layout.zeros(
            tuple(a.shape) if compute_v else (0,), a.dtype)
    a = ascontiguous(a)
    batch = a.size // (n * n)
    s = empty(tuple(a.shape), a.dtype)
    v = empty(tuple(a.shape), a.dtype)
    w = empty(shape + (n,), a.dtype)
    tol = float(np.finfo(a.dtype).eps)
    launch(_eigh_k, batch)(flat(a), flat(s), flat(v), flat(w), batch, n, bool(upper), tol)
    return w, (v if compute_v else layout.zeros((0,), a.dtype))


# ------------------------------------------------------------------ SVD (one-sided Jacobi)
@cuda.jit
def _svd_k(a, u, v, s, batch, m, n, ucols, tol):
    """For each ``m`` x ``n`` matrix of ``a`` with ``m >= n``: ``u`` (``m`` x ``ucols``, the
    first ``n`` columns rotated copies of ``a``'s, normalised; the rest, and those of zero
    singular values, completed to an orthonormal basis), ``v`` (``n`` x ``n``) and ``s``
    (descending)."""
    for z in range(cuda.grid(1), batch, cuda.gridsize(1)):
        ab = z * m * n
        ub = z * m * ucols
        vb = z * n * n
        for i in range(m):
            for j in range(ucols):
                u[ub + i * ucols + j] = a[ab + i * n + j] if j < n else 0.0
        for i in range(n):
            for j in range(n):
                v[vb + i * n + j] = 1.0 if i == j else 0.0
        for _ in range(_SWEEPS):
            rotated = False
            for p in range(n - 1):
                for q in range(p + 1, n):
                    alpha = 0.0
                    beta = 0.0
                    gamma = 0.0
                    for i in range(m):
                        x = u[ub + i * ucols + p]
                        y = u[ub + i * ucols + q]
                        alpha += x * x
                        beta += y * y
                        gamma += x * y
                    if gamma == 0 or abs(gamma) <= tol * math.sqrt(alpha * beta):
                        continue
                    rotated = True
                    zeta = (beta - alpha) / (2 * gamma)
                    t = math.copysign(1.0, zeta) / (abs(zeta) + math.sqrt(1 + zeta * zeta))
                    c = 1 / math.sqrt(1 + t * t)
                    sn = c * t
                    for i in range(m):
                        x = u[ub + i * ucols + p]
                        y = u[ub + i * ucols + q]
                        u[ub + i * ucols + p] = c * x - sn * y
                        u[ub + i * ucols + q] = sn * x + c * y
                    for i in range(n):
                        x = v[vb + i * n + p]
                        y = v[vb + i * n + q]
                        v[vb + i * n + p] = c * x - sn * y
                        v[vb + i * n + q] = sn * x + c * y
            if not rotated:
                break
        for j in range(n):
            x = 0.0
            for i in range(m):
                x += u[ub + i * ucols + j] * u[ub + i * ucols + j]
            s[z * n + j] = math.sqrt(x)
        for i in range(n):  # descending, columns of u and v with them
            best = i
            for j in range(i + 1, n):
                if s[z * n + j] > s[z * n + best]:
                    best = j
            if best != i:
                t = s[z * n + i]
                s[z * n + i] = s[z * n + best]
                s[z * n + best] = t
                for k in range(m):
                    t = u[ub + k * ucols + i]
                    u[ub + k * ucols + i] = u[ub + k * ucols + best]
                    u[ub + k * ucols + best] = t
                for k in range(n):
                    t = v[vb + k * n + i]
                    v[vb + k * n + i] = v[vb + k * n + best]
                    v[vb + k * n + best] = t
        top = s[z * n] if n else 0.0
        for j in range(ucols):  # normalise; complete what is missing (Gram-Schmidt, twice)
            sj = s[z * n + j] if j < n else 0.0
            if j < n and sj > tol * top and sj > 0:
                for i in range(m):
                    u[ub + i * ucols + j] /= sj
                continue
            for e in range(m):  # the first unit vector that leaves enough after projecting
                for i in range(m):
                    u[ub + i * ucols + j] = 1.0 if i == e else 0.0
                for _ in range(2):
                    for c in range(j):
                        d = 0.0
                        for i in range(m):
                            d += u[ub + i * ucols + c] * u[ub + i * ucols + j]
                        for i in range(m):
                            u[ub + i * ucols + j] -= d * u[ub + i * ucols + c]
                x = 0.0
                for i in range(m):
                    x += u[ub + i * ucols + j] * u[ub + i * ucols + j]
                if x > 0.25:
                    x = math.sqrt(x)
                    for i in range(m):
                        u[ub + i * ucols + j] /= x
                    break


def _svd_tall(a, full_matrices: bool):
    """(U, S, V) of matrices with ``m >= n`` (``V`` not transposed)."""
    m, n = tuple(a.shape)[-2:]
    shape = _batch_shape(a)
    batch = int(np.prod(shape, dtype=np.int64))
    ucols = m if full_matrices else n
    u = empty(shape + (m, ucols), a.dtype)
    v = empty(shape + (n, n), a.dtype)
    s = empty(shape + (n,), a.dtype)
    tol = float(np.finfo(a.dtype).eps)
    launch(_svd_k, batch)(flat(ascontiguous(a)), flat(u), flat(v), flat(s), batch, m, n,
                          ucols, tol)
    return u, s, v


def _t(x):
    return ascontiguous(layout.transpose(x, x.ndim - 1, x.ndim - 2))


def linalg_svd(a, full_matrices: bool, compute_uv: bool):
    m, n = tuple(a.shape)[-2:]
    k = min(m, n)
    shape = _batch_shape(a)
    if not a.size:
        s = layout.zeros(shape + (k,), a.dtype)
        if not compute_uv:
            return layout.zeros((0,), a.dtype), s, layout.zeros((0,), a.dtype)
        if full_matrices:
            return _identity(shape, m, a.dtype), s, _identity(shape, n, a.dtype)
        return layout.zeros(shape + (m, k), a.dtype), s, layout.zeros(shape + (k, n), a.dtype)
    if m >= n:
        u, s, v = _svd_tall(a, full_matrices)
        vh = _t(v)
    else:  # A^T = V S U^T
        v, s, u = _svd_tall(_t(a), full_matrices)
        vh = _t(v)
    if not compute_uv:
        return layout.zeros((0,), a.dtype), s, layout.zeros((0,), a.dtype)
    return u, s, vh


def _cutoff(s, atol: float, rtol: float, dtype):
    """``max(atol, rtol * largest)`` per matrix, shaped ``(*, 1)``."""
    top = reduce_dims(_MAX, s, (s.ndim - 1,), True)
    cut = binary(_MUL, top, np.dtype(dtype).type(rtol))
    return binary(_MAXIMUM, cut, np.dtype(dtype).type(atol))


def _inverted(s, cut):
    """``1 / s`` where ``s > cut``, else 0."""
    keep = binary(_GT, s, cut, np.bool_)
    one = layout.full(tuple(s.shape), 1.0, s.dtype)
    inverse = binary(_DIV, one, where(keep, s, one))
    return where(keep, inverse, layout.zeros(tuple(s.shape), s.dtype)), keep


def linalg_pinv(a, atol: float, rtol, hermitian: bool):
    m, n = tuple(a.shape)[-2:]
    if not a.size:
        return layout.zeros(_batch_shape(a) + (n, m), a.dtype)
    if rtol is None:
        rtol = float(np.finfo(a.dtype).eps) * max(m, n) if atol <= 0 else 0.0
    u, s, vh = linalg_svd(a, False, True)
    inv, _ = _inverted(s, _cutoff(s, atol, rtol, a.dtype))
    k = tuple(s.shape)[-1]
    scaled = binary(_MUL, _t(vh), layout.reshape_view(inv, tuple((inv.shape)[:-1]) + (1, k)))
    return _bmm(scaled, _t(u), matmul)


def _bmm(x, y, matmul):
    """``x @ y`` for arrays of one batch shape (folded to one batch dimension)."""
    shape = tuple((x.shape)[:-2])
    if not shape:
        return matmul(x, y)
    b = int(np.prod(shape, dtype=np.int64))
    out = matmul(layout.reshape_view(ascontiguous(x), (b,) + tuple((x.shape)[-2:])),
                 layout.reshape_view(ascontiguous(y), (b,) + tuple((y.shape)[-2:])))
    return layout.reshape_view(out, shape + tuple((out.shape)[-2:]))


def linalg_lstsq(a, b, rcond):
    m, n = tuple(a.shape)[-2:]
    k = tuple(b.shape)[-1]
    shape = _batch_shape(a)
    if rcond is None:
        rcond = float(np.finfo(a.dtype).eps) * max(m, n)
    none = layout.zeros((0,), a.dtype)
    if not a.size or not b.size:
        return layout.zeros(shape + (n, k), a.dtype), none, layout.zeros(shape, np.int64), none
    u, s, vh = linalg_svd(a, False, True)
    inv, keep = _inverted(s, _cutoff(s, 0.0, rcond, a.dtype))
    r = tuple(s.shape)[-1]
    ub = _bmm(_t(u), b, matmul)
    scaled = binary(_MUL, ub, layout.reshape_view(inv, tuple((inv.shape)[:-1]) + (r, 1)))
    x = _bmm(_t(vh), scaled, matmul)
    rank = sum_dims(cast(keep, np.int64), (keep.ndim - 1,), False)
    return x, none, rank, none
