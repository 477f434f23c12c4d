"""The fused CPU log-softmax (kernels/cpu/softmax.py) against PyTorch: values and gradients along
the last dimension (fused) and others (composite), long rows, and PyTorch's special values."""
import numpy as np
import pytest
import torch

import numgrad


@pytest.mark.parametrize("dtype, tol", [("float32", 2e-6), ("float64", 1e-12)])
@pytest.mark.parametrize("shape, dim", [((64, 10), 1), ((3, 1), -1), ((5, 1000), 1), ((2, 3, 7), 2),
                                        ((2, 3, 7), 1), ((4, 6), 0)])
def test_log_softmax_matches_pytorch(dtype, tol, shape, dim):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    ours = numgrad.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    out, tout = ours.log_softmax(dim), theirs.log_softmax(dim)
    assert out.grad_fn.name() == "LogSoftmaxBackward0"
    out.backward(numgrad.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dim", [-1, 0])
def test_log_softmax_special_values_as_pytorch(dim):
    x = np.array([[1, np.inf, 2], [-np.inf, -np.inf, -np.inf], [np.nan, 1, 2], [1, 2, -np.inf]],
                 np.float32)
    ours = numgrad.tensor(x).log_softmax(dim).numpy()
    theirs = torch.tensor(x).log_softmax(dim).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_log_softmax_second_derivative_uses_the_composite_backward():
    x = numgrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    t = torch.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    (g,) = numgrad.autograd.grad((x.log_softmax(1) ** 2).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((t.log_softmax(1) ** 2).sum(), t, create_graph=True)
    (gg,) = numgrad.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), t)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)
