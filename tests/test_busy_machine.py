"""On a busy machine (a load of 1.5 times the cores, ``kernels/cpu/_workers.busy``) the kernels
whose values do not depend on the number of threads run on one; the values are those of the
threaded run, BLAS's and Numba's thread counts (the process's settings) are left alone, and the
threads come back when the load falls."""
import numba
import numpy as np
import pytest

import numgrad
from numgrad import _threads
from numgrad.kernels.cpu import _workers
from numgrad.kernels.cpu import elementwise as E


@pytest.fixture
def load(monkeypatch):
    """Sets the load the kernels read (``load[0]``), re-read at each call."""
    value = [0.0]
    monkeypatch.setattr(_workers, "BUSY_LOAD", 1.5)
    monkeypatch.setattr(_workers, "BUSY_RECHECK", 0.0)
    monkeypatch.setattr(_workers.os, "getloadavg", lambda: (value[0], 0.0, 0.0))
    monkeypatch.setattr(_workers.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(_workers, "_busy", [-1.0, False])
    yield value


def test_a_busy_machine_runs_on_one_thread_with_the_same_values(load):
    before = numgrad.get_num_threads()
    numgrad.set_num_threads(2)
    try:
        x = numgrad.tensor(np.random.default_rng(0).standard_normal(E.PARALLEL_THRESHOLD),
                           dtype=numgrad.float32)
        quiet = numgrad.nn.functional.gelu(x).numpy()
        assert _workers.threads_for(4, True) == 2 and E._threaded(x._data.dtype, x._data.dtype)
        blas = _threads._blas_getter() if _threads._blas_getter else None
        numba_threads = numba.get_num_threads()
        load[0] = 3.0
        assert _workers.threads_for(4, True) == 1 and not E._threaded(x._data.dtype,
                                                                      x._data.dtype)
        assert numgrad.nn.functional.gelu(x).numpy().tobytes() == quiet.tobytes()
        assert numba.get_num_threads() == numba_threads  # (the process's settings: untouched)
        assert (_threads._blas_getter() if _threads._blas_getter else None) == blas
        load[0] = 2.9
        assert _workers.threads_for(4, True) == 2 and E._threaded(x._data.dtype, x._data.dtype)
    finally:
        numgrad.set_num_threads(before)


def test_a_compiled_program_of_split_loops_runs_on_one_thread_when_busy(monkeypatch):
    # A fused program splits its large loops over Numba's threads (prange); OpenMP's threads
    # each own a chunk, and on a busy machine a region waits for a thread without a core. Its
    # twin without parallel=True (the same chunks, one thread) runs then: the same bits. (The
    # answer is set where busy() keeps it: a load read through a function of this test's would
    # be user code the trace depends on, and guarded.)
    monkeypatch.setattr(_workers, "BUSY_RECHECK", float("inf"))
    monkeypatch.setattr(_workers, "_busy", [0.0, False])
    x = numgrad.tensor(np.linspace(-3, 3, E.PARALLEL_THRESHOLD, dtype=np.float32))

    def f(x):
        return numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)

    compiled = numgrad.compile(f)
    quiet = [compiled(x).numpy().tobytes() for _ in range(3)]
    (_, replay), = compiled._entries
    twins = [v for k, v in replay.__globals__.items()
             if k.startswith("SEG") and v.py_func.__name__.endswith("_serial")]
    assert len(twins) == 1 and not twins[0].signatures  # (compiled only once it is needed)
    _workers._busy[1] = True
    busy = compiled(x).numpy().tobytes()
    assert len(compiled._entries) == 1 and compiled.traces == 1
    assert twins[0].signatures and busy == quiet[-1] == f(x).numpy().tobytes()
    _workers._busy[1] = False
    assert compiled(x).numpy().tobytes() == quiet[-1]
