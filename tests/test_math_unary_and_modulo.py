"""Elementwise math (ops/trigonometric.py, exponents_and_rounding.py, division.py,
special_functions.py, ternary.py) against PyTorch: asin acos atan
sinh cosh asinh acosh atanh (and the arc* aliases), log2 log10 exp2 trunc/fix frac sinc deg2rad
rad2deg square, fmod and remainder (``%``) with integer and float semantics, hypot, xlogy and lerp:
special values (±0 with their signs, ±inf, NaN), integer and bool inputs, node names, gradients,
second derivatives, in-place forms and errors; then the in-place rounding divisions (``div_`` with
``rounding_mode``, ``//=``, ``%=``) and ``clamp`` with a 0-d tensor bound beside a number. (The
registry samples are gradchecked by tests/test_ops.py.)"""
import math

import numpy as np
import pytest
import torch

import numgrad

SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, 3.0, -7.25,
           1e-30, -1e-30, 1e30, 100.0, -100.0, 0.999, 1.5, 20.0]
UNARY = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10",
         "exp2", "trunc", "frac", "sinc", "deg2rad", "rad2deg"]
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh", "fix": "trunc"}


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
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values_match_pytorch(name, dtype):
    x = np.array(SPECIAL, dtype)
    ours = getattr(numgrad, name)(numgrad.tensor(x)).numpy()
    theirs = getattr(torch, name)(torch.tensor(x)).numpy()
    wrong = ~_same(ours, theirs)
    assert not wrong.any(), list(zip(x[wrong], ours[wrong], theirs[wrong]))


def test_exact_at_powers_of_two_and_whole_exponents():
    x = np.array([2.0 ** k for k in range(-1074, 1024, 37)] + [8.0, 1024.0, 0.25])
    assert (numgrad.log2(numgrad.tensor(x)).numpy() == torch.log2(torch.tensor(x)).numpy()).all()
    k = np.arange(-160, 140, dtype=np.float32)
    assert (numgrad.exp2(numgrad.tensor(k)).numpy() == torch.exp2(torch.tensor(k)).numpy()).all()
    big = np.array([1023.5, 1024.0, -1074.0, -1075.5, -2000.0, 2000.0])
    assert _same(numgrad.exp2(numgrad.tensor(big)).numpy(), torch.exp2(torch.tensor(big)).numpy(),
                 ulps=2).all()


def test_aliases_methods_and_node_names():
    x = np.array([[0.3, -0.6], [0.1, 0.8]])
    for name in UNARY + list(ALIASES):
        arg = x + 1.5 if ALIASES.get(name, name) == "acosh" else x
        a = numgrad.tensor(arg, requires_grad=True)
        b = torch.tensor(arg, requires_grad=True)
        for ours, theirs in ((getattr(numgrad, name)(a), getattr(torch, name)(b)),
                             (getattr(a, name)(), getattr(b, name)())):
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
            assert ours.grad_fn.name() == theirs.grad_fn.name()
    a, b = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    assert numgrad.square(a).grad_fn.name() == torch.square(b).grad_fn.name() == "PowBackward0"


@pytest.mark.parametrize("name", UNARY + ["square"])
def test_integer_and_bool_inputs(name):
    for values, dtype in (([1, -2, 0, 3], "int64"), ([1, 0, 3], "int32"), ([True, False], "bool")):
        a = numgrad.tensor(np.array(values, dtype))
        b = torch.tensor(np.array(values, dtype))
        try:
            expected = getattr(torch, name)(b)
        except (RuntimeError, NotImplementedError) as error:
            with pytest.raises(type(error)) as ours:
                getattr(numgrad, name)(a)
            assert str(ours.value) == str(error)
            continue
        got = getattr(numgrad, name)(a)
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", UNARY)
def test_gradients_match_pytorch(name):
    rng = np.random.default_rng(0)
    x = rng.uniform(-0.9, 0.9, (3, 4)) + (2.0 if name == "acosh" else 0.0)
    if name == "sinc":
        x[0, 0] = 0.0  # (its gradient at 0 is 0)
    a, b = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    g = rng.standard_normal((3, 4))
    getattr(numgrad, name)(a).backward(numgrad.tensor(g))
    getattr(torch, name)(b).backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-14)
    if name not in ("trunc", "frac"):
        t = numgrad.tensor(x[1:], requires_grad=True)
        assert numgrad.autograd.gradgradcheck(getattr(numgrad, name), (t,))


