"""Predicates, nan-aware and order reductions, and the data-dependent ops, against PyTorch:
values and dtypes (NaN, ±inf, ±0, integers and bools, 0-d, empty and non-contiguous inputs),
gradients (gradcheck / gradgradcheck in float64, and PyTorch's), node names and error messages.
The registry samples of the differentiable ones run in tests/test_ops.py as well."""
import math
import warnings

import numpy as np
import pytest
import torch

import numgrad
from numgrad.autograd import gradcheck, gradgradcheck

NAN, INF = math.nan, math.inf
RNG = np.random.default_rng(16)

SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, NAN, INF, -INF, 3.0, NAN, 1e-300])
ARRAYS = {
    "special": SPECIAL,
    "matrix": RNG.standard_normal((3, 4)),
    "with_nan": np.array([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 0.0, 1.0], [2.0, 2.0, 1.0, 5.0]]),
    "scalar": np.array(2.5),
    "scalar_nan": np.array(NAN),
    "empty": np.zeros((0, 3)),
    "ties": np.array([[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 3.0, 0.0]]),
    "int": np.array([[3, 0, -2], [0, 5, 5]], np.int64),
    "int32": np.array([1, 0, 7], np.int32),
    "bool": np.array([[True, False], [False, False]]),
}


def _pair(array, requires_grad=False):
    return (numgrad.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _same(ours, theirs, exact=True):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t, exact)
        return
    if isinstance(theirs, bool):
        assert ours is theirs
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs.dtype)
    o, t = ours.detach().numpy(), theirs.detach().numpy()
    if exact:
        np.testing.assert_array_equal(o, t)
    else:
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


def _both(fn, *arrays, exact=True):
    ours = fn(numgrad, *[numgrad.tensor(a) for a in arrays])
    theirs = fn(torch, *[torch.tensor(a) for a in arrays])
    _same(ours, theirs, exact)


def _errors_alike(fn, *arrays, error=Exception):
    with pytest.raises(error) as theirs:
        fn(torch, *[torch.tensor(a) for a in arrays])
    with pytest.raises(type(theirs.value)) as ours:
        fn(numgrad, *[numgrad.tensor(a) for a in arrays])
    assert str(ours.value) == str(theirs.value)


def _views(array):
    """The array, and a non-contiguous view of it where it has two dimensions."""
    yield array
    if array.ndim == 2:
        yield array.T


# ------------------------------------------------------------------ elementwise predicates
@pytest.mark.parametrize("name", ["isnan", "isinf", "isposinf", "isneginf", "isfinite"])
@pytest.mark.parametrize("case", sorted(ARRAYS))
def test_elementwise_predicates(name, case):
    for a in _views(ARRAYS[case]):  # (bools and integers too: PyTorch accepts them)
        _both(lambda m, x: getattr(m, name)(x), a)
        _both(lambda m, x: getattr(x, name)(), a)


def test_float32_predicates():
    a = SPECIAL.astype(np.float32)
    for name in ("isnan", "isinf", "isfinite", "isposinf"):
        _both(lambda m, x: getattr(m, name)(x), a)


# ------------------------------------------------------------------ any, all, count_nonzero
@pytest.mark.parametrize("case", sorted(ARRAYS))
@pytest.mark.parametrize("name", ["any", "all"])
def test_any_all(name, case):
    a = ARRAYS[case]
    _both(lambda m, x: getattr(m, name)(x), a)
    for d in range(-a.ndim, a.ndim) if a.ndim else (0, -1):
        _both(lambda m, x: getattr(m, name)(x, d), a)
        _both(lambda m, x: getattr(x, name)(dim=d, keepdim=True), a)
    if a.ndim == 2:
        _both(lambda m, x: getattr(m, name)(x.t(), (0, 1)), a)
        _both(lambda m, x: getattr(m, name)(x, (1,), keepdim=True), a)


@pytest.mark.parametrize("case", sorted(ARRAYS))
def test_count_nonzero(case):
    a = ARRAYS[case]
    _both(lambda m, x: m.count_nonzero(x), a)
    if a.ndim:
        _both(lambda m, x: x.count_nonzero(-1), a)
        _both(lambda m, x: m.count_nonzero(x, dim=tuple(range(a.ndim))), a)


