"""The losses of ops/loss.py (huber, smooth L1, BCE, BCE with logits, l1, kl_div) and the
elementwise ops of ops/trigonometric.py, special_functions.py, ternary.py ... on CUDA (the
simulator): the CPU's values, gradients, second derivatives and node names, with weights,
broadcasting and empty inputs."""
import math
import warnings

import numpy as np
import pytest

import numgrad

F = numgrad.nn.functional
rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, (3, 4))
Y = rng.uniform(-2, 2, (3, 4))
P = rng.uniform(0.02, 0.98, (3, 4))
Q = rng.uniform(0, 1, (3, 4))
W = rng.uniform(0.5, 2, (4,))
TOL = {"float64": {"rtol": 1e-9, "atol": 1e-12}, "float32": {"rtol": 2e-5, "atol": 2e-6}}


def _host(t):
    return t.detach().cpu().numpy()


def _both(fn, arrays, dtype, second=False):
    """fn on the CPU and on CUDA: output, node name, gradients (and second derivatives)."""
    out = []
    for device in ("cpu", "cuda"):
        xs = [numgrad.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(device, *xs)
        seed = numgrad.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(dtype),
                              device=device)
        grads = numgrad.autograd.grad(y, xs, seed, create_graph=second, allow_unused=True)
        result = [_host(y), y.grad_fn.name(), [None if g is None else _host(g) for g in grads]]
        if second:
            total = sum((g * g).sum() for g in grads if g is not None)
            result.append([_host(g) for g in numgrad.autograd.grad(total, xs)])
        out.append(result)
    return out


def _check(fn, arrays, dtype="float64", second=False):
    cpu, gpu = _both(fn, arrays, dtype, second)
    assert cpu[1] == gpu[1]
    np.testing.assert_allclose(gpu[0], cpu[0], **TOL[dtype])
    for a, b in zip(gpu[2], cpu[2]):
        np.testing.assert_allclose(a, b, **TOL[dtype])
    if second:
        for a, b in zip(gpu[3], cpu[3]):
            np.testing.assert_allclose(a, b, **TOL[dtype])


def _w(device, values, dtype=numgrad.float64):
    return numgrad.tensor(values, dtype=dtype, device=device)


@pytest.mark.parametrize("reduction, dtype", [("mean", "float32"), ("mean", "float64"),
                                              ("sum", "float64"), ("none", "float64")])
def test_losses_on_cuda_match_the_cpu(reduction, dtype):
    d = getattr(numgrad, dtype)
    cases = [
        (lambda dev, x, y: F.huber_loss(x, y, reduction=reduction, delta=0.7), [X, Y]),
        (lambda dev, x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=1.3), [X, Y]),
        (lambda dev, x, y: F.smooth_l1_loss(x, y[0], reduction=reduction), [X, Y]),
        (lambda dev, x, y: F.l1_loss(x, y, reduction=reduction), [X, Y]),
        (lambda dev, p, q: F.binary_cross_entropy(p, q, reduction=reduction,
                                                  weight=_w(dev, W, d)), [P, Q]),
        (lambda dev, x, q: F.binary_cross_entropy_with_logits(
            x * 10, q, reduction=reduction, weight=_w(dev, W, d),
            pos_weight=_w(dev, W[::-1].copy(), d)), [X, Q]),
        (lambda dev, x, q: F.kl_div(x, q, reduction="batchmean" if reduction == "mean"
                                    else reduction), [np.log(P), Q]),
        (lambda dev, x, q: F.kl_div(x, q, reduction=reduction, log_target=True),
         [np.log(P), np.log(Q)]),
    ]
    for fn, arrays in cases:
        _check(fn, arrays, dtype)


def test_second_derivatives_on_cuda_match_the_cpu():
    for fn, arrays in (
        (lambda dev, x, y: F.huber_loss(x, y, delta=0.5), [X, Y * 0.5]),
        (lambda dev, x, y: F.smooth_l1_loss(x, y, reduction="none"), [X, Y]),
        (lambda dev, p, q: F.binary_cross_entropy(p, q, weight=_w(dev, W)), [P, Q]),
        (lambda dev, x, q: F.binary_cross_entropy_with_logits(x, q, pos_weight=_w(dev, W)),
         [X, Q]),
    ):
        _check(fn, arrays, second=True)


