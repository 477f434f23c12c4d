"""Focused simulator tests of the CUDA compute kernels (run with tests/cuda_sim, see
test_cuda_sim.py): the block-parallel sum, the tiled GEMM on shapes that are not multiples of its
tiles, max/min ties and NaN, nll_loss with ignore_index, and the reductions' backward helpers.

The registry samples (test_cuda_sim.py) are small; these cross the kernels' size thresholds
(the simulator's tiles and trees are small too, so the sizes here stay cheap).
"""
import math

import numpy as np
import pytest

import numgrad
from numgrad.kernels.cuda import linalg as cuda_linalg
from numgrad.kernels.cuda import reduction as cuda_reduction

TOL = {"float64": dict(rtol=1e-7, atol=1e-9), "float32": dict(rtol=2e-5, atol=2e-5)}


@pytest.fixture(scope="module")
def K():
    return numgrad.cuda.kernels()


def _host(t):
    return t.detach().cpu().numpy()


def _pair(a, requires_grad=False):
    """The same data as a CPU and a CUDA tensor."""
    return (numgrad.tensor(a, requires_grad=requires_grad),
            numgrad.tensor(a, device="cuda", requires_grad=requires_grad))


# ------------------------------------------------------------------ block-parallel sums
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tree_sum_of_a_wide_row_matches_numpy(K, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 5000)).astype(dtype)
    # Few outputs over many elements: the tree, split into parts, then a second pass.
    assert 5000 >= cuda_reduction._TREE_MIN_K
    d = K.upload(a)
    expected = a.astype(np.float64).sum(1)
    np.testing.assert_allclose(K.to_host(K.sum_dims(d, (1,), False)), expected.astype(dtype),
                               rtol=1e-6 if dtype == "float32" else 1e-12)
    total = K.to_host(K.sum_dims(d, (0, 1), False))
    assert total.shape == () and total.dtype == np.dtype(dtype)
    np.testing.assert_allclose(total, a.astype(np.float64).sum(), rtol=1e-6 if dtype == "float32" else 1e-12)


def test_tree_sum_over_rows_with_inner_extent(K):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 3))
    d = K.upload(a)
    np.testing.assert_allclose(K.to_host(K.sum_dims(d, (0,), True)), a.sum(0, keepdims=True), rtol=1e-12)
    x = rng.standard_normal((3, 100, 2))
    np.testing.assert_allclose(K.to_host(K.sum_dims(K.upload(x), (0, 2), False)), x.sum((0, 2)),
                               rtol=1e-12)


def test_tree_sum_gradient_and_mean_on_cuda():
    a = np.random.default_rng(2).standard_normal((2, 700)).astype(np.float32)
    c, g = _pair(a, True)
    (c.sum(1) * numgrad.tensor([1.0, 2.0])).sum().backward()
    (g.sum(1) * numgrad.tensor([1.0, 2.0], device="cuda")).sum().backward()
    np.testing.assert_allclose(_host(g.grad), _host(c.grad))
    np.testing.assert_allclose(_host(g.mean()), _host(c.mean()), rtol=1e-6)


