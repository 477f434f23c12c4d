"""On a busy machine (a load of 1.5 times the cores, ``kernels/cpu/_workers.busy``) the kernels
whose values do not depend on the number of threads run on one, and BLAS and Numba's parallel
kernels too; the values are those of the threaded run, and the threads come back when the load
falls."""
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
    value[0] = 0.0
    _workers.busy()  # (BLAS's threads back)


def test_a_busy_machine_runs_on_one_thread_with_the_same_values(load):
    if _threads._blas_set_num_threads() is None or not _threads._blas_getter:
        pytest.skip("NumPy's BLAS has no set_num_threads")
    before = numgrad.get_num_threads()
    numgrad.set_num_threads(2)
    try:
        x = numgrad.tensor(np.random.default_rng(0).standard_normal(E.PARALLEL_THRESHOLD),
                           dtype=numgrad.float32)
        quiet = numgrad.nn.functional.gelu(x).numpy()
        assert _workers.threads_for(4, True) == 2 and E._threaded(x._data.dtype, x._data.dtype)
        load[0] = 3.0
        assert _workers.threads_for(4, True) == 1 and not E._threaded(x._data.dtype,
                                                                      x._data.dtype)
        assert _threads._blas_getter() == 1 and numba.get_num_threads() == 1
        assert numgrad.nn.functional.gelu(x).numpy().tobytes() == quiet.tobytes()
        load[0] = 2.9
        assert _workers.threads_for(4, True) == 2 and _threads._blas_getter() == 2
        assert numba.get_num_threads() == 2
    finally:
        numgrad.set_num_threads(before)