def test_bce_clamped_logs_and_empty_inputs_on_cuda():
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    q = np.array([0.0, 1.0, 1.0, 0.0, 0.5])
    for device in ("cpu", "cuda"):
        out = F.binary_cross_entropy(numgrad.tensor(p, device=device),
                                     numgrad.tensor(q, device=device), reduction="none")
        np.testing.assert_allclose(_host(out), [0.0, 0.0, 100.0, 100.0, math.log(2)])
    for name in ("huber_loss", "smooth_l1_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits"):
        for reduction, expected in (("mean", math.nan), ("sum", 0.0)):
            empty = numgrad.zeros(0, 3, device="cuda")
            value = getattr(F, name)(empty, empty, reduction=reduction).item()
            assert value == expected or (math.isnan(expected) and math.isnan(value))
        assert getattr(F, name)(empty, empty, reduction="none").shape == (0, 3)


def test_loss_modules_on_cuda():
    x = numgrad.tensor(P, device="cuda", requires_grad=True)
    q = numgrad.tensor(Q, device="cuda")
    for module in (numgrad.nn.L1Loss(), numgrad.nn.HuberLoss(delta=0.2), numgrad.nn.BCELoss(),
                   numgrad.nn.BCEWithLogitsLoss(pos_weight=numgrad.tensor(W, dtype=numgrad.float64)),
                   numgrad.nn.KLDivLoss(reduction="batchmean"), numgrad.nn.SmoothL1Loss()):
        module.to("cuda")
        loss = module(x, q)
        cpu = module.cpu()(x.detach().cpu(), q.cpu())
        np.testing.assert_allclose(loss.item(), cpu.item(), rtol=1e-12)
        loss.backward()
    assert x.grad.is_cuda


# ------------------------------------------------------------------ elementwise
SPECIAL = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -7.25, 3.0, 1e30])
# (no zero divisors: the simulator runs the formulas as Python, whose float division by zero
# raises; a GPU run, benchmarks/gpu_check.py, sees what a kernel gives there)
DIVISORS = SPECIAL[[0, 1, 2, 5, 6, 7, 8, 9, 10]]


@pytest.mark.parametrize("dtype", ["float64"])  # (the simulator runs both dtypes as Python)
def test_elementwise_special_values_on_cuda_match_the_cpu(dtype):
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(SPECIAL, DIVISORS))
    for fn in (numgrad.atan2, numgrad.logaddexp, numgrad.logaddexp2,
               lambda x, y: numgrad.div(x, y, rounding_mode="floor"),
               lambda x, y: numgrad.div(x, y, rounding_mode="trunc"),
               lambda x, y: x // y,
               lambda x, y: numgrad.clamp(x, y, y + 1),
               lambda x, y: numgrad.erf(x) + numgrad.erfc(y)):
        cpu = fn(numgrad.tensor(a), numgrad.tensor(b)).numpy()
        gpu = _host(fn(numgrad.tensor(a, device="cuda"), numgrad.tensor(b, device="cuda")))
        np.testing.assert_allclose(gpu, cpu, rtol=4 * np.finfo(dtype).eps, atol=0)
        assert (np.signbit(gpu) == np.signbit(cpu))[~np.isnan(cpu)].all()


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_rounding_division_on_cuda_is_the_cpus(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, info.max, info.min, info.min, info.min + 1, 5], dtype)
    b = np.array([2, 2, -2, -2, 3, -1, -1, 3, -3, 7], dtype)
    for mode in ("floor", "trunc"):
        cpu = numgrad.div(numgrad.tensor(a), numgrad.tensor(b), rounding_mode=mode)
        gpu = numgrad.div(numgrad.tensor(a, device="cuda"), numgrad.tensor(b, device="cuda"),
                          rounding_mode=mode)
        assert gpu.dtype is cpu.dtype
        np.testing.assert_array_equal(_host(gpu), cpu.numpy())
    # a zero divisor cannot raise inside a kernel (PyTorch's CUDA does not check either)
    out = numgrad.div(numgrad.tensor(a, device="cuda"), 0, rounding_mode="floor")
    assert out.dtype.name == dtype and out.shape == a.shape


def test_elementwise_gradients_on_cuda_match_the_cpu():
    lo, hi = X[0] - 0.5, X[0] + Y[0].clip(0.1)
    _check(lambda dev, x, lo, hi: numgrad.clamp(x, lo, hi), [X, lo, hi])
    _check(lambda dev, x, y: numgrad.div(x, y, rounding_mode="floor") * x, [X, Y])
    for fn, arrays in (
        (lambda dev, x, y: numgrad.atan2(x, y), [X, Y]),
        (lambda dev, x, y: x.logaddexp(y[:1]), [X, Y]),
        (lambda dev, x, y: numgrad.logaddexp2(x, y), [X, Y]),
        (lambda dev, x: numgrad.erf(x) * numgrad.erfc(x), [X]),
    ):
        _check(fn, arrays, second=True)
