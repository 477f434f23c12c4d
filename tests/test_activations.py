"""The fused activations (ops/activation.py) against PyTorch: silu, gelu (exact and tanh),
leaky_relu, elu, selu, celu, softplus, hardtanh/relu6, mish, hardswish, hardsigmoid, logsigmoid
(and the composites softsign, tanhshrink): values at special inputs (±0 with their signs, ±inf,
NaN, the kinks), float32 and float64, integer and bool inputs refused with PyTorch's errors, node
names of the op, of its backward and of the in-place forms, gradients and second derivatives
against PyTorch's, and ATen's backward ops called directly. (The registry samples are gradchecked
by tests/test_ops.py; tests/test_nn_layers.py covers the modules.)"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import numgrad

F = numgrad.nn.functional
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 6.0, -7.25,
           1e-30, -1e-30, 20.0, 25.0, -20.0, 100.0, -100.0, 800.0, -800.0, 1.5, -2.5]
CASES = [
    ("silu", {}), ("gelu", {}), ("gelu", dict(approximate="tanh")), ("leaky_relu", {}),
    ("leaky_relu", dict(negative_slope=0.3)), ("elu", {}), ("elu", dict(alpha=0.4)), ("selu", {}),
    ("celu", {}), ("celu", dict(alpha=0.7)), ("softplus", {}),
    ("softplus", dict(beta=2.0, threshold=3.0)), ("hardtanh", {}),
    ("hardtanh", dict(min_val=-0.5, max_val=2.0)), ("relu6", {}), ("mish", {}), ("hardswish", {}),
    ("hardsigmoid", {}), ("logsigmoid", {}), ("softsign", {}), ("tanhshrink", {}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CASES]


def _close(ours, theirs, dtype, x=0.0, rtol=None):
    """Equal as floats (NaN with NaN, zeros with their sign), or close for the dtype: a few ulps
    of the result, or of the input ``x`` (these activations are ``x`` times a factor in [0, 1]
    or near it, and PyTorch's float32 vectorised loops round that factor in float32: gelu's
    ``1 + erf(x / sqrt 2)`` cancels below -2)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype
    eps = np.finfo(dtype).eps
    rtol = 8 * eps if rtol is None else rtol
    both_nan = np.isnan(ours) & np.isnan(theirs)
    exact = (ours == theirs) & (np.signbit(ours) == np.signbit(theirs))
    with np.errstate(invalid="ignore"):
        slack = rtol * np.abs(theirs) + 8 * eps * np.abs(np.asarray(x, theirs.dtype)) + 1e-300
        close = np.isfinite(theirs) & (np.abs(ours - theirs) <= slack)
    ok = both_nan | exact | (close & (theirs != 0))
    return ok


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_values_at_special_inputs_match_pytorch(name, kwargs, dtype):
    x = np.array(SPECIAL, dtype)
    ours = getattr(F, name)(numgrad.tensor(x), **kwargs).numpy()
    theirs = getattr(TF, name)(torch.tensor(x), **kwargs).numpy()
    ok = _close(ours, theirs, dtype, x)
    if name == "gelu" and dtype == "float32":
        # PyTorch's float32 vectorised erf gives NaN at ±inf (its float64 loop, ±inf * Phi(±inf))
        ok |= np.isinf(x) & np.isnan(theirs)
        # and its AVX2 vector loop gives +0 where x * Phi(x) is -0 (x <= 0 and Phi(x) 0 in
        # float32), which its scalar loop, its float64 loop and its AVX-512 loop give, as ours
        ok |= (ours == 0) & (theirs == 0) & (x <= 0)
    assert ok.all(), list(zip(x[~ok], ours[~ok], theirs[~ok]))