def test_in_place_forms():
    x = np.array([0.25, -0.5, 0.75])
    for name in ("asin", "sinh", "log2", "exp2", "trunc", "frac", "deg2rad", "square", "arctan"):
        a = numgrad.tensor(x, requires_grad=True) * 1
        b = torch.tensor(x, requires_grad=True) * 1
        assert getattr(a, name + "_")() is a
        getattr(b, name + "_")()
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
        assert a.grad_fn.name() == b.grad_fn.name()
        a.sum().backward()
    # integer tensors cannot hold the float results
    for ours, theirs in ((numgrad.tensor([1, 2]), torch.tensor([1, 2])),):
        with pytest.raises(RuntimeError) as expected:
            theirs.sinh_()
        with pytest.raises(RuntimeError, match=str(expected.value)):
            ours.sinh_()


def test_non_contiguous_empty_and_zero_dim():
    x = np.linspace(-0.9, 0.9, 12).reshape(3, 4)
    for name in ("atanh", "exp2", "trunc", "sinc"):
        f, g = getattr(numgrad, name), getattr(torch, name)
        np.testing.assert_allclose(f(numgrad.tensor(x).t()).numpy(), g(torch.tensor(x).t()).numpy())
        assert f(numgrad.zeros(0, 3)).shape == (0, 3)
        np.testing.assert_allclose(f(numgrad.tensor(0.5)).numpy(), g(torch.tensor(0.5)).numpy())


# ------------------------------------------------------------------ fmod, remainder
MOD_A = [7.5, -7.5, 0.0, -0.0, 3.0, -3.0, 1e30, math.inf, -math.inf, math.nan, 5.25]
MOD_B = [2.0, -2.0, 0.0, -0.0, 3.0, 0.5, math.inf, -math.inf, math.nan, 1e-30]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_float_modulo_matches_pytorch(name, dtype):
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(MOD_A, MOD_B))
    ours = getattr(numgrad, name)(numgrad.tensor(a), numgrad.tensor(b)).numpy()
    theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
    wrong = ~_same(ours, theirs, ulps=0)
    assert not wrong.any(), list(zip(a[wrong], b[wrong], ours[wrong], theirs[wrong]))
    by_number = getattr(numgrad, name)(numgrad.tensor(a), -1.5).numpy()
    assert _same(by_number, getattr(torch, name)(torch.tensor(a), -1.5).numpy(), ulps=0).all()


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_modulo_matches_pytorch(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, info.max, info.min, info.min, 6, -6], dtype)
    b = np.array([3, 3, -3, -3, 5, 7, -1, 7, 3, -3], dtype)
    for name in ("fmod", "remainder"):
        ours = getattr(numgrad, name)(numgrad.tensor(a), numgrad.tensor(b))
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        assert ours.dtype.name == dtype
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal((numgrad.tensor(a) % 4).numpy(), (torch.tensor(a) % 4).numpy())
    np.testing.assert_array_equal((9 % numgrad.tensor(b)).numpy(), (9 % torch.tensor(b)).numpy())
    got, expected = numgrad.tensor(a) % 2.5, torch.tensor(a) % 2.5
    assert got.dtype.name == "float32"
    np.testing.assert_allclose(got.numpy(), expected.numpy())


def _same_error(ours, theirs):
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


def test_modulo_errors():
    i = np.array([3, 4])
    z = np.array([1, 0])
    for name in ("fmod", "remainder"):
        _same_error(lambda: getattr(numgrad, name)(numgrad.tensor(i), numgrad.tensor(z)),
                    lambda: getattr(torch, name)(torch.tensor(i), torch.tensor(z)))
        _same_error(lambda: getattr(numgrad, name)(numgrad.tensor(i), 0),
                    lambda: getattr(torch, name)(torch.tensor(i), 0))
        _same_error(lambda: getattr(numgrad, name)(numgrad.tensor([True]), numgrad.tensor([True])),
                    lambda: getattr(torch, name)(torch.tensor([True]), torch.tensor([True])))
    _same_error(lambda: 3 % numgrad.tensor(z), lambda: 3 % torch.tensor(z))
    _same_error(lambda: numgrad.fmod(2, numgrad.tensor([3.0])),
                lambda: torch.fmod(2, torch.tensor([3.0])))