# ------------------------------------------------------------------ GEMM
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_odd_shapes_match_numpy(K, dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((37, 53)).astype(dtype)
    b = rng.standard_normal((53, 19)).astype(dtype)
    assert 37 % cuda_linalg.BM and 19 % cuda_linalg.BN and 53 % cuda_linalg.BK
    expected = a.astype(np.float64) @ b.astype(np.float64)
    out = K.to_host(K.matmul(K.upload(a), K.upload(b)))
    assert out.shape == (37, 19) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out, expected, **TOL[dtype])
    # Transposed operands read where they lie: op(a) @ op(b) for each pair of flags.
    at, bt = K.upload(np.ascontiguousarray(a.T)), K.upload(np.ascontiguousarray(b.T))
    for x, y, ta, tb in ((at, K.upload(b), True, False), (K.upload(a), bt, False, True),
                         (at, bt, True, True)):
        np.testing.assert_allclose(K.to_host(K.matmul(x, y, ta, tb)), expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batched_gemm_matches_numpy(K, dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 37, 21)).astype(dtype)
    b = rng.standard_normal((3, 21, 19)).astype(dtype)
    out = K.to_host(K.matmul(K.upload(a), K.upload(b)))
    assert out.shape == (3, 37, 19)
    np.testing.assert_allclose(out, np.matmul(a.astype(np.float64), b), **TOL[dtype])
    # A matrix shared by the whole batch (batch stride 0), and a transposed batch.
    shared = rng.standard_normal((21, 19)).astype(dtype)
    np.testing.assert_allclose(K.to_host(K.matmul(K.upload(a), K.upload(shared))),
                               np.matmul(a.astype(np.float64), shared), **TOL[dtype])
    bt = np.ascontiguousarray(np.swapaxes(b, 1, 2))
    np.testing.assert_allclose(K.to_host(K.matmul(K.upload(a), K.upload(bt), False, True)),
                               np.matmul(a.astype(np.float64), b), **TOL[dtype])


def test_gemm_vectors_and_empty_reduction(K):
    rng = np.random.default_rng(5)
    a, v = rng.standard_normal((37, 53)), rng.standard_normal(53)
    np.testing.assert_allclose(K.to_host(K.matmul(K.upload(a), K.upload(v))), a @ v, rtol=1e-12)
    w = rng.standard_normal(37)
    np.testing.assert_allclose(K.to_host(K.matmul(K.upload(a), K.upload(w), True)), a.T @ w, rtol=1e-12)
    d = K.to_host(K.dot(K.upload(v), K.upload(v)))
    assert d.shape == () and np.isclose(d, v @ v, rtol=1e-12)
    empty = K.matmul(K.upload(np.zeros((3, 0))), K.upload(np.zeros((0, 4))))
    np.testing.assert_array_equal(K.to_host(empty), np.zeros((3, 4)))


def test_gemm_rejects_integers_as_pytorch(K):
    a = K.upload(np.ones((2, 2), np.int64))
    with pytest.raises(RuntimeError, match="\"addmm_cuda\" not implemented for 'Long'"):
        K.matmul(a, a)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mm_bmm_mv_gradients_match_cpu_on_odd_shapes(dtype):
    rng = np.random.default_rng(6)
    cases = [
        (lambda m, x, y: m.mm(x, y), (37, 53), (53, 19)),
        (lambda m, x, y: m.bmm(x, y), (2, 19, 21), (2, 21, 17)),
        (lambda m, x, y: m.mv(x, y), (37, 21), (21,)),
        (lambda m, x, y: m.dot(x, y), (53,), (53,)),
    ]
    for f, sa, sb in cases:
        a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
        (ca, ga), (cb, gb) = _pair(a, True), _pair(b, True)
        co, go = f(numgrad, ca, cb), f(numgrad, ga, gb)
        assert go.grad_fn.name() == co.grad_fn.name()
        np.testing.assert_allclose(_host(go), _host(co), **TOL[dtype])
        seed = rng.standard_normal(co.shape).astype(dtype)
        co.backward(numgrad.tensor(seed))
        go.backward(numgrad.tensor(seed, device="cuda"))
        np.testing.assert_allclose(_host(ga.grad), _host(ca.grad), **TOL[dtype])
        np.testing.assert_allclose(_host(gb.grad), _host(cb.grad), **TOL[dtype])


def test_mm_second_derivative_on_cuda():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    results = []
    for device in ("cpu", "cuda"):
        x = numgrad.tensor(a, device=device, requires_grad=True)
        y = numgrad.tensor(b, device=device, requires_grad=True)
        (gx,) = numgrad.autograd.grad((x.mm(y) ** 2).sum(), (x,), create_graph=True)
        (gy,) = numgrad.autograd.grad(gx.sum(), (y,))
        results.append((_host(gx), _host(gy)))
    for c, g in zip(*results):
        np.testing.assert_allclose(g, c, rtol=1e-12)