def test_keepdim_without_dim_and_empty_dim_lists():
    a = ARRAYS["with_nan"]
    _both(lambda m, x: m.any(x, keepdim=True), a)
    _both(lambda m, x: x.all(dim=None, keepdim=True), a)
    _both(lambda m, x: m.any(x, dim=[]), a)
    _both(lambda m, x: m.count_nonzero(x, dim=()), a)
    _both(lambda m, x: m.count_nonzero(x, dim=[0, 1]), a)
    _both(lambda m, x: m.nansum(x, keepdim=True), a)
    _both(lambda m, x: m.nansum(x, dim=()), a)
    _both(lambda m, x: m.nanmean(x, keepdim=True), a)
    _errors_alike(lambda m, x: m.nanmean(x, dtype=m.float64), ARRAYS["int"])


def test_any_all_count_errors():
    a = ARRAYS["matrix"]
    _errors_alike(lambda m, x: m.count_nonzero(x, dim=(0, 0)), a)
    _errors_alike(lambda m, x: m.any(x, 2), a, error=IndexError)
    _errors_alike(lambda m, x: m.all(x, -3), a, error=IndexError)


# ------------------------------------------------------------------ isclose, allclose, equal
def test_isclose_values():
    a = np.array([1.0, 1.0 + 1e-6, NAN, INF, -INF, INF, 0.0, -0.0, 100.0, 1e-9])
    b = np.array([1.0, 1.0, NAN, INF, INF, 1e308, -0.0, 0.0, 100.01, 0.0])
    for dt in ("float64", "float32"):
        x, y = a.astype(dt), b.astype(dt)
        _both(lambda m, p, q: m.isclose(p, q), x, y)
        _both(lambda m, p, q: m.isclose(p, q, equal_nan=True), x, y)
        _both(lambda m, p, q: p.isclose(q, rtol=1e-3, atol=0.1), x, y)
        _both(lambda m, p, q: m.isclose(p, q, rtol=0, atol=0), x, y)
        _both(lambda m, p, q: m.allclose(p, q), x, y)
        _both(lambda m, p, q: m.allclose(p, q, equal_nan=True), x[:2], y[:2])
        _both(lambda m, p, q: m.allclose(p, q, equal_nan=True), x[:3], y[:3])


def test_isclose_broadcast_integers_bools():
    _both(lambda m, p, q: m.isclose(p, q), RNG.standard_normal((3, 1)), RNG.standard_normal(4))
    _both(lambda m, p, q: m.isclose(p, q, atol=1), np.array([1, 5, 9]), np.array([2, 5, 7]))
    _both(lambda m, p, q: m.isclose(p, q), np.array([True, False]), np.array([True, True]))
    _both(lambda m, p, q: m.allclose(p, q, rtol=0.5), np.array([4, 5]), np.array([3, 5]))


def test_isclose_errors():
    f64, f32 = np.ones(2), np.ones(2, np.float32)
    _errors_alike(lambda m, p, q: m.isclose(p, q), f32, f64)
    _errors_alike(lambda m, p, q: m.isclose(p, q, rtol=-1), f64, f64)
    _errors_alike(lambda m, p, q: m.isclose(p, q, atol=-1), f64, f64)
    _errors_alike(lambda m, p: m.isclose(p, 1.0), f64, error=TypeError)


def test_equal():
    a = RNG.standard_normal((2, 3))
    _both(lambda m, p, q: m.equal(p, q), a, a.copy())
    _both(lambda m, p, q: m.equal(p, q), a, a.T.copy())
    _both(lambda m, p, q: m.equal(p, q), a, a + 1)
    _both(lambda m, p, q: m.equal(p.t(), q.t()), a, a.copy())
    _both(lambda m, p, q: p.equal(q), np.array([1, 2]), np.array([1.0, 2.0]))
    _both(lambda m, p, q: m.equal(p, q), np.array([NAN]), np.array([NAN]))
    _both(lambda m, p, q: m.equal(p, q), np.zeros((0, 2)), np.zeros((0, 2)))


def test_isin():
    a = np.array([[1, 2, 3], [4, 2, 0]])
    _both(lambda m, p, q: m.isin(p, q), a, np.array([2, 4, 9]))
    _both(lambda m, p, q: m.isin(p, q, invert=True), a, np.array([2, 4, 9]))
    _both(lambda m, p: m.isin(p, 2), a)
    _both(lambda m, p, q: m.isin(p, q), np.array([1.0, NAN]), np.array([NAN, 1.0]))