def test_modulo_gradients_and_nodes():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-3, 3, (3, 4)), rng.uniform(0.5, 2, (4,))
    for ours_fn, theirs_fn in ((lambda a, b: numgrad.fmod(a, b), lambda a, b: torch.fmod(a, b)),
                               (lambda a, b: a % b, lambda a, b: a % b),
                               (lambda a, b: a % 1.5 * b, lambda a, b: a % 1.5 * b),
                               (lambda a, b: a.fmod(-1.5) * b, lambda a, b: a.fmod(-1.5) * b)):
        a, b = numgrad.tensor(x, requires_grad=True), numgrad.tensor(y, requires_grad=True)
        c, d = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        ours, theirs = ours_fn(a, b), theirs_fn(c, d)
        assert ours.grad_fn.name() == theirs.grad_fn.name()
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy())
        np.testing.assert_allclose(b.grad.numpy(), d.grad.numpy())
    t = numgrad.tensor([0.5, 1.5], requires_grad=True)
    out = 2.5 % t
    assert out.grad_fn.name() == (2.5 % torch.tensor([0.5], requires_grad=True)).grad_fn.name()
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        out.sum().backward()


# ------------------------------------------------------------------ hypot, xlogy, lerp
def test_hypot_and_xlogy_special_values():
    a, b = (v.ravel() for v in np.meshgrid(np.array(SPECIAL), np.array(SPECIAL)))
    for name in ("hypot", "xlogy"):
        ours = getattr(numgrad, name)(numgrad.tensor(a), numgrad.tensor(b)).numpy()
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        wrong = ~_same(ours, theirs)
        assert not wrong.any(), (name, list(zip(a[wrong], b[wrong], ours[wrong], theirs[wrong])))
    ints = numgrad.xlogy(numgrad.tensor([0, 2]), numgrad.tensor([0, 3]))
    assert ints.dtype.name == "float32"
    np.testing.assert_allclose(ints.numpy(), torch.xlogy(torch.tensor([0, 2]),
                                                         torch.tensor([0, 3])).numpy())
    np.testing.assert_allclose(numgrad.xlogy(2.0, numgrad.tensor([3.0])).numpy(),
                               torch.xlogy(2.0, torch.tensor([3.0])).numpy())
    _same_error(lambda: numgrad.hypot(numgrad.tensor([1]), numgrad.tensor([2])),
                lambda: torch.hypot(torch.tensor([1]), torch.tensor([2])))
    _same_error(lambda: numgrad.hypot(numgrad.tensor([1.0]), 2.0),
                lambda: torch.hypot(torch.tensor([1.0]), 2.0))


def test_hypot_xlogy_lerp_gradients_and_nodes():
    rng = np.random.default_rng(2)
    x, y, w = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4)), rng.uniform(-0.5, 1.5, (4,))
    cases = ((lambda m, a, b, c: m.hypot(a, b)), (lambda m, a, b, c: m.xlogy(a, b)),
             (lambda m, a, b, c: m.xlogy(a, 2.0) + m.xlogy(3.0, b)),
             (lambda m, a, b, c: m.lerp(a, b, 0.25) + a.lerp(b, 0.8)),
             (lambda m, a, b, c: m.lerp(a, b, c)))
    for fn in cases:
        ours_in = [numgrad.tensor(v, requires_grad=True) for v in (x, y, w)]
        theirs_in = [torch.tensor(v, requires_grad=True) for v in (x, y, w)]
        ours, theirs = fn(numgrad, *ours_in), fn(torch, *theirs_in)
        assert ours.grad_fn.name() == theirs.grad_fn.name()
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
        ours.sum().backward()
        theirs.sum().backward()
        for o, t in zip(ours_in, theirs_in):
            assert (o.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12)
        small = [numgrad.tensor(v[:2, :2] if v.ndim == 2 else v[:2], requires_grad=True)
                 for v in (x, y, w)]
        assert numgrad.autograd.gradgradcheck(lambda *t: fn(numgrad, *t), small)


