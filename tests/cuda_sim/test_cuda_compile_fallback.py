"""numgrad.compile on CUDA tensors: the trace records CPU kernels only, so a step on CUDA tensors
runs eagerly, with one warning naming why (an error with ``fullgraph=True``), eager's results,
and no tracing again on later calls."""
import warnings

import numpy as np
import pytest

import numgrad


def _step(x, w):
    def step():
        loss = ((x * w).tanh() * 2).sum()
        loss.backward()
        return loss

    return step


def test_a_cuda_step_runs_eagerly_with_one_warning():
    data = np.linspace(-1, 1, 6)
    x = numgrad.tensor(data, device="cuda")
    w = numgrad.tensor(data[::-1].copy(), device="cuda", requires_grad=True)
    compiled = numgrad.compile(_step(x, w))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [float(compiled()) for _ in range(3)]
    messages = [str(c.message) for c in caught if issubclass(c.category, RuntimeWarning)]
    assert messages == ["numgrad.compile runs _step.<locals>.step eagerly: it cannot trace a "
                        "step on CUDA tensors (only CPU tensors are traced, for now)"]
    we = numgrad.tensor(data[::-1].copy(), device="cuda", requires_grad=True)
    eager = [float(_step(x, we)()) for _ in range(3)]  # (the same, uncompiled)
    assert losses == eager
    np.testing.assert_array_equal(w.grad.cpu().numpy(), we.grad.cpu().numpy())
    # (traced once before the first backward and once after: .grad appeared; then no more)
    assert compiled.traces == 2 and len(compiled._entries) == 2


def test_a_cuda_step_under_fullgraph_raises():
    x = numgrad.ones(3, device="cuda", requires_grad=True)
    with pytest.raises(numgrad.compiler.GraphBreak, match="a step on CUDA tensors"):
        numgrad.compile(_step(x, x), fullgraph=True)()
    assert x.grad is None  # (refused before the step ran)