# ------------------------------------------------------------------ nan_to_num, nansum, nanmean
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nan_to_num(dtype):
    a = SPECIAL.astype(dtype)
    _both(lambda m, x: m.nan_to_num(x), a)
    _both(lambda m, x: x.nan_to_num(nan=2.0, posinf=9.0, neginf=-9.0), a)
    _both(lambda m, x: m.nan_to_num(x, neginf=0.5), a)
    _both(lambda m, x: m.nan_to_num(x), np.array([1, 2, 3]))
    _both(lambda m, x: m.nan_to_num(x), np.array(NAN, dtype))


def test_nan_to_num_gradient():
    ours, theirs = _pair(SPECIAL, requires_grad=True)
    o, t = numgrad.nan_to_num(ours * 2), torch.nan_to_num(theirs * 2)
    assert o.grad_fn.name() == t.grad_fn.name() == "NanToNumBackward0"
    o.sum().backward()
    t.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    x = numgrad.tensor(RNG.standard_normal((3, 2)), requires_grad=True)
    assert gradcheck(lambda v: numgrad.nan_to_num(v.log()), (x,))
    assert gradgradcheck(lambda v: numgrad.nan_to_num(v * v * v), (x,))


def test_nan_to_num_in_place():
    for dtype in ("float64", "float32"):
        _both(lambda m, x: x.nan_to_num_(posinf=5.0), SPECIAL.astype(dtype))
        _both(lambda m, x: m.nan_to_num_(x.t(), nan=1.0), ARRAYS["with_nan"].astype(dtype))
    ours, theirs = _pair(SPECIAL, requires_grad=True)
    o, t = ours * 3, theirs * 3
    version = o._version
    assert o.nan_to_num_(neginf=-1.0) is o and o._version == version + 1
    t.nan_to_num_(neginf=-1.0)
    assert o.grad_fn.name() == t.grad_fn.name() == "NanToNumBackward0"
    o.sum().backward()
    t.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    _errors_alike(lambda m, x: x.requires_grad_().nan_to_num_(), SPECIAL)


@pytest.mark.parametrize("case", ["special", "with_nan", "matrix", "scalar_nan", "empty", "int",
                                  "int32", "bool"])
def test_nansum(case):
    a = ARRAYS[case]
    _both(lambda m, x: m.nansum(x), a, exact=False)
    if a.ndim:
        _both(lambda m, x: x.nansum(0), a, exact=False)
        _both(lambda m, x: m.nansum(x, -1, keepdim=True), a, exact=False)


@pytest.mark.parametrize("case", ["special", "with_nan", "matrix", "scalar_nan", "empty"])
def test_nanmean(case):
    a = ARRAYS[case]
    _both(lambda m, x: m.nanmean(x), a, exact=False)
    if a.ndim:
        _both(lambda m, x: x.nanmean(-1, keepdim=True), a, exact=False)
    _errors_alike(lambda m, x: m.nanmean(x), ARRAYS["int"])


def test_nan_reductions_gradients():
    a = ARRAYS["with_nan"]
    for fn in (lambda m, x: m.nansum(x * 1.5), lambda m, x: x.nansum(1),
               lambda m, x: m.nanmean(x, 0), lambda m, x: x.nanmean()):
        ours, theirs = _pair(a, requires_grad=True)
        o, t = fn(numgrad, ours), fn(torch, theirs)
        assert o.grad_fn.name() == t.grad_fn.name()
        _same(o, t, exact=False)
        o.sum().backward()
        t.sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    x = numgrad.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert gradgradcheck(lambda v: numgrad.nanmean(numgrad.where(v > 0, v * v, v.log()), 1), (x,))