# ------------------------------------------------------------------ max/min: ties and NaN
_TIES = np.array([[1.0, 3.0, 3.0, 2.0], [np.nan, 1.0, np.nan, 0.0], [2.0, 2.0, 2.0, 2.0],
                  [-1.0, np.nan, -5.0, -5.0]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("which", ["max", "min"])
def test_max_min_dim_ties_and_nan_match_cpu(dtype, which):
    c, g = _pair(_TIES.astype(dtype))
    for dim in (0, 1):
        cv, ci = getattr(c, which)(dim)
        gv, gi = getattr(g, which)(dim)
        assert gi.device.type == "cuda" and gi.dtype is numgrad.int64
        np.testing.assert_array_equal(_host(gv), _host(cv))
        np.testing.assert_array_equal(_host(gi), _host(ci))
    # The first index of the extreme, or of the first NaN (PyTorch's choice).
    expected = {"max": [1, 0, 0, 1], "min": [0, 0, 0, 1]}[which]
    np.testing.assert_array_equal(_host(getattr(g, which)(1).indices), expected)
    arg = getattr(numgrad, "arg" + which)
    np.testing.assert_array_equal(_host(arg(g, 1)), _host(arg(c, 1)))
    assert arg(g).item() == arg(c).item() == 4  # flattened: the first NaN
    assert math.isnan(getattr(g, which)().item())
    np.testing.assert_array_equal(_host(getattr(g, "a" + which)(1)), _host(getattr(c, "a" + which)(1)))


@pytest.mark.parametrize("which", ["amax", "amin", "max", "min"])
def test_tied_extremes_gradients_match_cpu(which):
    data = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 2.0], [0.0, -1.0, 5.0, -1.0]])
    c, g = _pair(data, True)
    for t in (c, g):
        out = getattr(t, which)(dim=1) if which.startswith("a") else getattr(t, which)(1).values
        (out * numgrad.tensor([1.0, 2.0, 3.0], device=t.device)).sum().backward()
    np.testing.assert_array_equal(_host(g.grad), _host(c.grad))
    c2, g2 = _pair(data, True)
    for t in (c2, g2):  # over all elements: ties share the gradient evenly
        getattr(t, which)().backward()
    np.testing.assert_array_equal(_host(g2.grad), _host(c2.grad))


def test_extremes_over_non_adjacent_dims_match_cpu():
    x = np.random.default_rng(8).standard_normal((3, 4, 5, 2))
    c, g = _pair(x, True)
    for t in (c, g):
        (t.amax((0, 2)).sum() + t.amin((1, 3), keepdim=True).sum() + t.prod((0, 3)).sum()).backward()
    np.testing.assert_allclose(_host(g.grad), _host(c.grad), rtol=1e-12)
    np.testing.assert_allclose(_host(g.amax((0, 2))), x.max((0, 2)))


def test_prod_with_zeros_gradient_matches_cpu():
    x = np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, 2.0, 4.0]])
    for dims in ((None,), (1,), (0,)):
        c, g = _pair(x, True)
        for t in (c, g):
            (t.prod() if dims == (None,) else t.prod(dims[0])).sum().backward()
        np.testing.assert_array_equal(_host(g.grad), _host(c.grad))


def test_softmax_family_with_infinities_matches_cpu():
    # (Not a row of -inf only: its 0/0 raises ZeroDivisionError in the simulator's Python
    # arithmetic, where a GPU gives NaN as the CPU does.)
    x = np.array([[1.0, -np.inf, 2.0], [-np.inf, -np.inf, 3.0], [np.inf, 0.0, 1.0]])
    c, g = _pair(x)
    for f in (lambda t: t.softmax(1), lambda t: t.log_softmax(1), lambda t: t.logsumexp(1)):
        np.testing.assert_allclose(_host(f(g)), _host(f(c)), rtol=1e-12)


