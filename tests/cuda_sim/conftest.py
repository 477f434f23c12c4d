"""Records every kernel launch of the simulator run: with ``NUMGRAD_RECORD_LAUNCHES`` set to a
file, each launched kernel's name and argument types are written there when the run ends, and
tests/test_cuda.py checks that each is in the signature catalogue that the compile check compiles
(``numgrad.kernels.cuda.signatures``), so that no launched kernel escapes that check. The kernels
numgrad.compile generates for a traced step (``numgrad.kernels.generated.program_*``) are not in
the catalogue: their modules' texts go to ``<file>.programs.json``, and tests/test_cuda.py compiles
each launched one for real GPUs."""
import collections
import json
import os
import sys
import threading
import traceback

import pytest


def _lock_shared_array_allocation():
    """numba-cuda 0.30.4's simulator creates a block's ``cuda.shared.array`` the first time one of
    its threads (each a Python thread) reaches the line: ``get`` from a dict, ``np.empty``, store.
    A thread preempted between the two (GIL switch) and the threads that ran meanwhile each make
    an array of their own, so their writes to "shared" memory are lost to the others: a tiled
    GEMM then reads uninitialised tile entries (seen once in CI as a wrong SVD gradient). This is
    the same method with the look-up and the store under one lock; the caller is still the frame
    that called ``cuda.shared.array``, and ``np`` is still the simulator module's, so
    test_simulator_shared.py can force the preemption."""
    from numba.cuda.simulator import kernelapi

    original = kernelapi.FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # (dynamic shared memory, errors: unchanged)
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, kernelapi.types.Type):
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = kernelapi.np.empty(shape, dtype)
        return res

    array.numgrad_locked = True
    kernelapi.FakeCUDAShared.array = array


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    _lock_shared_array_allocation()

# (the launch recorder below is instrumentation: numgrad.compile's audit of the code a traced
# step runs leaves this module's frames out)
__numgrad_audit__ = False

_LAUNCHES: dict = collections.defaultdict(set)
_PROGRAMS: dict = {}  # generated program module -> its text
PROGRAM_PREFIX = "numgrad.kernels.generated.program_"


def _argument_type(value) -> str:
    import numba
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    if isinstance(value, FakeCUDAArray):
        value = value._ary
    # A device array is never read-only; a simulator one can wrap a read-only NumPy view.
    return str(numba.typeof(value)).removeprefix("readonly ")


@pytest.fixture(scope="session", autouse=True)
def _record_launches():
    path = os.environ.get("NUMGRAD_RECORD_LAUNCHES")
    if not path:
        yield
        return
    from numba.cuda.simulator import kernel as simulated

    real_call = simulated.FakeCUDAKernel.__call__

    def call(self, *args):
        if not (self._device or simulated._kernel_context):  # a launch, not a device call
            name = f"{self.fn.__module__}.{self.fn.__qualname__}"
            _LAUNCHES[name].add(tuple(_argument_type(a) for a in args))
            if name.startswith(PROGRAM_PREFIX) and self.fn.__module__ not in _PROGRAMS:
                with open(sys.modules[self.fn.__module__].__file__) as f:
                    _PROGRAMS[self.fn.__module__] = f.read()
        return real_call(self, *args)

    simulated.FakeCUDAKernel.__call__ = call
    try:
        yield
    finally:
        simulated.FakeCUDAKernel.__call__ = real_call
        with open(path, "w") as f:
            json.dump({k: sorted(v) for k, v in _LAUNCHES.items()}, f, indent=1)
        with open(path + ".programs.json", "w") as f:
            json.dump(_PROGRAMS, f, indent=1)