# ------------------------------------------------------------------ median, nanmedian
@pytest.mark.parametrize("case", ["special", "with_nan", "matrix", "ties", "scalar",
                                  "scalar_nan", "int", "int32"])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_values(name, case):
    a = ARRAYS[case]
    for v in _views(a):
        _both(lambda m, x: getattr(m, name)(x), v)
        for d in range(-v.ndim, v.ndim) if v.ndim else (0, -1):
            # PyTorch's index of a tie is not specified: compare the values, and that the
            # index holds the value
            o = getattr(numgrad, name)(numgrad.tensor(v), d, keepdim=True)
            t = getattr(torch, name)(torch.tensor(v), d, keepdim=True)
            _same(o.values, t.values)
            assert o.indices.dtype is numgrad.int64 and tuple(o.indices.shape) == tuple(t.indices.shape)
            if v.ndim:
                picked = np.take_along_axis(v, o.indices.numpy(), d)
                np.testing.assert_array_equal(picked, o.values.numpy())
            o2 = getattr(numgrad.tensor(v), name)(dim=d)
            _same(o2[0], getattr(torch, name)(torch.tensor(v), d)[0])


def test_median_picks_the_first_nan_and_the_lower_middle():
    a = np.array([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 0.0, 1.0], [NAN, NAN, NAN, NAN]])
    _both(lambda m, x: m.median(x, 1), a)
    # (nanmedian's index in a slice of NaNs only is left to its selection algorithm)
    _both(lambda m, x: m.nanmedian(x[:2], 1), a)
    _both(lambda m, x: m.nanmedian(x, 1).values, a)
    _both(lambda m, x: m.median(x), np.array([4.0, 1.0, 3.0, 2.0]))
    assert "values=" in repr(numgrad.median(numgrad.tensor(a), 0))


def test_median_empty_and_errors():
    _both(lambda m, x: m.median(x), np.zeros(0))
    _both(lambda m, x: m.nanmedian(x), np.zeros(0))
    _errors_alike(lambda m, x: m.median(x, 0), np.zeros((0, 3)), error=IndexError)
    _errors_alike(lambda m, x: m.median(x, 2), np.zeros((2, 3)), error=IndexError)


def test_median_gradients():
    a = ARRAYS["ties"]
    for fn in (lambda m, x: m.median(x), lambda m, x: x.median(1).values,
               lambda m, x: m.median(x, 0, keepdim=True)[0], lambda m, x: m.nanmedian(x),
               lambda m, x: x.nanmedian(-1)[0]):
        ours, theirs = _pair(a, requires_grad=True)
        o, t = fn(numgrad, ours), fn(torch, theirs)
        assert o.grad_fn.name() == t.grad_fn.name()
        seed = RNG.standard_normal(tuple(t.shape))
        o.backward(numgrad.tensor(seed))
        t.backward(torch.tensor(seed))
        if t.ndim == 0:  # (ties share the gradient)
            np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
        else:  # the gradient is where the index points
            assert ours.grad.numpy().sum() == pytest.approx(theirs.grad.numpy().sum())
    x = numgrad.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    for fn in (lambda v: v.median(), lambda v: v.median(0)[0], lambda v: v.nanmedian(1)[0]):
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


@pytest.mark.parametrize("case", ["ties", "matrix", "int", "int32", "bool", "scalar", "special"])
def test_mode(case):
    a = ARRAYS[case]
    for v in _views(a):
        for d in range(-v.ndim, v.ndim) if v.ndim else (0, -1):
            o = numgrad.mode(numgrad.tensor(v), d)
            t = torch.mode(torch.tensor(v), d)
            _same(o.values, t.values)
            if not np.isnan(v).any() if v.dtype.kind == "f" else True:
                _same(o.indices, t.indices)  # (the last index of the value)
            _same(numgrad.tensor(v).mode(d, keepdim=True)[0], t.values if False else
                  torch.tensor(v).mode(d, keepdim=True)[0])
    _both(lambda m, x: tuple(m.mode(x)), np.array([[1.0, 2, 2, 1, 3], [5, 5, 4, 4, 4]]))


