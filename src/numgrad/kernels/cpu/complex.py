"""Complex tensors' own array functions on the CPU (NumPy's), as kernels (``K.complex_real``
...), so that numgrad.compile records and replays them as it does the other kernels. The views
(the parts, ``view_as_real``, ``view_as_complex``) share their input's memory."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...ops.linalg_common import LinAlgError


def _complex_dtype(real_dtype) -> np.dtype:
    return np.dtype(np.complex64 if real_dtype == np.float32 else np.complex128)


def complex_real(a: np.ndarray) -> np.ndarray:
    """The real parts of complex ``a``, a view."""
    return a.real


def complex_imag(a: np.ndarray) -> np.ndarray:
    """The imaginary parts of complex ``a``, a view."""
    return a.imag


def complex_pairs(a: np.ndarray) -> np.ndarray:
    """Complex ``a`` seen as real pairs (a last dimension of 2), a view."""
    return as_strided(a.real, a.shape + (2,), a.strides + (a.itemsize // 2,))


def complex_from_pairs(a: np.ndarray) -> np.ndarray:
    """Real ``a`` whose last dimension (2, stride 1) holds pairs, seen as complex: a view (of an
    empty ``a``, a new empty array)."""
    cdt = _complex_dtype(a.dtype)
    return a.view(cdt)[..., 0] if a.size else np.empty(a.shape[:-1], cdt)


def complex_conj(a: np.ndarray) -> np.ndarray:
    return np.asarray(np.conjugate(a))  # (asarray: NumPy's ufuncs give a 0-d array a scalar)


def complex_abs(a: np.ndarray) -> np.ndarray:
    return np.asarray(np.abs(a))


def complex_angle(a: np.ndarray) -> np.ndarray:
    return np.asarray(np.angle(a))


def complex_from_parts(re: np.ndarray, im: np.ndarray, polar: bool) -> np.ndarray:
    """``re + i im`` (``polar``: ``re e^{i im}``), broadcast, complex of the parts' precision."""
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), _complex_dtype(re.dtype))
    if polar:
        out.real = re * np.cos(im)
        out.imag = re * np.sin(im)
    else:
        out.real = re
        out.imag = im
    return out


def linalg_eig(a: np.ndarray) -> tuple:
    """(eigenvalues, eigenvectors as columns) of each matrix of ``a`` (LAPACK's geev), complex;
    the error PyTorch's geev gives for non-finite values."""
    cdt = _complex_dtype(a.dtype) if a.dtype.kind == "f" else a.dtype
    if not a.size:
        return np.zeros(a.shape[:-1], cdt), np.zeros(a.shape, cdt)
    if not np.isfinite(a).all():
        raise LinAlgError("linalg.eig: The algorithm failed to converge because the input "
                          "matrix contained non-finite values.")
    w, v = np.linalg.eig(a)
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)
