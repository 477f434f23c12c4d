"""CPU kernels (``numba.njit``, cached) and their array-level entry points."""
import os

import numba
from numba.core import caching
from numba.core.runtime import rtsys

# Large kernels run with parallel=True. Numba's default layer (workqueue) aborts the process when
# two Python threads enter parallel code at once; unless the user chose a layer, take a thread-safe
# one (TBB if installed, else OpenMP).
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "threadsafe"



def _defer_scipy_linalg() -> None:
    """Keeps Numba from importing scipy.linalg (~0.3 s) when it first compiles a kernel.

    Before compiling, Numba refreshes its CPU target and imports ``numba.np.arraymath``, which
    calls ``ensure_blas()`` only to set a flag, ``_HAVE_BLAS`` (whether np.correlate/np.convolve
    may call np.dot), and ``ensure_blas`` imports ``scipy.linalg.cython_blas`` and with it all of
    scipy.linalg. numgrad's kernels use no BLAS, so during that one import the flag is computed
    from whether SciPy is installed, without importing it; ``ensure_blas`` is the real one again
    right after, and every Numba function that does use BLAS (np.dot in the user's own kernels)
    calls it, and imports scipy.linalg, at its own compilation, as before. Skipped where
    arraymath is already imported or Numba's internals differ."""
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


class _KernelCache(caching.FunctionCache):
    """numgrad's kernels load from Numba's cache without initialising the whole CPU target.

    Before it loads a cached function, Numba refreshes its CPU target: it imports and installs
    every typing and lowering registry (arrays, linalg, typed containers, jitclass, random, ...).
    Compiling needs them; loading machine code does not. That refresh is most of the ~115 ms a
    fresh process spent on its first kernel call. Loading needs Numba's runtime (NRT), which the
    kernels link against, and each cached function's own ``reload_init`` hooks (the threading
    layer of the parallel kernels), which ``_load_overload`` runs. On a miss nothing is skipped:
    Numba's compiler refreshes the target itself before it compiles. Only numgrad's own
    dispatchers use this class; every other Numba function in the process loads as before."""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            cres = self._load_overload(sig, target_context)
        if cres is None:  # about to compile: the target refresh will import numba.np.arraymath
            _defer_scipy_linalg()
        return cres


def _load_kernels_lightly() -> None:
    """Gives every cached dispatcher of this package's modules (all imported above) a
    ``_KernelCache``."""
    import sys

    from numba.core.registry import CPUDispatcher

    modules = [m for name, m in list(sys.modules.items()) if name.startswith(__name__ + ".")]
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and type(value._cache) is caching.FunctionCache:
                value._cache.__class__ = _KernelCache


if all(hasattr(caching.FunctionCache, name)
       for name in ("_load_overload", "_guard_against_spurious_io_errors")):
    _load_kernels_lightly()  # else Numba's internals differ: its own loading, unchanged
