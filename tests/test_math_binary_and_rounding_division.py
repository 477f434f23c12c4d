"""atan2, logaddexp(2), erf(c), clamp with tensor bounds, div with rounding_mode and floor_divide
against PyTorch: special values, integers near their limits, dtypes, gradients, node names and
errors. (The registry samples of these ops, in ops/trigonometric.py, exponents_and_rounding.py,
special_functions.py, ternary.py and division.py, are gradchecked by tests/test_ops.py.)"""
import math

import numpy as np
import pytest
import torch

import numgrad

SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -7.25, 1e-30,
           -1e-30, 1e30, -1e30, 100.0, -100.0]


def _pairs(dtype):
    a, b = np.meshgrid(np.array(SPECIAL, dtype), np.array(SPECIAL, dtype))
    return a.ravel(), b.ravel()


def _same(ours, theirs, ulps=4):
    """Equal as floats (NaN with NaN, zeros with their sign), or within a few ulps."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype
    both_nan = np.isnan(ours) & np.isnan(theirs)
    exact = (ours == theirs) & (np.signbit(ours) == np.signbit(theirs))
    with np.errstate(invalid="ignore"):
        close = np.isfinite(theirs) & (np.abs(ours - theirs) <= ulps * np.spacing(np.abs(theirs)))
    return both_nan | exact | (close & (theirs != 0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["atan2", "logaddexp", "logaddexp2"])
def test_binary_special_values_match_pytorch(name, dtype):
    a, b = _pairs(dtype)
    ours = getattr(numgrad, name)(numgrad.tensor(a), numgrad.tensor(b)).numpy()
    theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
    wrong = ~_same(ours, theirs)
    if name == "logaddexp2":
        # PyTorch's vectorised loop adds ``max`` with a fused multiply-add, so where a == b its
        # result is off 1 by the rounding of ln 2 * (1 / ln 2) (-1.06e-8 for -1 and -1 in
        # float32, where one rounding gives 0): compared within a few ulps of 1 there.
        with np.errstate(invalid="ignore"):
            wrong &= ~(np.abs(ours - theirs) <= 4 * np.spacing(np.maximum(abs(a), 1)))
    assert not wrong.any(), list(zip(a[wrong], b[wrong], ours[wrong], theirs[wrong]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erf_and_erfc_special_values_match_pytorch(dtype):
    x = np.array(SPECIAL + [5.9, -5.9, 27.0, 0.1, 1e-300 if dtype == "float64" else 1e-38], dtype)
    for name in ("erf", "erfc"):
        ours = getattr(numgrad, name)(numgrad.tensor(x)).numpy()
        theirs = getattr(torch, name)(torch.tensor(x)).numpy()
        assert _same(ours, theirs).all(), name


def test_integers_give_the_default_float_and_logaddexp_refuses_them():
    i, j = [3, -4, 0], [1, 2, 5]
    for name in ("atan2", "arctan2"):
        ours = getattr(numgrad, name)(numgrad.tensor(i), numgrad.tensor(j))
        theirs = getattr(torch, name)(torch.tensor(i), torch.tensor(j))
        assert ours.dtype.name == "float32" and str(theirs.dtype) == "torch.float32"
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    assert numgrad.erf(numgrad.tensor([1, 2])).dtype is numgrad.float32
    np.testing.assert_allclose(numgrad.tensor([1, 2]).erfc().numpy(),
                               torch.tensor([1, 2]).erfc().numpy(), rtol=1e-6)
    for name in ("logaddexp", "logaddexp2"):
        with pytest.raises(NotImplementedError) as theirs:
            getattr(torch, name)(torch.tensor(i), torch.tensor(j))
        with pytest.raises(NotImplementedError) as ours:
            getattr(numgrad, name)(numgrad.tensor(i), numgrad.tensor(j))
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["atan2", "logaddexp"])
def test_a_number_operand_is_refused_as_pytorch(name):
    with pytest.raises(TypeError) as theirs:
        getattr(torch, name)(torch.tensor([1.0]), 2)
    with pytest.raises(TypeError) as ours:
        getattr(numgrad, name)(numgrad.tensor([1.0]), 2)
    assert str(ours.value) == str(theirs.value)


def _grads(fn, *values, seed=None):
    """fn's output, its node name and the inputs' gradients, on numgrad and on PyTorch."""
    out = []
    for m in (numgrad, torch):
        xs = [m.tensor(v, dtype=m.float64, requires_grad=True) for v in values]
        y = fn(m, *xs)
        g = m.ones_like(y) if seed is None else m.tensor(seed, dtype=m.float64)
        y.backward(g)
        out.append((y.detach().numpy(), y.grad_fn.name(),
                    [None if x.grad is None else x.grad.numpy() for x in xs]))
    return out


def _check_grads(fn, *values, seed=None):
    (yo, no, go), (yt, nt, gt) = _grads(fn, *values, seed=seed)
    assert no == nt
    np.testing.assert_allclose(yo, yt, rtol=1e-12, atol=1e-300)
    for a, b in zip(go, gt):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)


def test_gradients_and_nodes_of_atan2_logaddexp_erf():
    a, b = [0.5, -1.0, 0.0, 3.0], [[2.0], [-0.25]]
    _check_grads(lambda m, x, y: m.atan2(x, y), a, b)
    _check_grads(lambda m, x, y: x.logaddexp(y), a, b)
    _check_grads(lambda m, x, y: m.logaddexp2(x, y), a, b)
    _check_grads(lambda m, x: m.erf(x) * m.erfc(x), a)


# ------------------------------------------------------------------ clamp with tensor bounds
def test_clamp_with_tensor_bounds_broadcasts_and_takes_pytorchs_gradient_at_the_bounds():
    x = [[-1.0, 0.0, 0.5, 1.0, 2.0, 0.25], [0.5, 0.7, 1.0, -2.0, 0.5, 0.0]]
    lo = [[0.0], [0.5]]
    hi = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]  # (the last column: max < min)
    _check_grads(lambda m, a, l, h: m.clamp(a, l, h), x, lo, hi)
    _check_grads(lambda m, a, l: a.clamp(min=l), x, lo)
    _check_grads(lambda m, a, h: m.clip(a, max=h), x, hi)
    _check_grads(lambda m, a, l, h: a.clip(l, h), [0.5, 0.5, 0.5], [0.5, 0.7, 0.6], [0.5, 0.6, 0.5])


def test_clamp_with_tensor_bounds_nan_and_dtypes():
    x = [math.nan, 1.0, 2.0, -3.0]
    lo = [0.0, math.nan, 0.0, 0.0]
    hi = [1.0, 1.0, math.nan, 1.0]
    ours = numgrad.clamp(numgrad.tensor(x), numgrad.tensor(lo), numgrad.tensor(hi)).numpy()
    theirs = torch.clamp(torch.tensor(x), torch.tensor(lo), torch.tensor(hi)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    for a, b in (([1, 5], [2.0, 2.0]), ([1, 5], [2, 3])):
        o = numgrad.clamp(numgrad.tensor(a), numgrad.tensor(b))
        t = torch.clamp(torch.tensor(a), torch.tensor(b))
        assert o.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    with pytest.raises(TypeError) as theirs:
        torch.clamp(torch.ones(3), 0.1, torch.ones(3))
    with pytest.raises(TypeError) as ours:
        numgrad.clamp(numgrad.ones(3), 0.1, numgrad.ones(3))
    assert str(ours.value) == str(theirs.value)
    o = numgrad.clamp(numgrad.ones(3, requires_grad=True), numgrad.ones(3))
    assert o.grad_fn.name() == torch.clamp(torch.ones(3, requires_grad=True),
                                           torch.ones(3)).grad_fn.name() == "ClampBackward0"


# ------------------------------------------------------------------ div with rounding_mode
DIVIDENDS = [-0.0, 0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 5.0, -5.0, 7.3, -7.3, 1e300,
             0.5, -1e-300, 6.0, -6.0]
DIVISORS = [3.0, -3.0, 0.0, -0.0, 2.0, 1.0, math.inf, -math.inf, 2.0, 2.0, 3.0, -0.25, 1.0, 1e-300,
            -3.0, 0.1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounding_division_of_floats_matches_pytorch_bit_for_bit(mode, dtype):
    with np.errstate(over="ignore", under="ignore"):
        a, b = np.array(DIVIDENDS, dtype), np.array(DIVISORS, dtype)
    a2, b2 = np.meshgrid(a, b)
    for x, y in ((a, b), (a2.ravel(), b2.ravel())):
        ours = numgrad.div(numgrad.tensor(x), numgrad.tensor(y), rounding_mode=mode).numpy()
        theirs = torch.div(torch.tensor(x), torch.tensor(y), rounding_mode=mode).numpy()
        assert _same(ours, theirs, ulps=0).all()
    if mode == "floor":  # // and floor_divide are div(rounding_mode='floor')
        ours = (numgrad.tensor(a) // numgrad.tensor(b)).numpy()
        assert _same(ours, torch.floor_divide(torch.tensor(a), torch.tensor(b)).numpy(), 0).all()


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounding_division_of_integers_is_exact_near_the_limits(mode, dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, 1, -1, info.max, info.max, info.min, info.min, info.min + 1,
                  info.max - 1, 2**31 - 1, -(2**31) + 1, 6], dtype)
    b = np.array([2, 2, -2, -2, 3, -5, 5, 7, -1, 2, 3, -3, info.max, -2, 1, -3], dtype)
    ours = numgrad.div(numgrad.tensor(a), numgrad.tensor(b), rounding_mode=mode)
    theirs = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
    assert ours.dtype.name == dtype
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    scalar = numgrad.div(numgrad.tensor(a), -3, rounding_mode=mode)
    np.testing.assert_array_equal(scalar.numpy(),
                                  torch.div(torch.tensor(a), -3, rounding_mode=mode).numpy())
    # (PyTorch's CPU traps on min // -1, a SIGFPE; numgrad wraps, as two's complement does)
    wrapped = numgrad.div(numgrad.tensor([info.min], dtype=getattr(numgrad, dtype)), -1,
                          rounding_mode=mode)
    assert wrapped.tolist() == [info.min]


def test_rounding_division_result_dtypes_match_pytorch():
    cases = [
        lambda m: m.div(m.tensor([7, -8]), 2, rounding_mode="trunc"),
        lambda m: m.div(m.tensor([7, -8]), 2.5, rounding_mode="floor"),
        lambda m: m.div(m.tensor([7, -8], dtype=m.int32), 2, rounding_mode="floor"),
        lambda m: m.div(m.tensor([7, -8], dtype=m.int32), m.tensor([2, 3]), rounding_mode="floor"),
        lambda m: m.tensor([7, 8]) // 2,
        lambda m: m.tensor([7, 8]) // 2.0,
        lambda m: 7 // m.tensor([2, -3]),
        lambda m: 7.5 // m.tensor([2, -3]),
        lambda m: m.tensor([7.0, 8.0]) // m.tensor([2, 3]),
        lambda m: m.tensor([7.0, -8.0], dtype=m.float64).floor_divide(m.tensor(3.0)),
        lambda m: m.floor_divide(m.tensor(-7), m.tensor(2)),
    ]
    for case in cases:
        o, t = case(numgrad), case(torch)
        assert o.dtype.name == str(t.dtype).split(".")[1]
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def _same_error(fn, kind=RuntimeError):
    with pytest.raises(kind) as theirs:
        fn(torch)
    with pytest.raises(kind) as ours:
        fn(numgrad)
    assert str(ours.value) == str(theirs.value)


def test_rounding_division_errors_match_pytorch():
    _same_error(lambda m: m.div(m.tensor([1, 2]), m.tensor([1, 0]), rounding_mode="floor"))
    _same_error(lambda m: m.div(m.tensor([1, 2]), 0, rounding_mode="trunc"))
    _same_error(lambda m: m.tensor([1, 2]) // m.tensor([0, 1]))
    _same_error(lambda m: m.div(m.tensor([1.0]), 2, rounding_mode="round"))
    _same_error(lambda m: m.div(m.tensor([True]), m.tensor([True]), rounding_mode="floor"),
                NotImplementedError)
    _same_error(lambda m: m.div(m.tensor([True]), m.tensor([True]), rounding_mode="trunc"),
                NotImplementedError)
    # a float division by zero is no error: inf, -inf or NaN, as a / b
    ours = numgrad.div(numgrad.tensor([1.0, -1.0, 0.0]), 0.0, rounding_mode="floor")
    theirs = torch.div(torch.tensor([1.0, -1.0, 0.0]), 0.0, rounding_mode="floor")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_rounding_division_gradient_is_zero_and_floor_divide_has_none():
    # PyTorch's zeros, whatever the incoming gradient (inf included): not grad * 0
    _check_grads(lambda m, a, b: m.div(a, b, rounding_mode="floor"), [1.0, 2.0, -3.0],
                 [2.0, 0.0, 1.0], seed=[math.inf, 1.0, math.nan])
    _check_grads(lambda m, a: a.div(2.0, rounding_mode="trunc"), [1.0, -2.5], seed=[1.0, 1.0])
    for m in (numgrad, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x // 2
        assert y.requires_grad and y.grad_fn.name() == "torch::autograd::NotImplemented"
        assert type(m.floor_divide(x, 2).grad_fn).__name__ == "NotImplemented"
    _same_error(lambda m: (m.tensor([1.0, 2.0], requires_grad=True) // 2).sum().backward())


@pytest.mark.parametrize("case", [
    lambda m: m.addcmul(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64),
                        m.full((3,), 4, dtype=m.int64), value=2),
    lambda m: m.addcmul(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64),
                        m.ones(3, dtype=m.int64), value=0.5),  # (the value made an integer)
    lambda m: m.addcmul(m.ones(3, dtype=m.int64), m.tensor([1.5, 2, 3]), m.ones(3)),
    lambda m: m.addcmul(m.ones(3), m.ones(3, dtype=m.float64), m.ones(3), value=3),
    lambda m: m.addcdiv(m.zeros(2, 1), m.tensor([1.0, 2.0]), m.tensor([[4.0], [8.0]])),
    lambda m: m.addcdiv(m.ones(3, dtype=m.int64), m.tensor([1.0, 2, 3]),
                        m.full((3,), 2, dtype=m.int64), value=3),
    lambda m: m.tensor(1.0).addcmul(m.tensor([2.0]), m.tensor(3.0)),
])
def test_addcmul_addcdiv_dtypes_and_values_match_pytorch(case):
    o, t = case(numgrad), case(torch)
    assert o.dtype.name == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(o.numpy(), t.numpy())


def test_addcmul_addcdiv_in_place_and_errors_match_pytorch():
    def step(m):  # (Adam's second moment, then its update)
        v = m.tensor([1.0, 2.0])
        g = m.tensor([3.0, -1.0])
        assert v.mul_(0.9).addcmul_(g, g, value=0.1) is v
        return v.addcdiv_(g, m.tensor([2.0, 4.0]), value=-1)

    np.testing.assert_allclose(step(numgrad).numpy(), step(torch).numpy(), rtol=1e-6)
    np.testing.assert_allclose(step(numgrad).numpy(), [0.3, 2.15], rtol=1e-6)
    _same_error(lambda m: m.addcdiv(m.ones(2), m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64)))
    _same_error(lambda m: m.ones(3).addcmul_(m.ones(2, 3), m.ones(3)))
    _same_error(lambda m: m.addcmul(m.ones(3), m.ones(2), m.ones(3)))
    for m in (numgrad, torch):
        x = m.ones(2, requires_grad=True)
        assert type(m.addcmul(x, x, x).grad_fn).__name__ == "AddcmulBackward0"
        y = x * 1
        assert type(y.addcdiv_(x, x).grad_fn).__name__ == "AddcdivBackward0"