# ------------------------------------------------------------------ nll_loss
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_ignore_index_matches_cpu(dtype, reduction):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 5)).astype(dtype)
    target = np.array([0, 2, 2, 4, 1, 2])
    weight = np.linspace(0.5, 2.0, 5).astype(dtype)
    for w in (None, weight):
        results = []
        for device in ("cpu", "cuda"):
            xi = numgrad.tensor(x, device=device, requires_grad=True)
            ti = numgrad.tensor(target, device=device)
            wi = None if w is None else numgrad.tensor(w, device=device)
            loss = numgrad.nn.functional.nll_loss(xi, ti, weight=wi, ignore_index=2, reduction=reduction)
            loss.backward(numgrad.ones_like(loss))
            results.append((_host(loss), _host(xi.grad), loss.grad_fn.name()))
        (cl, cg, cn), (gl, gg, gn) = results
        assert gn == cn == "NllLossBackward0"
        np.testing.assert_allclose(gl, cl, **TOL[dtype])
        np.testing.assert_allclose(gg, cg, **TOL[dtype])
        assert not gg[[1, 2, 5]].any()  # ignored rows get no gradient


def test_nll_loss_every_row_ignored_is_nan_and_bad_target_raises():
    x = numgrad.zeros(2, 3, device="cuda", requires_grad=True)
    t = numgrad.tensor([1, 1], device="cuda")
    loss = numgrad.nn.functional.nll_loss(x, t, ignore_index=1)
    assert math.isnan(loss.item())
    loss.backward()
    assert np.isnan(_host(x.grad)).sum() == 0  # ignored rows: nothing is scattered
    bad = numgrad.nn.functional.nll_loss(x, numgrad.tensor([0, 7], device="cuda"))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):  # at the next sync
        bad.item()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        numgrad.nn.functional.nll_loss(x, numgrad.tensor([0, 1]))


def test_cross_entropy_and_mse_on_cuda_match_cpu():
    rng = np.random.default_rng(10)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    target = np.array([2, 0, 1, 1])
    results = []
    for device in ("cpu", "cuda"):
        xi = numgrad.tensor(x, device=device, requires_grad=True)
        loss = (numgrad.nn.functional.cross_entropy(xi, numgrad.tensor(target, device=device))
                + numgrad.nn.functional.mse_loss(xi, numgrad.tensor(y, device=device)))
        loss.backward()
        results.append((_host(loss), _host(xi.grad)))
    for c, g in zip(*results):
        np.testing.assert_allclose(g, c, rtol=1e-12)


# ------------------------------------------------------------------ block-parallel extremes
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tree_extremes_of_a_wide_row_match_cpu(dtype):
    rng = np.random.default_rng(11)
    a = np.round(rng.standard_normal((2, 5000)), 1).astype(dtype)  # many ties
    a[0, [100, 4000]] = a[0].max() + 1  # a tie for the max, in two parts of the row
    a[1, 3000], a[1, 4500] = np.nan, np.nan  # the first NaN wins, in a later part
    assert 5000 >= cuda_reduction._TREE_MIN_K
    c, g = _pair(a)
    for which in ("max", "min"):
        cv, ci = getattr(c, which)(1)
        gv, gi = getattr(g, which)(1)
        np.testing.assert_array_equal(_host(gv), _host(cv))
        np.testing.assert_array_equal(_host(gi), _host(ci))
        np.testing.assert_array_equal(_host(getattr(numgrad, "arg" + which)(g, 1)),
                                      _host(ci))
    np.testing.assert_array_equal(_host(g.max(1).indices), [100, 3000])
    assert math.isnan(g.amax().item()) and g.argmax().item() == 8000
    finite = np.ascontiguousarray(a[:1])
    cf, gf = _pair(finite)
    assert gf.argmin().item() == cf.argmin().item() and gf.amin().item() == cf.amin().item()
    near_one = (1 + 1e-3 * rng.standard_normal((1, 5000))).astype(dtype)
    cp, gp = _pair(near_one)
    np.testing.assert_allclose(_host(gp.prod(1)), _host(cp.prod(1)), rtol=1e-4 if dtype == "float32" else 1e-12)
