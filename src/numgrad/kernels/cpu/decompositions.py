"""Linear algebra on the CPU (``K.linalg_*``): LAPACK through NumPy (``numpy.linalg``: as the
matrix products use NumPy's BLAS; Numba's own ``np.linalg`` needs SciPy, which numgrad does not
depend on), plus small ``njit`` kernels for what LAPACK's NumPy wrappers do not say: where an LU
factorisation meets its first zero pivot and where a Cholesky factorisation fails (PyTorch's
error messages name them).

Every function takes arrays of any batch shape (``(*, m, n)``) and returns new C-contiguous
arrays; the CUDA module (``kernels/cuda/decompositions.py``) has the same functions. A
factorisation that fails raises PyTorch's ``LinAlgError`` where ``check`` says so, else reports it
in ``info`` (int32, one per matrix), as ``torch.linalg.*_ex``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ... import _lowp
from ...ops.linalg_common import LinAlgError


# ------------------------------------------------------------------ the njit kernels
@njit(cache=True)
def _lu_info_k(a, info):
    """For each matrix of ``a`` (``(batch, n, n)``, a copy it may overwrite): LAPACK getrf's
    ``info``, the 1-based index of the first exactly zero pivot of an LU factorisation with
    partial pivoting (0 when there is none)."""
    batch, n, _ = a.shape
    for z in range(batch):
        info[z] = 0
        for k in range(n):
            p = k
            best = abs(a[z, k, k])
            for i in range(k + 1, n):
                v = abs(a[z, i, k])
                if v > best:
                    best = v
                    p = i
            if best == 0.0:
                if info[z] == 0:
                    info[z] = k + 1
                continue
            if p != k:
                for j in range(n):
                    t = a[z, k, j]
                    a[z, k, j] = a[z, p, j]
                    a[z, p, j] = t
            for i in range(k + 1, n):
                f = a[z, i, k] / a[z, k, k]
                for j in range(k + 1, n):
                    a[z, i, j] -= f * a[z, k, j]


@njit(cache=True)
def _cholesky_k(a, out, info):
    """The lower Cholesky factor of each matrix of ``a`` (``(batch, n, n)``, its lower triangle
    read) into ``out`` (zeros above the diagonal); ``info[z]`` is the order of the first leading
    minor that is not positive-definite (LAPACK potrf's), 0 when the factorisation succeeds."""
    batch, n, _ = a.shape
    for z in range(batch):
        info[z] = 0
        for j in range(n):
            s = a[z, j, j]
            for k in range(j):
                s -= out[z, j, k] * out[z, j, k]
            if not s > 0.0:  # (NaN fails too), as LAPACK's potf2: the failed pivot stored,
                info[z] = j + 1  # the columns from j on left as the input's lower triangle
                out[z, j, j] = s
                for i in range(j + 1, n):
                    for c in range(j, i + 1):
                        out[z, i, c] = a[z, i, c]
                for i in range(j):
                    out[z, i, j] = 0.0
                break
            d = np.sqrt(s)
            out[z, j, j] = d
            for i in range(j + 1, n):
                t = a[z, i, j]
                for k in range(j):
                    t -= out[z, i, k] * out[z, j, k]
                out[z, i, j] = t / d
            for i in range(j):
                out[z, i, j] = 0.0


# ------------------------------------------------------------------ helpers
def _batch(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous ``(batch, m, n)`` copy (the kernels overwrite it)."""
    return np.array(a.reshape((-1,) + a.shape[-2:]), order="C", copy=True)


def _fail(name: str, a: np.ndarray, z: int, message: str):
    prefix = f"(Batch element {z}): " if a.ndim > 2 else ""
    raise LinAlgError(f"{name}: {prefix}{message}")


def _lu_info(a: np.ndarray) -> np.ndarray:
    """getrf's ``info`` of each matrix of ``a``, int32 of the batch shape."""
    info = np.zeros(int(np.prod(a.shape[:-2], dtype=np.int64)), np.int32)
    if a.size:
        _lu_info_k(_batch(a).astype(np.float64), info)
    return info.reshape(a.shape[:-2])


def _nan_matrices(a: np.ndarray) -> np.ndarray:
    """Which matrices of ``a`` hold a NaN (flat over the batch)."""
    return np.isnan(a.reshape((-1,) + a.shape[-2:])).any(axis=(1, 2))


def _nan_spread(out: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``out`` (matrices, one per matrix of ``a``) NaN wherever its matrix of ``a`` holds a NaN:
    an LU factorisation spreads it over everything it computes (LAPACK's, which PyTorch runs;
    NumPy's ``gesv`` leaves some entries alone)."""
    if a.dtype.kind == "f":
        bad = _nan_matrices(a)
        if bad.any():
            out = np.array(out, copy=True)
            out.reshape((-1,) + out.shape[-2:])[bad] = np.nan
    return out


def _refuse_nan(a: np.ndarray, name: str, message: str) -> None:
    """PyTorch's error for a matrix holding a NaN, which its LAPACK driver refuses."""
    if a.dtype.kind == "f":
        bad = _nan_matrices(a)
        if bad.any():
            _fail(name, a, int(np.flatnonzero(bad)[0]), message)


_SVD_NAN = "The algorithm failed to converge because the input matrix contained non-finite values."


def _svd(a: np.ndarray, full_matrices: bool, compute_uv: bool):
    """NumPy's SVD, with PyTorch's error for NaN and its results for infinities (NaN singular
    values, flipped identities as vectors)."""
    _refuse_nan(a, "linalg.svd", _SVD_NAN)
    try:
        return np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    except np.linalg.LinAlgError:
        m, n = a.shape[-2:]
        k = min(m, n)
        s = np.full(a.shape[:-2] + (k,), np.nan, _real(a.dtype))
        if not compute_uv:
            return s
        u = np.zeros(a.shape[:-2] + (m, m if full_matrices else k), a.dtype)
        vh = np.zeros(a.shape[:-2] + (n if full_matrices else k, n), a.dtype)
        u[...] = np.eye(m, u.shape[-1], dtype=a.dtype)[::-1]
        vh[...] = np.eye(vh.shape[-2], n, dtype=a.dtype)[:, ::-1]
        return u, s, vh


def _c(x) -> np.ndarray:
    """``x`` as a C-contiguous array (0-d kept 0-d, which ``np.ascontiguousarray`` is not)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


# ------------------------------------------------------------------ determinants
def linalg_det(a: np.ndarray) -> np.ndarray:
    """The determinant of each square matrix of ``a``."""
    if not a.size:
        return np.ones(a.shape[:-2], a.dtype)
    return _c(np.asarray(np.linalg.det(a), a.dtype))


def _real(dtype) -> np.dtype:
    """The real dtype of a complex ``dtype`` (of its parts), a real one as it is."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64) if dtype.kind == "c" \
        else dtype


def _mh(a: np.ndarray) -> np.ndarray:
    """The conjugate transpose of each matrix of ``a`` (the transpose of a real one)."""
    t = np.swapaxes(a, -1, -2)
    return np.conj(t) if a.dtype.kind == "c" else t


def linalg_slogdet(a: np.ndarray) -> tuple:
    """(sign, log|det|) of each square matrix of ``a`` (sign 0 and -inf for a singular one; of
    a complex matrix the sign is the determinant's phase, a complex number, and log|det| real)."""
    if not a.size:
        return np.ones(a.shape[:-2], a.dtype), np.zeros(a.shape[:-2], _real(a.dtype))
    sign, logabs = np.linalg.slogdet(a)
    sign = np.where(np.isnan(logabs), 0, sign)  # (PyTorch's sign of a NaN pivot: 0)
    return _c(np.asarray(sign, a.dtype)), _c(np.asarray(logabs, _real(a.dtype)))


def linalg_det_backward(a: np.ndarray, det: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """The gradient of det at each square matrix of ``a`` (``det`` its determinants, ``grad``
    theirs) in a plain backward: ``grad det A^-T`` by a solve, and at a matrix whose determinant
    is exactly 0 (no solve) its cofactors through the SVD, as a recorded backward takes them
    (ops/linalg_determinants.py) and as PyTorch does where its solve of the singular LU gives NaN."""
    n = a.shape[-1]
    if n == 1:  # (the derivative of a 1 x 1 determinant is 1, whatever the entry: ``grad``,
        # in new memory, as every result of a kernel)
        return np.array(np.broadcast_to(np.asarray(grad, a.dtype)[..., None, None], a.shape))
    mats = a.reshape((-1, n, n))
    d, g = det.reshape(-1), np.broadcast_to(grad, det.shape).reshape(-1)
    out = np.zeros(mats.shape, a.dtype)
    eye = np.eye(n, dtype=a.dtype)
    for z in range(mats.shape[0]):
        with np.errstate(all="ignore"):
            if d[z] == 0:
                out[z] = g[z] * _cofactors(mats[z])
                continue
            try:  # (a NaN determinant too: the solve spreads it)
                out[z] = _nan_spread(np.linalg.solve(mats[z].T, eye * (g[z] * d[z])), mats[z])
            except np.linalg.LinAlgError:
                out[z] = np.nan
    return out.reshape(a.shape)


def _cofactors(m: np.ndarray) -> np.ndarray:
    """The cofactor matrix of one square ``m``, the gradient of its determinant, through its
    SVD ``U S Vh``: ``det(U) det(Vh) conj(U) diag(prod of the other singular values)
    conj(Vh)`` (the transpose of ``adj(m) = det(m) m^-1``; the conjugates are a complex
    matrix's), defined (and continuous) at singular matrices too."""
    u, s, vh = np.linalg.svd(m)
    others = np.array([np.prod(np.delete(s, i)) for i in range(s.size)], m.dtype)
    return (np.linalg.det(u) * np.linalg.det(vh)) * ((np.conj(u) * others) @ np.conj(vh))


# ------------------------------------------------------------------ inverse and solve
def linalg_inv(a: np.ndarray, check: bool) -> tuple:
    """(the inverse of each square matrix of ``a``, getrf's info); a singular matrix raises
    PyTorch's error with ``check``, else its inverse is left as LAPACK leaves it (here NaN)."""
    batch = a.shape[:-2]
    if not a.size:
        return np.empty(a.shape, a.dtype), np.zeros(batch, np.int32)
    try:
        return _c(_nan_spread(np.linalg.inv(a), a)), np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        pass
    info = _lu_info(a)
    flat = info.reshape(-1)
    if not flat.any():  # (LAPACK's blocked pivoting met a zero our plain one did not)
        flat[:] = a.shape[-1]
    if check:
        z = int(np.flatnonzero(flat)[0])
        _fail("linalg.inv", a, z, f"The diagonal element {flat[z]} is zero, the inversion could "
              "not be completed because the input matrix is singular.")
    out = np.full((flat.size,) + a.shape[-2:], np.nan, a.dtype)
    mats = a.reshape((-1,) + a.shape[-2:])
    for z in np.flatnonzero(flat == 0):
        out[z] = np.linalg.inv(mats[z])
    return out.reshape(a.shape), info


def linalg_solve(a: np.ndarray, b: np.ndarray, left: bool, check: bool) -> tuple:
    """(``X`` with ``a @ X = b``, or with ``left`` False ``X @ a = b``, info) for ``a``
    ``(*, n, n)`` and ``b`` ``(*, n, k)`` (``(*, k, n)``) of the same batch shape."""
    if not left:  # (X a = b: a^T X^T = b^T)
        x, info = linalg_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), True, check)
        return _c(np.swapaxes(x, -1, -2)), info
    batch = a.shape[:-2]
    if not a.size or not b.size:
        return np.zeros(b.shape, a.dtype), np.zeros(batch, np.int32)
    try:
        return _c(_nan_spread(np.linalg.solve(a, b), a)), np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        pass
    info = _lu_info(a)
    flat = info.reshape(-1)
    if not flat.any():
        flat[:] = a.shape[-1]
    if check:
        z = int(np.flatnonzero(flat)[0])
        _fail("torch.linalg.solve", a, z,
              "The solver failed because the input matrix is singular.")
    out = np.full((flat.size,) + b.shape[-2:], np.nan, a.dtype)
    mats, rhs = a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:])
    for z in np.flatnonzero(flat == 0):
        out[z] = np.linalg.solve(mats[z], rhs[z])
    return out.reshape(b.shape), info


# ------------------------------------------------------------------ Cholesky
def linalg_cholesky(a: np.ndarray, upper: bool, check: bool, name: str) -> tuple:
    """(the Cholesky factor of each matrix of ``a``, potrf's info): lower, from ``a``'s lower
    triangle, or with ``upper`` the upper factor from its upper triangle (the conjugate
    transpose of the lower factor of ``a``'s transpose)."""
    batch = a.shape[:-2]
    if upper:
        a = np.swapaxes(a, -1, -2)
    info = np.zeros(batch, np.int32)
    if not a.size:
        return np.zeros(a.shape, a.dtype), info
    try:
        out = np.linalg.cholesky(a)
        if a.dtype.kind == "f" and np.isnan(np.diagonal(out, 0, -2, -1)).any():
            raise np.linalg.LinAlgError  # (a NaN pivot: LAPACK's potrf fails there)
    except np.linalg.LinAlgError:
        mats = _batch(a)
        out = np.zeros_like(mats)
        flat = info.reshape(-1)
        _cholesky_k(mats, out, flat)
        if check and flat.any():
            z = int(np.flatnonzero(flat)[0])
            _fail(name, a, z, "The factorization could not be completed because the input is not "
                  f"positive-definite (the leading minor of order {flat[z]} is not "
                  "positive-definite).")
        out = out.reshape(a.shape)
    return _c(np.swapaxes(out, -1, -2) if upper else out), info


# ------------------------------------------------------------------ decompositions
def linalg_eigh(a: np.ndarray, upper: bool, compute_v: bool) -> tuple:
    """(eigenvalues ascending, eigenvectors as columns, or an empty array without
    ``compute_v``) of each symmetric matrix of ``a``, read from its lower (``upper``: upper)
    triangle."""
    uplo = "U" if upper else "L"
    real = _real(a.dtype)  # (a Hermitian matrix's eigenvalues are real)
    if not a.size:
        return (np.zeros(a.shape[:-1], real),
                np.zeros(a.shape if compute_v else (0,), a.dtype))
    _refuse_nan(a, "linalg.eigh", "The algorithm failed to converge because the input matrix is "
                "ill-conditioned or has too many repeated eigenvalues (error code: "
                f"{a.shape[-1] - 1 if compute_v else 1}).")
    try:
        if not compute_v:
            return _c(np.linalg.eigvalsh(a, UPLO=uplo).astype(real)), np.zeros((0,), a.dtype)
        w, v = np.linalg.eigh(a, UPLO=uplo)
    except np.linalg.LinAlgError:  # (infinities: LAPACK's NaN eigenvalues, identity vectors)
        w = np.full(a.shape[:-1], np.nan, real)
        v = np.zeros(a.shape, a.dtype)
        v[...] = np.eye(a.shape[-1], dtype=a.dtype)
        return w, (v if compute_v else np.zeros((0,), a.dtype))
    return _c(w.astype(real)), _c(v.astype(a.dtype))


def linalg_svd(a: np.ndarray, full_matrices: bool, compute_uv: bool) -> tuple:
    """(U, S, Vh) of each matrix of ``a`` (``(*, m, n)``): U ``(*, m, m or k)``, S ``(*, k)``
    descending (real, of a complex matrix too), Vh ``(*, k or n, n)``; without ``compute_uv``,
    U and Vh are empty."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    real = _real(a.dtype)
    if not compute_uv:
        if not a.size:
            return np.zeros((0,), a.dtype), np.zeros(batch + (k,), real), np.zeros((0,), a.dtype)
        s = _svd(a, False, False)
        return np.zeros((0,), a.dtype), _c(s.astype(real)), np.zeros((0,), a.dtype)
    if not a.size:
        u = np.zeros(batch + (m, m if full_matrices else k), a.dtype)
        vh = np.zeros(batch + (n if full_matrices else k, n), a.dtype)
        if full_matrices:  # (LAPACK's: identities; of bfloat16, NumPy's "V2", its bits)
            u[...] = _identity(m, a.dtype)
            vh[...] = _identity(n, a.dtype)
        return u, np.zeros(batch + (k,), real), vh
    u, s, vh = _svd(a, full_matrices, True)
    return _c(u.astype(a.dtype)), _c(s.astype(real)), _c(vh.astype(a.dtype))


def _identity(n: int, dtype) -> np.ndarray:
    return _lowp.f32_to_bf16(np.eye(n, dtype=np.float32)) if dtype.kind == "V" else \
        np.eye(n, dtype=dtype)


def linalg_qr(a: np.ndarray, mode: str) -> tuple:
    """(Q, R) of each matrix of ``a`` (Householder, LAPACK's signs); ``mode`` 'reduced',
    'complete' or 'r' (Q empty)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if not a.size:
        qcols = m if mode == "complete" else k
        rrows = m if mode == "complete" else k
        q = np.zeros(batch + (m, qcols) if mode != "r" else (0,), a.dtype)
        if mode == "complete" and m:
            q[...] = np.eye(m, dtype=a.dtype)
        return q, np.zeros(batch + (rrows, n), a.dtype)
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return np.zeros((0,), a.dtype), _c(np.triu(r).astype(a.dtype))
    q, r = np.linalg.qr(a, mode=mode)
    return _c(q.astype(a.dtype)), _c(r.astype(a.dtype))


def linalg_pinv(a: np.ndarray, atol: float, rtol, hermitian: bool) -> np.ndarray:
    """The pseudo-inverse of each matrix of ``a``: singular values at most ``max(atol, rtol *
    largest)`` are taken as zero (``rtol`` None: ``eps * max(m, n)`` where ``atol`` is 0)."""
    m, n = a.shape[-2:]
    if not a.size:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if rtol is None:
        rtol = np.finfo(a.dtype).eps * max(m, n) if atol <= 0 else 0.0
    if hermitian:
        _refuse_nan(a, "linalg.eigh", "The algorithm failed to converge because the input matrix "
                    "is ill-conditioned or has too many repeated eigenvalues (error code: "
                    f"{a.shape[-1] - 1}).")
        w, v = np.linalg.eigh(a)
        s = np.abs(w)
        cut = np.maximum(atol, rtol * s.max(axis=-1, keepdims=True))
        inv = np.where(s > cut, 1 / np.where(s > cut, w, 1), 0).astype(a.dtype)
        return _c((v * inv[..., None, :]) @ _mh(v))
    u, s, vh = _svd(a, False, True)
    cut = np.maximum(atol, rtol * (s[..., :1] if s.shape[-1] else s))
    inv = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0).astype(a.dtype)
    return _c(_mh(vh) @ (inv[..., :, None] * _mh(u)))


def linalg_lstsq(a: np.ndarray, b: np.ndarray, rcond) -> tuple:
    """(solution, residuals, rank, singular values) of ``min |a X - b|`` for each matrix pair
    (``a`` ``(*, m, n)``, ``b`` ``(*, m, k)``, one batch shape), as PyTorch's CPU default driver
    'gelsy' returns them: the minimum-norm solution, the rank (int64, by ``rcond``: by default
    ``eps * max(m, n)``), and residuals and singular values empty."""
    m, n = a.shape[-2:]
    k = b.shape[-1]
    batch = a.shape[:-2]
    if rcond is None:
        rcond = np.finfo(a.dtype).eps * max(m, n)
    empty = np.zeros((0,), _real(a.dtype))  # (residuals and singular values: real)
    if not a.size or not b.size:
        return np.zeros(batch + (n, k), a.dtype), empty, np.zeros(batch, np.int64), empty
    if not (np.isfinite(a).all() and np.isfinite(b).all()):  # (PyTorch's gelsy call refuses them)
        raise RuntimeError("torch.linalg.lstsq: Argument 4 has illegal value. Most certainly there "
                           "is a bug in the implementation calling the backend library.")
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    cut = rcond * s[..., :1]
    keep = s > cut
    inv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    x = _mh(vh) @ (inv[..., :, None] * (_mh(u) @ b))
    rank = keep.sum(axis=-1).astype(np.int64)
    return _c(x.astype(a.dtype)), empty, _c(rank), empty
