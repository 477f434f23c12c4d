"""3-D pooling against PyTorch: ``F.max_pool3d`` (indices, dilation, padding, ``ceil_mode``),
``F.avg_pool3d`` (``count_include_pad``, ``divisor_override``), ``F.adaptive_avg_pool3d``
(None entries, the (1, 1, 1) mean), batched and unbatched, float32, float64 and int64: values,
indices, node names and gradients, gradcheck and gradgradcheck in float64, PyTorch's errors, and
the modules ``MaxPool3d``, ``AvgPool3d``, ``AdaptiveAvgPool3d`` (repr and forward)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _helpers import raised

import numgrad
import numgrad.nn.functional as F

TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-5)}

CASES = [
    ("max_pool3d", (2, 2, 4, 5, 4), dict(kernel_size=2)),
    ("max_pool3d", (2, 5, 4, 3), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2),
                                      padding=(1, 0, 1), dilation=(1, 2, 1), ceil_mode=True)),
    ("max_pool3d", (1, 2, 3, 4, 5), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool3d", (2, 2, 4, 5, 4), dict(kernel_size=2)),
    ("avg_pool3d", (2, 5, 4, 3), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=1,
                                      ceil_mode=True, count_include_pad=False)),
    ("avg_pool3d", (1, 1, 2, 3, 3), dict(kernel_size=2, padding=(0, 1, 1),
                                         divisor_override=3)),
    ("adaptive_avg_pool3d", (2, 2, 3, 5, 4), dict(output_size=(2, 3, 2))),
    ("adaptive_avg_pool3d", (2, 3, 4, 5), dict(output_size=(None, 2, 3))),
    ("adaptive_avg_pool3d", (2, 2, 3, 3, 3), dict(output_size=1)),
]


def _pair(shape, dtype, seed=0):
    a = np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)
    return numgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_nodes_and_gradients_match_pytorch(case, dtype):
    name, shape, kw = CASES[case]
    xo, xt = _pair(shape, dtype)
    o, t = getattr(F, name)(xo, **kw), getattr(TF, name)(xt, **kw)
    np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), **TOL[dtype])
    assert o.grad_fn.name() == t.grad_fn.name()
    g = np.random.default_rng(1).standard_normal(tuple(t.shape)).astype(dtype)
    o.backward(numgrad.tensor(g))
    t.backward(torch.tensor(g))
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), **TOL[dtype])


def test_max_pool3d_indices_and_integer_inputs():
    xo, xt = _pair((2, 2, 4, 5, 4), "float64")
    _, oi = F.max_pool3d(xo, 2, stride=1, padding=1, return_indices=True)
    _, ti = TF.max_pool3d(xt, 2, stride=1, padding=1, return_indices=True)
    np.testing.assert_array_equal(oi.numpy(), ti.numpy())
    assert oi.dtype.name == "int64"
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5) * 7 % 11
    for fn, kw in (("max_pool3d", dict(kernel_size=2)), ("avg_pool3d", dict(kernel_size=2,
                                                                           padding=1))):
        np.testing.assert_array_equal(getattr(F, fn)(numgrad.tensor(x), **kw).numpy(),
                                      getattr(TF, fn)(torch.tensor(x), **kw).numpy())


@pytest.mark.parametrize("case", [1, 4, 7])
def test_gradcheck_and_gradgradcheck(case):
    name, shape, kw = CASES[case]
    xo, _ = _pair(shape, "float64", 3)
    fn = lambda x: getattr(F, name)(x, **kw)  # noqa: E731
    assert numgrad.autograd.gradcheck(fn, (xo,))
    assert numgrad.autograd.gradgradcheck(fn, (xo,))


def test_second_derivative_nodes_match_pytorch():
    for name, kw in (("max_pool3d", dict(kernel_size=2)), ("avg_pool3d", dict(kernel_size=2)),
                     ("adaptive_avg_pool3d", dict(output_size=2))):
        names = []
        for m, Fm, x in zip((numgrad, torch), (F, TF), _pair((1, 1, 3, 3, 3), "float64")):
            y = getattr(Fm, name)(x, **kw)
            v = m.ones(tuple(y.shape), dtype=m.float64, requires_grad=True)
            names.append(m.autograd.grad(y, x, v, create_graph=True)[0].grad_fn.name())
        assert names[0] == names[1]


def _errors(m, Fm, name):
    x = m.ones(2, 2, 4, 5, 4)
    calls = {
        "max_kernel": lambda: Fm.max_pool3d(x, (2, 3)),
        "max_stride": lambda: Fm.max_pool3d(x, 2, stride=(1, 2)),
        "max_padding": lambda: Fm.max_pool3d(x, 2, padding=(1, 2)),
        "max_dilation": lambda: Fm.max_pool3d(x, 2, dilation=(1, 2)),
        "max_pad_half": lambda: Fm.max_pool3d(x, 2, padding=2),
        "max_zero": lambda: Fm.max_pool3d(x, 0),
        "max_rank": lambda: Fm.max_pool3d(m.ones(3, 4, 5), 2),
        "max_small": lambda: Fm.max_pool3d(x, 5),
        "max_dilation_zero": lambda: Fm.max_pool3d(x, 2, dilation=0),
        "avg_kernel": lambda: Fm.avg_pool3d(x, (2, 3)),
        "avg_stride": lambda: Fm.avg_pool3d(x, 2, stride=(1, 2)),
        "avg_padding": lambda: Fm.avg_pool3d(x, 2, padding=(1, 2)),
        "avg_rank": lambda: Fm.avg_pool3d(m.ones(3, 4, 5), 2),
        "avg_small": lambda: Fm.avg_pool3d(x, 5),
        "avg_divisor": lambda: Fm.avg_pool3d(x, 2, divisor_override=0),
        "adaptive_length": lambda: Fm.adaptive_avg_pool3d(x, (2, 3)),
        "adaptive_negative": lambda: Fm.adaptive_avg_pool3d(x, (2, 3, -1)),
        "adaptive_rank": lambda: Fm.adaptive_avg_pool3d(m.ones(3, 4), 2),
        "adaptive_empty": lambda: Fm.adaptive_avg_pool3d(m.ones(2, 2, 0, 3, 3), 2),
        "adaptive_long": lambda: Fm.adaptive_avg_pool3d(m.ones(2, 2, 3, 3, 3, dtype=m.int64),
                                                        2),
    }
    return raised(calls[name])


@pytest.mark.parametrize("name", [
    "max_kernel", "max_stride", "max_padding", "max_dilation", "max_pad_half", "max_zero",
    "max_rank", "max_small", "max_dilation_zero", "avg_kernel", "avg_stride", "avg_padding",
    "avg_rank", "avg_small", "avg_divisor", "adaptive_length", "adaptive_negative",
    "adaptive_rank", "adaptive_empty", "adaptive_long"])
def test_errors_match_pytorch(name):
    theirs = _errors(torch, TF, name)
    assert theirs is not None and _errors(numgrad, F, name) == theirs


@pytest.mark.parametrize("index", range(4))
def test_modules_match_pytorch(index):
    make = [lambda m: m.nn.MaxPool3d(2),
            lambda m: m.nn.MaxPool3d((2, 1, 2), stride=1, padding=(1, 0, 0), dilation=(1, 1, 2),
                                     ceil_mode=True),
            lambda m: m.nn.AvgPool3d((2, 3, 1), stride=1, padding=(1, 0, 0), ceil_mode=True),
            lambda m: m.nn.AdaptiveAvgPool3d((2, None, 3))][index]
    ours, theirs = make(numgrad), make(torch)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(index).standard_normal((2, 2, 4, 5, 4))
    np.testing.assert_allclose(ours(numgrad.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                               **TOL["float64"])
