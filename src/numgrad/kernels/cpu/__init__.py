"""CPU kernels (``numba.njit``, cached) and their array-level entry points."""
import os

import numba

# Large kernels run with parallel=True. Numba's default layer (workqueue) aborts the process when
# two Python threads enter parallel code at once; unless the user chose a layer, take a thread-safe
# one (TBB if installed, else OpenMP).
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "threadsafe"



def _defer_scipy_linalg() -> None:
    """Keeps Numba from importing scipy.linalg (~0.3 s) when it loads its CPU target.

    On the first kernel load Numba imports ``numba.np.arraymath``, which calls ``ensure_blas()``
    only to set a flag, ``_HAVE_BLAS`` (whether np.correlate/np.convolve may call np.dot), and
    ``ensure_blas`` imports ``scipy.linalg.cython_blas`` and with it all of scipy.linalg. numgrad's
    kernels use no BLAS, so during that one import the flag is computed from whether SciPy is
    installed, without importing it; ``ensure_blas`` is the real one again right after, and
    every Numba function that does use BLAS (np.dot in the user's own kernels) calls it, and
    imports scipy.linalg, at its own compilation, as before. Skipped where arraymath is already
    imported or Numba's internals differ."""
    import importlib.util
    import sys

    if "numba.np.arraymath" in sys.modules:
        return
    try:
        from numba.np import linalg
        real = linalg.ensure_blas
    except (ImportError, AttributeError):
        return

    def scipy_installed():
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = scipy_installed
    try:
        from numba.np import arraymath
    finally:
        linalg.ensure_blas = real
    if getattr(arraymath, "ensure_blas", None) is scipy_installed:
        arraymath.ensure_blas = real


_defer_scipy_linalg()

from .elementwise import *  # noqa: F401,F403,E402  (op codes and entry points)
from .reduction import (  # noqa: F401,E402
    ARGMAX, ARGMIN, MAX, MIN, PROD, any_equal, arg_reduce_dims, extreme_share, finite_or_zero,
    inf_where_zero, one_hot_dim, product_of_others, reduce_dims, sum_dims,
)
from .linalg import dot, matmul  # noqa: F401,E402
from .softmax import log_softmax_backward_last, log_softmax_last  # noqa: F401,E402
from . import loss  # noqa: F401,E402  (``K.loss``: nll_loss's kernels)
from .indexing import index, index_add_flat, index_put  # noqa: F401,E402
from .layout import *  # noqa: F401,F403,E402

DEVICE = "cpu"  # the device type whose kernels these are
