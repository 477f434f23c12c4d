"""The simulator's shared arrays stay shared when a thread is preempted while the block's array
is created (conftest.py locks the creation): with a GIL switch forced inside that window, the
tiled GEMM and a block reduction still match NumPy. Without the lock both come out wrong (the
threads that allocated their own tile write where no other thread reads)."""
import time

import numpy as np

import numgrad


class _SlowEmpty:
    """The simulator module's ``np`` with an ``empty`` that yields the GIL first."""

    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def empty(self, *args, **kwargs):
        self.calls += 1
        time.sleep(0.001)
        return np.empty(*args, **kwargs)


def test_shared_arrays_survive_a_preempted_allocation(monkeypatch):
    from numba.cuda.simulator import kernelapi

    assert getattr(kernelapi.FakeCUDAShared.array, "numgrad_locked", False)
    slow = _SlowEmpty()
    monkeypatch.setattr(kernelapi, "np", slow)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 12)), rng.standard_normal((12, 9))
    product = numgrad.tensor(a, device="cuda") @ numgrad.tensor(b, device="cuda")
    np.testing.assert_allclose(product.cpu().numpy(), a @ b, rtol=1e-12, atol=1e-12)
    x = rng.standard_normal(1000)
    np.testing.assert_allclose(numgrad.tensor(x, device="cuda").sum().item(), x.sum(), rtol=1e-12)
    assert slow.calls >= 2  # (the shared arrays were made through the slowed path)