def test_mode_gradient_and_errors():
    a = np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [5.0, 5.0, 4.0, 4.0, 4.0]])
    ours, theirs = _pair(a, requires_grad=True)
    o, t = numgrad.mode(ours, 1), torch.mode(theirs, 1)
    assert o.values.grad_fn.name() == t.values.grad_fn.name() == "ModeBackward0"
    (o.values * numgrad.tensor([2.0, 3.0])).sum().backward()
    (t.values * torch.tensor([2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    x = numgrad.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda v: v.mode(0)[0], (x,)) and gradgradcheck(lambda v: v.mode(1)[0], (x,))
    _errors_alike(lambda m, x: m.mode(x), np.zeros(0), error=IndexError)
    _errors_alike(lambda m, x: m.median(x), np.array([True, False]))
    _errors_alike(lambda m, x: m.nanmedian(x, 0), np.array([True, False]))


# ------------------------------------------------------------------ var_mean, std_mean, aminmax
@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_var_std_mean(name):
    a = RNG.standard_normal((3, 4))
    calls = [lambda m, x: getattr(m, name)(x), lambda m, x: getattr(m, name)(x, 1),
             lambda m, x: getattr(m, name)(x.t(), 0, keepdim=True),
             lambda m, x: getattr(m, name)(x, (0, 1), correction=0),
             lambda m, x: getattr(m, name)(x, unbiased=False)]
    for fn in calls:
        ours, theirs = _pair(a, requires_grad=True)
        o, t = fn(numgrad, ours), fn(torch, theirs)
        _same(tuple(o), tuple(t), exact=False)
        assert [r.grad_fn.name() for r in o] == [r.grad_fn.name() for r in t]
        (o[0] * 2 + o[1]).sum().backward()
        (t[0] * 2 + t[1]).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)
    x = numgrad.tensor(a, requires_grad=True)
    assert gradgradcheck(lambda v: getattr(numgrad, name)(v, 1), (x,))


def test_var_mean_degrees_of_freedom_warns():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        numgrad.var_mean(numgrad.ones(1))


def test_aminmax():
    a = ARRAYS["ties"]
    for fn in (lambda m, x: m.aminmax(x), lambda m, x: x.aminmax(dim=1),
               lambda m, x: m.aminmax(x, dim=0, keepdim=True)):
        ours, theirs = _pair(a, requires_grad=True)
        o, t = fn(numgrad, ours), fn(torch, theirs)
        _same((o.min, o.max), (t.min, t.max))
        assert o[0].grad_fn.name() == "AminmaxBackward0" == type(t[0].grad_fn).__name__
        (o.min * 2 + o.max).sum().backward()
        (t.min * 2 + t.max).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    _both(lambda m, x: tuple(m.aminmax(x)), ARRAYS["int"])
    _both(lambda m, x: tuple(m.aminmax(x)), ARRAYS["special"])
    _errors_alike(lambda m, x: m.aminmax(x), np.zeros(0))


# ------------------------------------------------------------------ cross, dist, cdist
def test_cross():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    _both(lambda m, p, q: m.cross(p, q, dim=1), a, b, exact=False)
    _both(lambda m, p, q: p.t().cross(q.t(), dim=0), a, b, exact=False)
    _both(lambda m, p, q: m.cross(p, q, dim=-1), a, b[:1], exact=False)
    _both(lambda m, p, q: m.cross(p, q, dim=1), np.array([[1, 0, 0]]), np.array([[0, 1, 0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _both(lambda m, p, q: m.cross(p, q), a.T.copy(), b.T.copy(), exact=False)
        _errors_alike(lambda m, p, q: m.cross(p, q), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.warns(UserWarning, match="without specifying the dim"):
        numgrad.cross(numgrad.tensor(a), numgrad.tensor(b))
    x = numgrad.tensor(a, requires_grad=True)
    y = numgrad.tensor(b, requires_grad=True)
    assert numgrad.cross(x, y, dim=1).grad_fn.name() == "LinalgCrossBackward0"
    assert gradcheck(lambda p, q: numgrad.cross(p, q, dim=1), (x, y))
    assert gradgradcheck(lambda p, q: numgrad.cross(p, q, dim=1), (x, y))


@pytest.mark.parametrize("p", [2, 1, 3, 0, INF, 1.5])
def test_dist(p):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4,))
    ours, theirs = _pair(a, requires_grad=True)
    o2, t2 = _pair(b, requires_grad=True)
    o, t = numgrad.dist(ours, o2, p), torch.dist(theirs, t2, p)
    _same(o, t, exact=False)
    assert o.grad_fn.name() == t.grad_fn.name() == "DistBackward0"
    if p == 0:  # (PyTorch's backward refuses p=0: its gradient is not defined)
        return
    o.backward()
    t.backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(o2.grad.numpy(), t2.grad.numpy(), rtol=1e-10, atol=1e-12)
    if p != INF:
        assert gradcheck(lambda x, y: numgrad.dist(x, y, p), (ours, o2))


def test_dist_of_equal_tensors_and_errors():
    a = RNG.standard_normal(3)
    ours, theirs = _pair(a, requires_grad=True)
    numgrad.dist(ours, ours.detach()).backward()
    torch.dist(theirs, theirs.detach()).backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    _errors_alike(lambda m, x, y: m.dist(x, y), np.ones(2), np.ones(3))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, INF])
def test_cdist(p):
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4))
    b[1] = a[0, 1]  # a zero distance
    ours, theirs = _pair(a, requires_grad=True)
    o2, t2 = _pair(b, requires_grad=True)
    o, t = numgrad.cdist(ours, o2, p), torch.cdist(theirs, t2, p)
    _same(o, t, exact=False)
    assert o.grad_fn.name() == t.grad_fn.name() == "CdistBackward0"
    seed = RNG.standard_normal(tuple(t.shape))
    o.backward(numgrad.tensor(seed))
    t.backward(torch.tensor(seed))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(o2.grad.numpy(), t2.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shapes, mode", [
    (((30, 3), (4, 3)), "use_mm_for_euclid_dist_if_necessary"),
    (((2, 3, 2), (1, 26, 2)), "use_mm_for_euclid_dist_if_necessary"),
    (((3, 2), (4, 2)), "use_mm_for_euclid_dist"),
    (((3, 2), (40, 2)), "donot_use_mm_for_euclid_dist"),
])
def test_cdist_matrix_product_form(shapes, mode):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    ours, theirs = _pair(a, requires_grad=True)
    o2, t2 = _pair(b, requires_grad=True)
    o = numgrad.cdist(ours, o2, compute_mode=mode)
    t = torch.cdist(theirs, t2, compute_mode=mode)
    np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert o.grad_fn.name() == t.grad_fn.name()
    inner = [f.name() for f, _ in t.grad_fn.next_functions if f is not None]
    assert [f.name() for f, _ in o.grad_fn.next_functions if f is not None] == inner
    seed = RNG.standard_normal(tuple(t.shape))
    o.backward(numgrad.tensor(seed))
    t.backward(torch.tensor(seed))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(o2.grad.numpy(), t2.grad.numpy(), rtol=1e-10, atol=1e-12)
    x = numgrad.tensor(a[..., :3, :], requires_grad=True)
    y = numgrad.tensor(b[..., :2, :], requires_grad=True)
    assert gradgradcheck(lambda p, q: numgrad.cdist(p, q, compute_mode="use_mm_for_euclid_dist"),
                         (x, y))


