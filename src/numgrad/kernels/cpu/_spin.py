"""The spin-wait of ``_workers``' threads, without the GIL: ``wait(flags, i, rounds)`` returns
when ``flags[i]`` is not 0, or after ``rounds`` rounds of the C library's ``sched_yield`` (~1 us
each here; the core goes to whatever else can run meanwhile). The call into ``sched_yield`` is
one LLVM cannot see into, so ``flags[i]`` is read anew at each round. ``wait`` is None where the
C library has no ``sched_yield``."""
import ctypes

import llvmlite.binding as llvm
from numba import njit, types


def _register() -> bool:
    try:
        address = ctypes.cast(ctypes.CDLL(None).sched_yield, ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):
        return False
    llvm.add_symbol("numgrad_sched_yield", address)
    return True


if _register():
    _sched_yield = types.ExternalFunction("numgrad_sched_yield", types.int32())

    @njit(cache=True, nogil=True)
    def wait(flags, index, rounds):
        """Until ``flags[index]`` is not 0, at most ``rounds`` rounds; whether it was set."""
        for _ in range(rounds):
            if flags[index] != 0:
                return True
            _sched_yield()
        return flags[index] != 0
else:  # pragma: no cover (every C library numgrad runs on has it)
    wait = None
