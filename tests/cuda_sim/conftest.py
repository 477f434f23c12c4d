"""Records every kernel launch of the simulator run: with ``NUMGRAD_RECORD_LAUNCHES`` set to a
file, each launched kernel's name and argument types are written there when the run ends, and
tests/test_cuda.py checks that each is in the signature catalogue that the compile check compiles
(``numgrad.kernels.cuda.signatures``), so that no launched kernel escapes that check."""
import collections
import json
import os

import pytest

_LAUNCHES: dict = collections.defaultdict(set)


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
        return real_call(self, *args)

    simulated.FakeCUDAKernel.__call__ = call
    try:
        yield
    finally:
        simulated.FakeCUDAKernel.__call__ = real_call
        with open(path, "w") as f:
            json.dump({k: sorted(v) for k, v in _LAUNCHES.items()}, f, indent=1)