def test_cdist_gradgrad_and_errors():
    x = numgrad.tensor(RNG.standard_normal((3, 2)), requires_grad=True)
    y = numgrad.tensor(RNG.standard_normal((2, 2)), requires_grad=True)
    assert gradgradcheck(lambda p, q: numgrad.cdist(p, q), (x, y))
    _errors_alike(lambda m, p, q: m.cdist(p, q), np.ones(3), np.ones((2, 3)))
    _errors_alike(lambda m, p, q: m.cdist(p, q), np.ones((2, 3)), np.ones((2, 4)))
    _errors_alike(lambda m, p, q: m.cdist(p, q, compute_mode="x"), np.ones((2, 3)),
                  np.ones((2, 3)), error=ValueError)


# ------------------------------------------------------------------ data-dependent shapes
@pytest.mark.parametrize("case", sorted(ARRAYS))
def test_nonzero_argwhere(case):
    for a in _views(ARRAYS[case]):
        _both(lambda m, x: m.nonzero(x), a)
        _both(lambda m, x: x.nonzero(as_tuple=True), a)
        _both(lambda m, x: m.argwhere(x), a)


def test_masked_select():
    a = RNG.standard_normal((3, 4))
    _both(lambda m, x: m.masked_select(x, x > 0), a)
    _both(lambda m, x: x.t().masked_select(x.t() < 0), a)
    _both(lambda m, x, y: m.masked_select(x, y > 0), a[:, :1], RNG.standard_normal((2, 3, 4)))
    _both(lambda m, x: m.masked_select(x, x > 9), a)
    _both(lambda m, x: m.masked_select(x, x > 0), np.array(1.5))
    _both(lambda m, x: m.masked_select(x, x > 0), ARRAYS["int"])
    _errors_alike(lambda m, x: m.masked_select(x, x), a)
    ours, theirs = _pair(a[:, :1], requires_grad=True)
    mask = RNG.standard_normal((2, 3, 4)) > 0
    o = numgrad.masked_select(ours, numgrad.tensor(mask))
    t = torch.masked_select(theirs, torch.tensor(mask))
    assert o.grad_fn.name() == t.grad_fn.name() == "MaskedSelectBackward0"
    seed = RNG.standard_normal(tuple(t.shape))
    o.backward(numgrad.tensor(seed))
    t.backward(torch.tensor(seed))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    x = numgrad.tensor(a, requires_grad=True)
    assert gradgradcheck(lambda v: numgrad.masked_select(v * v, numgrad.tensor(a > 0)), (x,))