@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_gradients_and_nodes_match_pytorch(name, kwargs):
    x = np.array([s for s in SPECIAL if math.isfinite(s)])
    a, b = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = getattr(F, name)(a, **kwargs), getattr(TF, name)(b, **kwargs)
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    g = np.random.default_rng(0).standard_normal(x.shape)
    (ga,) = numgrad.autograd.grad(ours, a, numgrad.tensor(g), create_graph=True)
    (gb,) = torch.autograd.grad(theirs, b, torch.tensor(g), create_graph=True)
    ok = _close(ga.detach().numpy(), gb.detach().numpy(), "float64", rtol=1e-12)
    assert ok.all(), list(zip(x[~ok], ga.detach().numpy()[~ok], gb.detach().numpy()[~ok]))
    if name == "hardsigmoid":  # (PyTorch's second derivative is NotImplemented)
        assert ga.grad_fn.name() == gb.grad_fn.name()
        with pytest.raises(RuntimeError, match="hardsigmoid_backward is not implemented"):
            ga.sum().backward()
        return
    (gga,) = numgrad.autograd.grad((ga * ga).sum(), a)
    (ggb,) = torch.autograd.grad((gb * gb).sum(), b)
    # (PyTorch's mish double backward, a composite, is NaN at 800 through exp(800) = inf; the
    # fused one here gives its limit, 0)
    keep = abs(x) < 800 if name == "mish" else slice(None)
    np.testing.assert_allclose(gga.numpy()[keep], ggb.numpy()[keep], rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_gradgradcheck(name, kwargs):
    x = np.random.default_rng(1).uniform(-2.5, 2.5, (2, 3))
    t = numgrad.tensor(x, requires_grad=True)
    def fn(v):
        return getattr(F, name)(v, **kwargs)
    assert numgrad.autograd.gradcheck(fn, (t,))
    if name != "hardsigmoid":
        assert numgrad.autograd.gradgradcheck(fn, (t,))


@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_integer_and_bool_inputs_as_pytorch(name, kwargs):
    for values in ([1, -2, 3], [True, False]):
        a, b = numgrad.tensor(values), torch.tensor(values)
        try:
            expected = getattr(TF, name)(b, **kwargs)
        except (RuntimeError, NotImplementedError) as error:
            with pytest.raises(type(error)) as got:
                getattr(F, name)(a, **kwargs)
            assert str(got.value) == str(error)
            continue
        ours = getattr(F, name)(a, **kwargs)
        assert ours.dtype.name == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-6)


INPLACE = [("leaky_relu", dict(negative_slope=0.2)), ("elu", {}), ("elu", dict(alpha=0.5)),
           ("selu", {}), ("celu", dict(alpha=0.7)), ("silu", {}), ("mish", {}),
           ("hardswish", {}), ("hardsigmoid", {}), ("hardtanh", {}), ("relu6", {})]