def test_lerp_values_and_errors():
    a, b = np.array([1.0, -2.0, 1e30, 3.0]), np.array([5.0, 4.0, -1e30, 3.0])
    # (PyTorch's vectorised loop rounds ``a + w (b - a)`` once, with a fused multiply-add; the
    # formula here rounds the product too: equal within an ulp or two of the operands, exact at
    # the ends)
    scale = 2 * np.spacing(np.maximum(abs(a), abs(b)))
    for w in (0.0, 0.3, 0.5, 0.75, 1.0, 2.0, -1.0):
        ours = numgrad.lerp(numgrad.tensor(a), numgrad.tensor(b), w).numpy()
        assert (abs(ours - torch.lerp(torch.tensor(a), torch.tensor(b), w).numpy()) <= scale).all()
    w = np.array([0.0, 0.4, 0.5, 1.0])
    ours = numgrad.tensor(a).lerp(numgrad.tensor(b), numgrad.tensor(w)).numpy()
    theirs = torch.tensor(a).lerp(torch.tensor(b), torch.tensor(w)).numpy()
    assert (abs(ours - theirs) <= scale).all() and ours[0] == a[0] and ours[3] == b[3]
    x = numgrad.tensor(a) * 1
    x.lerp_(numgrad.tensor(b), 0.5)
    assert (abs(x.numpy() - torch.lerp(torch.tensor(a), torch.tensor(b), 0.5).numpy())
            <= scale).all()
    _same_error(lambda: numgrad.lerp(numgrad.tensor(a), numgrad.tensor([1, 2, 3, 4]), 0.5),
                lambda: torch.lerp(torch.tensor(a), torch.tensor([1, 2, 3, 4]), 0.5))
    _same_error(lambda: numgrad.lerp(numgrad.tensor([1, 2]), numgrad.tensor([1, 2]), 0.5),
                lambda: torch.lerp(torch.tensor([1, 2]), torch.tensor([1, 2]), 0.5))


# ------------------------------------------------------------------ in-place rounding divisions
def test_in_place_rounding_division_and_modulo():
    a, b = np.array([7.5, -7.5, 3.0, -0.5]), np.array([2.0, 2.0, -2.0, 3.0])
    for mode in ("floor", "trunc"):
        x, y = numgrad.tensor(a), torch.tensor(a)
        assert x.div_(numgrad.tensor(b), rounding_mode=mode) is x
        y.div_(torch.tensor(b), rounding_mode=mode)
        assert _same(x.numpy(), y.numpy(), ulps=0).all()
    for op in ("floordiv", "mod"):
        for dtype in ("int64", "float64"):
            x, y = numgrad.tensor(a.astype(dtype)), torch.tensor(a.astype(dtype))
            rhs = np.array([2, 2, -2, 3], dtype)
            before = x
            if op == "floordiv":
                x //= numgrad.tensor(rhs)
                y //= torch.tensor(rhs)
            else:
                x %= numgrad.tensor(rhs)
                y %= torch.tensor(rhs)
            assert x is before and x.dtype.name == dtype
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    # recorded: the node is the out-of-place op's
    x, y = numgrad.tensor(a, requires_grad=True) * 1, torch.tensor(a, requires_grad=True) * 1
    x %= 2.0
    y %= 2.0
    assert x.grad_fn.name() == y.grad_fn.name()
    x.sum().backward()
    _same_error(lambda: numgrad.tensor([3, 4]).floor_divide_(0),
                lambda: torch.tensor([3, 4]).floor_divide_(0))
    _same_error(lambda: numgrad.tensor([3, 4]).div_(2.5, rounding_mode="floor"),
                lambda: torch.tensor([3, 4]).div_(2.5, rounding_mode="floor"))


# ------------------------------------------------------------------ clamp: 0-d tensor and number
def test_clamp_with_a_zero_dim_tensor_bound_and_a_number():
    x = np.array([0.1, 1.0, 3.0])
    cases = (lambda m, t: m.clamp(t, m.tensor(0.5), 2),
             lambda m, t: m.clamp(t, 0.5, m.tensor(2.0)),
             lambda m, t: t.clamp(min=m.tensor(1, dtype=m.int64), max=2.5),
             lambda m, t: m.clamp(t.long(), m.tensor(2), 3.5))
    for fn in cases:
        a, b = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ours, theirs = fn(numgrad, a), fn(torch, b)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
        if theirs.grad_fn is not None:
            assert ours.grad_fn.name() == theirs.grad_fn.name()
    for bad in (lambda m, t: m.clamp(t, m.tensor([0.5, 0.5, 0.5]), 2),
                lambda m, t: m.clamp(t, m.tensor(0.5, requires_grad=True), 2)):
        _same_error(lambda: bad(numgrad, numgrad.tensor(x)), lambda: bad(torch, torch.tensor(x)))