UNIQUE = {
    "int": np.array([[3, 1, 3], [2, 1, 0]]),
    "float": np.array([2.0, -0.0, 0.0, 1.5, 2.0, INF, -INF, 1.5]),
    "one": np.array([7]),
    "scalar": np.array(4.0),
    "empty": np.zeros((2, 0)),
    "bool": np.array([True, False, True]),
}


@pytest.mark.parametrize("case", sorted(UNIQUE))
def test_unique(case):
    a = UNIQUE[case]
    for inverse in (False, True):
        for counts in (False, True):
            _both(lambda m, x: m.unique(x, return_inverse=inverse, return_counts=counts), a)
            _both(lambda m, x: m.unique_consecutive(x, return_inverse=inverse,
                                                   return_counts=counts), a)
    _both(lambda m, x: x.unique(sorted=False).sort()[0], a)


def test_unique_nan_and_views():
    _both(lambda m, x: m.unique(x, return_counts=True), np.array([NAN, 1.0, NAN]))
    a = UNIQUE["int"].T
    _both(lambda m, x: m.unique(x, return_inverse=True), a)
    _both(lambda m, x: m.unique_consecutive(x, return_counts=True), np.array([1, 1, 2, 2, 3, 1]))


UNIQUE_DIM = [np.array([[1, 2], [3, 4], [1, 2], [0, 9]]),
              np.random.default_rng(3).integers(0, 2, (5, 3, 2)),
              np.random.default_rng(4).integers(0, 2, (4, 6)).astype(np.float64),
              np.array([[True, False], [True, False]]), np.zeros((0, 3)), np.zeros((3, 0))]


@pytest.mark.parametrize("index", range(len(UNIQUE_DIM)))
def test_unique_dim(index):
    a = UNIQUE_DIM[index]
    for d in range(-a.ndim, a.ndim):
        for inverse in (False, True):
            for counts in (False, True):
                for name in ("unique", "unique_consecutive"):
                    def fn(m, x):
                        return getattr(m, name)(x, dim=d, return_inverse=inverse,
                                                return_counts=counts)
                    try:
                        fn(torch, torch.tensor(a))
                    except RuntimeError:
                        _errors_alike(fn, a)
                        continue
                    _both(fn, a)
    _errors_alike(lambda m, x: m.unique(x, dim=0), np.array(3.0), error=IndexError)
    _errors_alike(lambda m, x: m.unique(x, dim=2), np.ones((2, 2)), error=IndexError)


def test_compiled_data_dependent_ops_rerun_their_python():
    def step(x):
        y = numgrad.masked_select(x, x > 0)
        return (y * 2).sum() + numgrad.unique(x).sum() + numgrad.nonzero(x > 0).sum()

    compiled = numgrad.compile(step)
    for _ in range(4):  # (results of other shapes: those calls leave the trace, eagerly)
        x = numgrad.tensor(RNG.standard_normal((3, 4)))
        np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy())
    assert "key 0: re-run" in numgrad.compiler.explain(compiled)


