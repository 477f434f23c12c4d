"""The CPU kernels of one binary formula ``f(a, b)``: over two contiguous arrays of one shape
(``zip_1d``), an array and one number (``zip_1d_scalar``, or ``zip_1d_scalar_first`` with the
number first), a row against each row of a matrix (``zip_rows``, a bias), the general broadcast
or strided case (``zip_strided``, whose rows take the contiguous loops where they can), and the
first two and the rows without the GIL for the parts of large arrays, which threads share."""
import numpy as np
from numba import njit

from numgrad.kernels.scalar import add as f  # the formula (codegen.py replaces this line)


@njit(inline="always")
def _loop(a, b, out):
    for i in range(out.size):
        out[i] = f(a[i], b[i])


@njit(inline="always")
def _loop_scalar(a, b, out):
    for i in range(out.size):
        out[i] = f(a[i], b)


@njit(inline="always")
def _loop_scalar_first(a, b, out):
    for i in range(out.size):
        out[i] = f(a, b[i])


@njit(cache=True, error_model="numpy")
def zip_1d(a, b, out):
    _loop(a, b, out)


@njit(cache=True, error_model="numpy")
def zip_1d_scalar(a, b, out):
    _loop_scalar(a, b, out)


@njit(cache=True, error_model="numpy")
def zip_1d_scalar_first(a, b, out):
    _loop_scalar_first(a, b, out)


@njit(cache=True, error_model="numpy")
def zip_rows(a, b, out):
    """The row ``b`` against each row of the 2-D ``a`` (a bias added to each row), into the
    2-D ``out``: ``zip_strided``'s loop on each row, in a kernel a fifth of its size (its
    first compilation 0.3 s against ``zip_strided``'s 1.5: a first program's bias)."""
    for r in range(a.shape[0]):
        _loop(a[r], b, out[r])


@njit(cache=True, error_model="numpy")
def zip_strided(a, a_strides, b, b_strides, shape, out):
    """``a`` and ``b`` are 1-D views of their buffers, addressed through element strides (0 along
    broadcast dimensions); ``out`` is contiguous. Iterates the last dimension in the inner loop
    and advances an odometer over the others."""
    nd = shape.size
    inner = shape[nd - 1]
    sa = a_strides[nd - 1]
    sb = b_strides[nd - 1]
    index = np.zeros(nd, np.int64)
    pa = 0
    pb = 0
    for start in range(0, out.size, inner):
        # Rows contiguous in both operands (a bias added to each row), or contiguous in ``a``
        # against one value of ``b`` (a per-row max subtracted), take the vectorised loops.
        if sa == 1 and sb == 1:
            _loop(a[pa:pa + inner], b[pb:pb + inner], out[start:start + inner])
        elif sa == 1 and sb == 0:
            _loop_scalar(a[pa:pa + inner], b[pb], out[start:start + inner])
        elif sa == 0 and sb == 1:  # (one value against rows: a broadcast gradient's backward)
            _loop_scalar_first(a[pa], b[pb:pb + inner], out[start:start + inner])
        else:
            for j in range(inner):
                out[start + j] = f(a[pa + j * sa], b[pb + j * sb])
        d = nd - 2
        while d >= 0:
            index[d] += 1
            pa += a_strides[d]
            pb += b_strides[d]
            if index[d] < shape[d]:
                break
            pa -= a_strides[d] * shape[d]
            pb -= b_strides[d] * shape[d]
            index[d] = 0
            d -= 1


# The parts of large arrays, without the GIL: numgrad's worker threads (``_workers``) call these
# on one contiguous slice each (sliced so that the loops run from 0; see unary.py).
@njit(cache=True, error_model="numpy", nogil=True)
def zip_1d_nogil(a, b, out):
    _loop(a, b, out)


@njit(cache=True, error_model="numpy", nogil=True)
def zip_1d_scalar_nogil(a, b, out):
    _loop_scalar(a, b, out)


@njit(cache=True, error_model="numpy", nogil=True)
def zip_rows_nogil(a, b, out):
    """The row ``b`` against each row of the 2-D ``a`` (a bias added to each row), into the
    2-D ``out``: one thread's rows, each by ``zip_strided``'s loop."""
    for r in range(a.shape[0]):
        _loop(a[r], b, out[r])
