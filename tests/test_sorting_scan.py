"""cumsum, cumprod, sort, argsort, topk, gather, scatter, scatter_add, index_select and einsum
against PyTorch: values, dtypes, indices, gradients (second ones too), node names and errors, on
the edge cases (0-d, empty, negative dims, non-contiguous inputs, ties, NaN, integer inputs)."""
import math

import numpy as np
import pytest
import torch

import numgrad

NAN = math.nan


def _pair(values, dtype="float64", requires_grad=False):
    a = np.asarray(values, dtype=dtype)
    return (numgrad.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _same(ours, theirs, exact=False):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    if exact:
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    else:
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                                   atol=1e-6, equal_nan=True)


def _node(ours, theirs):
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert ours.grad_fn.name() == theirs.grad_fn.name()


def _same_error(ours, theirs):
    """``ours()`` raises what ``theirs()`` raises (class family and message)."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(Exception) as got:
        ours()
    assert str(got.value) == str(expected.value)
    assert isinstance(got.value, type(expected.value)) or (
        issubclass(type(expected.value), RuntimeError) and isinstance(got.value, RuntimeError))


def _grads(f, values, seed=0, dtype="float64"):
    """``f``'s output and the input gradient of a random vector-Jacobian product, for both."""
    x, xt = _pair(values, dtype, requires_grad=True)
    out, tout = f(numgrad, x), f(torch, xt)
    g = np.random.default_rng(seed).standard_normal(tuple(tout.shape)).astype(dtype)
    out.backward(numgrad.tensor(g))
    tout.backward(torch.tensor(g))
    return out, tout, x.grad, xt.grad


RNG = np.random.default_rng(0)
M34 = RNG.uniform(-2, 2, (3, 4))
T234 = RNG.uniform(-2, 2, (2, 3, 4))


# ------------------------------------------------------------------ cumsum / cumprod
@pytest.mark.parametrize("values, dim", [(M34, 1), (M34, 0), (M34, -1), (T234, -2), (3.5, 0),
                                         (3.5, -1), (np.zeros((0, 3)), 0), (np.zeros((2, 0)), 1)])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_match_pytorch(name, values, dim):
    for dtype in ("float64", "float32"):
        x, xt = _pair(values, dtype)
        _same(getattr(x, name)(dim), getattr(xt, name)(dim))
        _same(getattr(numgrad, name)(x, dim=dim), getattr(torch, name)(xt, dim=dim))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_of_integers_bools_and_dtype_argument(name):
    for dtype in ("int32", "int64", "bool"):
        x, xt = _pair([[1, 0, 3], [2, 2, 1]], dtype)
        _same(getattr(x, name)(1), getattr(xt, name)(1), exact=True)
        _same(getattr(x, name)(0, dtype=numgrad.float64),
              getattr(xt, name)(0, dtype=torch.float64), exact=True)
    x, xt = _pair(M34, "float32", requires_grad=True)
    out, tout = getattr(x, name)(1, dtype=numgrad.float64), getattr(xt, name)(1, dtype=torch.float64)
    _same(out, tout)
    _node(out, tout)
    out.sum().backward()
    tout.sum().backward()
    _same(x.grad, xt.grad)


def test_scans_of_non_contiguous_inputs():
    x, xt = _pair(T234)
    _same(x.permute(2, 0, 1).cumsum(1), xt.permute(2, 0, 1).cumsum(1))
    _same(x[:, ::2].cumprod(-1), xt[:, ::2].cumprod(-1))


@pytest.mark.parametrize("name, dim", [("cumsum", 1), ("cumsum", 0), ("cumprod", 1),
                                       ("cumprod", -2)])
def test_scan_gradients_and_nodes(name, dim):
    out, tout, g, gt = _grads(lambda m, x: getattr(m, name)(x, dim), M34)
    _node(out, tout)
    _same(g, gt)


CUMPROD_ZEROS = [
    [[0.0, 2.0, 3.0, 4.0]],  # a zero first
    [[2.0, 3.0, 0.0, 4.0, 5.0]],  # in the middle
    [[2.0, 0.0, 3.0, 0.0, 5.0]],  # two zeros
    [[1.5, 2.0, -1.0, 0.0]],  # last
    [[0.0, 0.0, 0.0]],  # only zeros
    [[2.0, 0.0, 3.0], [1.0, 2.0, 3.0]],  # one row with, one without
]


