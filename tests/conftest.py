import os

import numpy as np
import pytest

# Tests must see every failure, so no warnings are silenced here; hypothesis profiles live here.
try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=200, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover
    pass


# The machine's load picks no kernel path here (kernels/cpu/_workers.busy): the threaded kernels
# run where the sizes say, in this process and the ones it starts.
os.environ["NUMGRAD_BUSY_LOAD"] = "inf"


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# tests/cuda_sim needs Numba's CUDA simulator, chosen before numba-cuda is imported: it runs in a
# subprocess started by tests/test_cuda.py (or by hand, with NUMBA_ENABLE_CUDASIM=1), never here.
collect_ignore = [] if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["cuda_sim"]


def pytest_collection_finish(session):
    """Starts the background run of each selected test module that has one (the CUDA simulator
    suite, the CUDA compile check: tests/_background.py) as soon as collection has picked any of
    its tests, so that it overlaps with the rest of the suite."""
    started = set()
    for item in session.items:
        start = getattr(item.module, "start_background_run", None)
        if start is None or item.module in started:
            continue
        started.add(item.module)
        if not any(m.name == "skipif" and m.args and m.args[0] for m in item.iter_markers()):
            start()


def pytest_sessionfinish(session):
    import _background

    _background.stop_all()
