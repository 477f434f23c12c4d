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
