"""numgrad's kernels load from Numba's cache without initialising Numba's whole CPU target."""
from __future__ import annotations

import os
import sys

from numba.core import caching
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys


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
            say_compiling()
        return cres


_said: list = []


def say_compiling() -> None:
    """The first time this process compiles a kernel: one line on stderr saying so (a new user's
    first run would otherwise sit silent for seconds). Never on a warm cache; ``NUMGRAD_QUIET=1``
    silences it."""
    if _said or os.environ.get("NUMGRAD_QUIET", "") not in ("", "0"):
        return
    _said.append(True)
    print("numgrad: compiling kernels for their first use; they are cached on disk, so this "
          "happens once (`python -m numgrad warmup` compiles them all ahead of time; "
          "NUMGRAD_QUIET=1 hides this line)", file=sys.stderr, flush=True)


_SUPPORTED = all(hasattr(caching.FunctionCache, name)
                 for name in ("_load_overload", "_guard_against_spurious_io_errors"))


def light_cache(module) -> None:
    """Gives every cached dispatcher of ``module`` a ``_KernelCache`` (where Numba's internals
    are the ones it was written for; else Numba's own loading, unchanged)."""
    if not _SUPPORTED:
        return
    for value in vars(module).values():
        if isinstance(value, CPUDispatcher) and type(value._cache) is caching.FunctionCache:
            value._cache.__class__ = _KernelCache