def test_compiled_predicates_and_reductions_replay():
    def step(x):
        return (numgrad.nan_to_num(x.log()).sum() + numgrad.nansum(x.log())
                + numgrad.median(x, 1).values.sum() + numgrad.isfinite(x.log()).sum()
                + numgrad.any(x > 1).to(numgrad.float64))

    compiled = numgrad.compile(step)
    for _ in range(3):
        x = numgrad.tensor(RNG.standard_normal((3, 4)))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy())


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(axis=1),
    lambda m, x: m.mean(x, axis=0, keepdims=True),
    lambda m, x: x.std(axis=(0, 1), keepdims=True),
    lambda m, x: m.var(x, axis=1),
    lambda m, x: m.max(x, axis=1).values,
    lambda m, x: (x > 0).all(axis=0),
    lambda m, x: (x > 0).any(axis=1, keepdims=True),
    lambda m, x: m.std_mean(x, axis=1)[1],
    lambda m, x: m.amax(x, axis=-1),
    lambda m, x: m.softmax(x, axis=1),
    lambda m, x: m.cat([x, x], axis=0),
])
def test_numpy_names_axis_and_keepdims_as_pytorch(call):
    """PyTorch's argument parser takes NumPy's ``axis`` and ``keepdims`` for ``dim`` and
    ``keepdim`` (issue 35)."""
    x = np.random.default_rng(35).standard_normal((3, 4))
    ours, theirs = call(numgrad, numgrad.tensor(x)), call(torch, torch.tensor(x))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(TypeError):
        numgrad.tensor(x).sum(axis=0, dim=1)


def test_numpy_names_still_work_once_a_tensor_like_has_been_met():
    """``axis=``/``keepdims=`` are retried as ``dim=``/``keepdim=`` on the path taken once a
    ``__torch_function__`` class has been met in the process, too (they failed there when an
    earlier test had passed one)."""
    class Like:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "like"

    assert numgrad.add(Like(), 1) == "like"
    x = np.random.default_rng(35).standard_normal((3, 4))
    ours = numgrad.mean(numgrad.tensor(x), axis=0, keepdims=True)
    np.testing.assert_allclose(ours.numpy(), torch.tensor(x).mean(axis=0, keepdims=True).numpy())
    assert numgrad.tensor(x).sum(axis=1).shape == (3,)
    with pytest.raises(TypeError):
        numgrad.tensor(x).sum(axis=0, dim=1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_sum_over_every_dim_but_one_middle_one_matches_torch(dtype):
    # (N, C, H, W) summed over (0, 2, 3), a bias's gradient: read in place, channels shared
    # among the worker threads above PARALLEL_THRESHOLD elements (the second shape)
    from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

    rng = np.random.default_rng(7)
    for shape, dims, keepdim in (((3, 4, 2, 5), (0, 2, 3), False), ((2, 5, 3), (0, 2), True),
                                 ((8, 16, 64, PARALLEL_THRESHOLD // 4096), (0, 2, 3), False)):
        data = rng.standard_normal(shape) * 4
        if dtype.startswith("complex"):
            data = data + 1j * rng.standard_normal(shape)
        data = data.astype(dtype)
        data.reshape(-1)[:2] = (np.inf, np.nan) if dtype.startswith("float") else data.reshape(-1)[:2]
        ours = numgrad.tensor(data).sum(dims, keepdim=keepdim)
        theirs = torch.tensor(data).sum(dims, keepdim=keepdim)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-4)
    # a non-contiguous input takes the general path: the same sums
    x = numgrad.tensor(rng.standard_normal((4, 3, 5)).astype(dtype)).transpose(0, 2)
    np.testing.assert_allclose(x.sum((0, 2)).numpy(),
                               torch.tensor(x.numpy()).sum((0, 2)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "int32", "bool"])
@pytest.mark.parametrize("dim", [0, 1, 2, (0, 2), (0, 1)])
def test_sum_over_any_dims_of_each_kind(dtype, dim):
    """A sum over a leading or middle dimension (``_sum_3d``'s and ``_sum_middle``'s
    accumulators) of complex64, among others: its accumulator was float64 (an ``isinstance``
    test did not know complex64 as complex), and the sum raised Numba's typing error."""
    a = (np.arange(4 * 3 * 5).reshape(4, 3, 5) % 7 - 3).astype(dtype)
    if a.dtype.kind == "c":
        a = a + 1j * a[::-1]
    ours = numgrad.tensor(a).sum(dim)
    theirs = torch.tensor(a).sum(dim)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