@pytest.mark.parametrize("name, kwargs", INPLACE, ids=[n + str(k) for n, k in INPLACE])
def test_in_place_forms(name, kwargs):
    x = np.array([-3.0, -0.5, 0.0, 0.25, 2.0, 7.0])
    a, b = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ca, cb = a * 1, b * 1
    ours = getattr(F, name)(ca, inplace=True, **kwargs)
    theirs = getattr(TF, name)(cb, inplace=True, **kwargs)
    assert ours is ca
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert _close(ours.detach().numpy(), theirs.detach().numpy(), "float64").all()
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
    # no graph: written in place, nothing recorded
    c = numgrad.tensor(x)
    assert getattr(F, name)(c, inplace=True, **kwargs) is c
    np.testing.assert_allclose(c.numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_in_place_forms_with_a_negative_slope_refuse_backward():
    for m, fn in ((numgrad, F), (torch, TF)):
        a = m.tensor([1.0, -2.0], requires_grad=True)
        out = fn.leaky_relu(a * 1, -0.1, inplace=True)
        with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation"):
            out.sum().backward()
        for call in (lambda t: fn.elu(t, -1.0, inplace=True),
                     lambda t: fn.celu(t, -0.5, inplace=True)):
            out = call(a * 1)
            with pytest.raises(RuntimeError, match="In-place elu backward calculation is "
                               "triggered with a negative slope"):
                out.sum().backward()
        with pytest.raises(RuntimeError, match="ZeroDivisionError: alpha cannot be 0 for CELU"):
            fn.celu(a, 0.0)


def test_aten_backward_ops_match_pytorch():
    rng = np.random.default_rng(2)
    g, x = rng.standard_normal((3, 4)), rng.uniform(-4, 4, (3, 4))
    A = torch.ops.aten
    calls = [
        ("silu_backward", ()), ("mish_backward", ()), ("hardswish_backward", ()),
        ("hardsigmoid_backward", ()), ("gelu_backward", ()),
        ("leaky_relu_backward", (0.2, False)), ("softplus_backward", (2.0, 1.5)),
        ("hardtanh_backward", (-0.5, 1.0)),
    ]
    for name, extra in calls:
        ours = getattr(numgrad.ops, name)(numgrad.tensor(g), numgrad.tensor(x), *extra)
        theirs = getattr(A, name)(torch.tensor(g), torch.tensor(x), *extra)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
    ours = numgrad.ops.gelu_backward(numgrad.tensor(g), numgrad.tensor(x), approximate="tanh")
    theirs = A.gelu_backward(torch.tensor(g), torch.tensor(x), approximate="tanh")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    for alpha, scale, input_scale in ((0.7, 1.0, 1.0), (0.7, 1.0, 1 / 0.7),
                                      (1.6732632423543772, 1.0507009873554805, 1.0)):
        ours = numgrad.ops.elu_backward(numgrad.tensor(g), alpha, scale, input_scale, False,
                                        numgrad.tensor(x))
        theirs = A.elu_backward(torch.tensor(g), alpha, scale, input_scale, False, torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_shapes_dtypes_and_layouts():
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    for name, kwargs in CASES:
        f, g = getattr(F, name), getattr(TF, name)
        for dtype in ("float32", "float64"):
            ours = f(numgrad.tensor(x.astype(dtype)).t(), **kwargs)
            theirs = g(torch.tensor(x.astype(dtype)).t(), **kwargs)
            assert ours.dtype.name == dtype and tuple(ours.shape) == (4, 3)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)
        assert f(numgrad.zeros(0, 2), **kwargs).shape == (0, 2)
        np.testing.assert_allclose(f(numgrad.tensor(0.5), **kwargs).numpy(),
                                   g(torch.tensor(0.5), **kwargs).numpy(), rtol=1e-6)


def test_errors_match_pytorch():
    def same(ours, theirs):
        with pytest.raises(Exception) as expected:
            theirs()
        with pytest.raises(type(expected.value)) as got:
            ours()
        assert str(got.value) == str(expected.value)

    same(lambda: F.gelu(numgrad.zeros(2), approximate="x"),
         lambda: TF.gelu(torch.zeros(2), approximate="x"))
    same(lambda: F.hardtanh(numgrad.zeros(2), 2.0, 1.0), lambda: TF.hardtanh(torch.zeros(2), 2.0, 1.0))
    same(lambda: numgrad.selu(2.0), lambda: torch.selu(2.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vectorised_formulas_on_a_dense_range(dtype):
    """The CPU formulas of elu, selu, celu (a vectorisable expm1), softplus, mish, logsigmoid (a
    vectorisable log1p) and silu (kernels/cpu/mathfuncs.py): within a few ulps of PyTorch's on a
    dense range, near 0 included, and their gradients too."""
    x = np.concatenate([np.linspace(-45, 25, 20001), np.linspace(-1e-4, 1e-4, 2001)]).astype(dtype)
    for name, kwargs in (("elu", dict(alpha=0.7)), ("selu", {}), ("celu", dict(alpha=1.3)),
                         ("softplus", {}), ("mish", {}), ("logsigmoid", {}), ("silu", {})):
        a, b = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ours, theirs = getattr(F, name)(a, **kwargs), getattr(TF, name)(b, **kwargs)
        ok = _close(ours.detach().numpy(), theirs.detach().numpy(), dtype, x,
                    rtol=4 * np.finfo(dtype).eps)
        assert ok.all(), list(zip(x[~ok][:5], ours.detach().numpy()[~ok][:5],
                                  theirs.detach().numpy()[~ok][:5]))
        ours.sum().backward()
        theirs.sum().backward()
        # (silu's gradient crosses 0 near -1.28, from terms near 1: the slack of |x| ulps)
        ok = _close(a.grad.numpy(), b.grad.numpy(), dtype, x, rtol=4 * np.finfo(dtype).eps)
        assert ok.all(), list(zip(x[~ok][:5], a.grad.numpy()[~ok][:5], b.grad.numpy()[~ok][:5]))