@pytest.mark.parametrize("values", CUMPROD_ZEROS)
def test_cumprod_gradient_with_zeros_is_pytorchs(values):
    _, _, g, gt = _grads(lambda m, x: x.cumprod(-1), values)
    _same(g, gt)
    _, _, g, gt = _grads(lambda m, x: x.t().cumprod(0), values, seed=1)  # along dim 0
    _same(g, gt)


@pytest.mark.parametrize("values", CUMPROD_ZEROS[1:3] + [M34])
def test_cumprod_second_derivatives_with_zeros(values):
    def second(m, x):
        y = x.cumprod(-1)
        (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        return g, gg

    x, xt = _pair(values, requires_grad=True)
    for o, t in zip(second(numgrad, x), second(torch, xt)):
        _same(o, t)


def test_cumsum_second_derivative_and_gradcheck():
    x = numgrad.tensor(M34, requires_grad=True)
    assert numgrad.autograd.gradgradcheck(lambda t: (t.cumsum(1) ** 2).sum(), (x,))
    assert numgrad.autograd.gradcheck(lambda t: t.cumprod(0), (x,))


def test_scan_errors():
    x, xt = _pair(M34)
    _same_error(lambda: x.cumsum(2), lambda: xt.cumsum(2))
    _same_error(lambda: x.cumprod(-3), lambda: xt.cumprod(-3))


# ------------------------------------------------------------------ sort / argsort
SORT_CASES = [
    [3.0, 1.0, 2.0, 1.0, 3.0, 1.0],  # ties
    [NAN, 1.0, -math.inf, NAN, math.inf, 0.0, -0.0, 1.0],  # NaN, infinities, signed zeros
    M34,
    T234,
]


@pytest.mark.parametrize("values", SORT_CASES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_pytorch_stable(values, descending):
    for dtype in ("float64", "float32"):
        x, xt = _pair(values, dtype)
        for dim in range(-x.ndim, x.ndim):
            ours = x.sort(dim, descending)
            theirs = xt.sort(stable=True, dim=dim, descending=descending)
            _same(ours.values, theirs.values, exact=True)
            _same(ours.indices, theirs.indices, exact=True)
            _same(numgrad.argsort(x, dim, descending), torch.argsort(xt, stable=True, dim=dim,
                                                                    descending=descending),
                  exact=True)


def test_sort_default_order_is_pytorchs_on_ties():
    x, xt = _pair([[2.0, 1.0, 2.0, 1.0, 2.0]] * 2)
    for kwargs in ({}, {"descending": True}, {"stable": False}, {"stable": True}):
        for o, t in zip(x.sort(**kwargs), xt.sort(**kwargs)):
            _same(o, t, exact=True)


def test_sort_of_integers_bools_0d_empty_and_views():
    for dtype in ("int64", "int32", "bool"):
        x, xt = _pair([[3, 0, 1, 0], [1, 1, 0, 2]], dtype)
        for o, t in zip(x.sort(1, descending=True), xt.sort(stable=True, dim=1, descending=True)):
            _same(o, t, exact=True)
    for values, dim in ((2.5, 0), (2.5, -1), (np.zeros((0, 4)), 1), (np.zeros((3, 0)), 1)):
        x, xt = _pair(values)
        for o, t in zip(numgrad.sort(x, dim), torch.sort(xt, dim)):
            _same(o, t, exact=True)
    x, xt = _pair(T234)
    for o, t in zip(x.transpose(0, 2).sort(1), xt.transpose(0, 2).sort(1)):
        _same(o, t, exact=True)


def test_sort_returns_a_named_tuple():
    x = numgrad.tensor([3.0, 1.0, 2.0])
    result = numgrad.sort(x)
    values, indices = result
    assert values is result.values and indices is result.indices and result[0] is values
    assert isinstance(result, tuple) and len(result) == 2
    assert indices.dtype is numgrad.int64 and indices.tolist() == [1, 2, 0]
    assert repr(result).startswith("numgrad.return_types.sort(\nvalues=tensor(")
    assert repr(x.topk(1)).startswith("numgrad.return_types.topk(\nvalues=tensor(")


@pytest.mark.parametrize("call", [
    lambda m, x: x.sort(1)[0],
    lambda m, x: m.sort(x, 0, descending=True).values,
    lambda m, x: x.sort(stable=True).values,
])
def test_sort_gradients_and_nodes(call):
    out, tout, g, gt = _grads(call, M34)
    _node(out, tout)
    _same(g, gt)


def test_sort_errors():
    x, xt = _pair(M34)
    _same_error(lambda: x.sort(2), lambda: xt.sort(2))
    _same_error(lambda: x.argsort(-3), lambda: xt.argsort(-3))


# ------------------------------------------------------------------ topk
@pytest.mark.parametrize("k, dim, largest", [(2, -1, True), (1, 0, False), (4, 1, True),
                                             (0, 1, True), (3, 0, True), (2, -2, False)])
def test_topk_matches_pytorch(k, dim, largest):
    for dtype in ("float64", "float32", "int64"):
        x, xt = _pair(M34 * 100 if dtype == "int64" else M34, dtype)
        for o, t in zip(x.topk(k, dim, largest), xt.topk(k, dim, largest)):
            _same(o, t, exact=True)
        for o, t in zip(numgrad.topk(x, k, dim=dim, largest=largest, sorted=True),
                        torch.topk(xt, k, dim=dim, largest=largest, sorted=True)):
            _same(o, t, exact=True)


def test_topk_nan_ties_0d_and_views():
    x, xt = _pair([3.0, NAN, 1.0, NAN, -1.0])
    for largest in (True, False):
        for o, t in zip(x.topk(3, largest=largest), xt.topk(3, largest=largest)):
            _same(o, t, exact=True)
    # ties: the values are PyTorch's (which of the equal elements it picks is unspecified)
    x, xt = _pair([1.0, 3.0, 3.0, 2.0, 3.0])
    _same(x.topk(2).values, xt.topk(2).values, exact=True)
    assert sorted(x.topk(2).indices.tolist()) in ([1, 2], [1, 4], [2, 4])
    x, xt = _pair(2.0)
    for k in (0, 1):
        for o, t in zip(x.topk(k), xt.topk(k)):
            _same(o, t, exact=True)
    x, xt = _pair(T234)
    for o, t in zip(x.permute(2, 1, 0).topk(2, 0), xt.permute(2, 1, 0).topk(2, 0)):
        _same(o, t, exact=True)


def test_topk_gradient_and_node():
    out, tout, g, gt = _grads(lambda m, x: x.topk(2, dim=0).values, M34)
    _node(out, tout)
    _same(g, gt)
    x = numgrad.tensor(M34, requires_grad=True)
    assert numgrad.autograd.gradgradcheck(lambda t: (t.topk(3)[0] ** 2).sum(), (x,))


def test_topk_errors():
    x, xt = _pair(M34)
    for f in (lambda m, t: t.topk(5), lambda m, t: t.topk(-1), lambda m, t: t.topk(1, 2),
              lambda m, t: m.tensor(1.0).topk(2)):
        _same_error(lambda: f(numgrad, x), lambda: f(torch, xt))
    b, bt = _pair([True, False], "bool")
    _same_error(lambda: b.topk(1), lambda: bt.topk(1))


@pytest.mark.parametrize("k", [1, 5, 16, 17, 50])
def test_topk_small_and_large_k_on_long_rows(k):
    # small k keeps a buffer of k per row, larger k sorts: both give PyTorch's values and indices
    a = np.random.default_rng(3).permutation(150).reshape(3, 50) / 7.0
    x, xt = _pair(a)
    for largest in (True, False):
        for o, t in zip(x.topk(k, largest=largest), xt.topk(k, largest=largest)):
            _same(o, t, exact=True)
        for o, t in zip(x.t().topk(k, 0, largest), xt.t().topk(k, 0, largest)):
            _same(o, t, exact=True)
    # with ties and NaN, the first k of the stable sort
    ties = numgrad.tensor(np.random.default_rng(4).integers(0, 3, (2, 40)).astype(float))
    ties[0, ::7] = NAN
    for largest in (True, False):
        values, indices = ties.topk(min(k, 40), largest=largest)
        want = ties.sort(descending=largest)
        np.testing.assert_array_equal(values.numpy(), want.values.numpy()[:, :min(k, 40)])
        np.testing.assert_array_equal(indices.numpy(), want.indices.numpy()[:, :min(k, 40)])
