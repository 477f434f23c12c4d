"""Matrix-product gradients in the cases the engine shortcuts, against PyTorch: a product whose
output gradient is one number everywhere (``(a @ b).sum()``, ``.mean()``) is reduced instead of
multiplied (ops/linalg.py, ``_uniform_grad_backward``), and a column-major operand (a transposed
view, as F.linear's weight.t()) gets a gradient laid out for its parameter."""
import numpy as np
import pytest
import torch

import numgrad


def _pair(shape, dtype, seed):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return numgrad.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 1e-4)])
@pytest.mark.parametrize("reduce", ["sum", "mean", "scaled_sum"])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_uniform_output_gradient_matches_pytorch(dtype, tol, reduce, ta, tb):
    m, k, n = 5, 7, 3
    a, ta_ = _pair((k, m) if ta else (m, k), dtype, 0)
    b, tb_ = _pair((n, k) if tb else (k, n), dtype, 1)

    def run(mod, a, b):
        out = (a.t() if ta else a) @ (b.t() if tb else b)
        loss = {"sum": out.sum(), "mean": out.mean(), "scaled_sum": (out * 3.0).sum()}[reduce]
        loss.backward()
        return a.grad, b.grad

    ga, gb = run(numgrad, a, b)
    tga, tgb = run(torch, ta_, tb_)
    for g, t in ((ga, tga), (gb, tgb)):
        assert g.shape == tuple(t.shape) and g.is_contiguous()
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=tol, atol=tol)


def test_uniform_gradient_with_create_graph_still_records_products():
    a = numgrad.ones(3, 4, dtype=numgrad.float64, requires_grad=True)
    b = numgrad.ones(4, 2, dtype=numgrad.float64, requires_grad=True)
    (ga,) = numgrad.autograd.grad((a @ b).sum(), a, create_graph=True)
    assert ga.grad_fn is not None and ga.grad_fn.name() == "MmBackward0"
    np.testing.assert_array_equal(ga.detach().numpy(), np.full((3, 4), 2.0))


def test_linear_weight_gradient_is_adopted_without_a_copy():
    """F.linear multiplies by weight.t() (column-major): the weight's gradient comes out
    row-major for the weight, so the engine adopts the product's buffer as .grad."""
    from numgrad.autograd import engine

    layer = numgrad.nn.Linear(6, 4)
    x = numgrad.tensor(np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32))
    copied = []
    original = engine._copy
    engine._copy = lambda data: copied.append(data.shape) or original(data)
    try:
        (layer(x) * numgrad.tensor(np.arange(20.0, dtype=np.float32).reshape(5, 4))).sum().backward()
    finally:
        engine._copy = original
    assert layer.weight.grad.is_contiguous()
    assert (4, 6) not in copied
    expected = np.arange(20.0, dtype=np.float32).reshape(5, 4).T @ x.numpy()
    np.testing.assert_allclose(layer.weight.grad.numpy(), expected, rtol=1e-5)
