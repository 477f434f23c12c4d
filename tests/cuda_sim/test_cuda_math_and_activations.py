"""Elementwise math (ops/trigonometric.py, exponents_and_rounding.py, division.py ...) and the
fused activations (ops/activation.py) on CUDA (the simulator): the CPU's values at special
inputs, integer modulo, gradients, second derivatives, node names and the in-place forms.

(No zero divisors and no inputs outside a function's domain: the simulator runs the formulas as
Python, whose math module raises there; a GPU run sees what a kernel gives.)"""
import math
import warnings

import numpy as np
import pytest

import numgrad

F = numgrad.nn.functional
rng = np.random.default_rng(0)
X = rng.uniform(-0.9, 0.9, (3, 4))
Y = rng.uniform(0.5, 2, (3, 4))
TOL = {"float64": {"rtol": 1e-9, "atol": 1e-12}, "float32": {"rtol": 2e-5, "atol": 2e-6}}
SPECIAL = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 3.0, -3.0, -7.25, 1e30,
                    20.0, -800.0, 800.0])


def _host(t):
    return t.detach().cpu().numpy()


def _both(fn, arrays, dtype, second):
    out = []
    for device in ("cpu", "cuda"):
        xs = [numgrad.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(*xs)
        seed = numgrad.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(dtype),
                              device=device)
        grads = numgrad.autograd.grad(y, xs, seed, create_graph=second, allow_unused=True)
        result = [_host(y), y.grad_fn.name(), [None if g is None else _host(g) for g in grads]]
        if second:
            total = sum((g * g).sum() for g in grads if g is not None)
            result.append([_host(g) for g in numgrad.autograd.grad(total, xs, allow_unused=True)
                           if g is not None])
        out.append(result)
    return out


def _check(fn, arrays, dtype="float64", second=True):
    cpu, gpu = _both(fn, arrays, dtype, second)
    assert cpu[1] == gpu[1]
    np.testing.assert_allclose(gpu[0], cpu[0], **TOL[dtype])
    for a, b in zip(gpu[2] + (gpu[3] if second else []), cpu[2] + (cpu[3] if second else [])):
        np.testing.assert_allclose(a, b, **TOL[dtype])


def test_unary_math_special_values_on_cuda_match_the_cpu():
    finite = SPECIAL[np.isfinite(SPECIAL) | np.isnan(SPECIAL)]
    cases = {
        "atan": SPECIAL, "sinh": finite[abs(finite) < 700], "cosh": finite[abs(finite) < 700],
        "asinh": SPECIAL, "exp2": SPECIAL, "trunc": SPECIAL, "frac": finite, "sinc": finite,
        "deg2rad": SPECIAL, "rad2deg": SPECIAL,
        "asin": np.array([0.0, -0.0, 0.5, -0.999]), "acos": np.array([0.0, 0.5, -0.999]),
        "atanh": np.array([0.0, -0.0, 0.5, -0.9]), "acosh": np.array([1.0, 1.5, 1e30]),
        "log2": np.array([0.25, 8.0, 3.0, 1e-300]), "log10": np.array([0.25, 100.0, 3.0]),
    }
    for name, x in cases.items():
        cpu = getattr(numgrad, name)(numgrad.tensor(x)).numpy()
        gpu = _host(getattr(numgrad, name)(numgrad.tensor(x, device="cuda")))
        np.testing.assert_allclose(gpu, cpu, rtol=4e-16, atol=0, err_msg=name)
        assert (np.signbit(gpu) == np.signbit(cpu))[~np.isnan(cpu)].all(), name


def test_activation_special_values_on_cuda_match_the_cpu():
    fns = [F.silu, F.gelu, lambda t: F.gelu(t, approximate="tanh"), F.leaky_relu, F.elu, F.selu,
           lambda t: F.celu(t, 0.7), F.softplus, lambda t: F.softplus(t, 2.0, 3.0), F.hardtanh,
           F.relu6, F.mish, F.hardswish, F.hardsigmoid, F.logsigmoid]
    x = SPECIAL[np.abs(np.nan_to_num(SPECIAL)) < 700]  # (math.exp(800) raises in Python)
    for fn in fns:
        cpu = fn(numgrad.tensor(x)).numpy()
        gpu = _host(fn(numgrad.tensor(x, device="cuda")))
        np.testing.assert_allclose(gpu, cpu, rtol=4e-15, atol=1e-300)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_modulo_on_cuda_is_the_cpus(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, info.max, info.min, 6], dtype)
    b = np.array([3, 3, -3, -3, 5, 7, -1, -3], dtype)
    for name in ("fmod", "remainder"):
        cpu = getattr(numgrad, name)(numgrad.tensor(a), numgrad.tensor(b))
        gpu = getattr(numgrad, name)(numgrad.tensor(a, device="cuda"),
                                     numgrad.tensor(b, device="cuda"))
        assert gpu.dtype is cpu.dtype
        np.testing.assert_array_equal(_host(gpu), cpu.numpy())
    np.testing.assert_array_equal(_host(9 % numgrad.tensor(b, device="cuda")),
                                  (9 % numgrad.tensor(b)).numpy())


def test_float_modulo_on_cuda_is_the_cpus():
    a = np.array([7.5, -7.5, 0.0, -0.0, 3.0, 1e30, math.inf, math.nan])
    for b in (2.0, -2.0, 0.5, math.inf):
        for name in ("fmod", "remainder"):
            cpu = getattr(numgrad, name)(numgrad.tensor(a), b).numpy()
            gpu = _host(getattr(numgrad, name)(numgrad.tensor(a, device="cuda"), b))
            np.testing.assert_array_equal(gpu, cpu)
            assert (np.signbit(gpu) == np.signbit(cpu))[~np.isnan(cpu)].all()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_math_gradients_on_cuda_match_the_cpu(dtype):
    for fn, arrays in (
        (lambda x: numgrad.asin(x) + numgrad.acos(x) * numgrad.atanh(x), [X]),
        (lambda x: numgrad.sinh(x) * numgrad.cosh(x) + numgrad.asinh(x) + numgrad.atan(x), [X]),
        (lambda y: numgrad.acosh(y + 1) + numgrad.log2(y) * numgrad.log10(y) + numgrad.exp2(y),
         [Y]),
        (lambda x: numgrad.sinc(x) + numgrad.deg2rad(x) * numgrad.rad2deg(x) + numgrad.square(x),
         [X]),
        (lambda x, y: numgrad.fmod(x * 3, y) + (x * 3) % y + numgrad.hypot(x, y), [X, Y]),
        (lambda x, y: numgrad.xlogy(x, y) + numgrad.lerp(x, y, 0.3) + numgrad.lerp(x, y, x),
         [X, Y]),
        (lambda x: numgrad.trunc(x * 3) * x + numgrad.frac(x * 3), [X]),
    ):
        _check(fn, arrays, dtype)


ACTIVATIONS = [F.silu, F.gelu, lambda t: F.gelu(t, approximate="tanh"),
               lambda t: F.leaky_relu(t, 0.2), F.elu, F.selu, lambda t: F.celu(t, 0.7),
               F.softplus, lambda t: F.softplus(t, 2.0, 1.0), lambda t: F.hardtanh(t, -0.5, 0.5),
               F.mish, lambda t: F.hardswish(t * 4), F.logsigmoid]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_activation_gradients_on_cuda_match_the_cpu(dtype):
    for fn in ACTIVATIONS:
        _check(lambda x: fn(x * 3), [X], dtype)
    _check(lambda x: F.hardsigmoid(x * 4), [X], dtype, second=False)


def test_in_place_forms_on_cuda_match_the_cpu():
    for fn in (lambda t: F.leaky_relu(t * 1, 0.2, inplace=True),
               lambda t: F.elu(t * 1, inplace=True), lambda t: F.selu(t * 1, inplace=True),
               lambda t: F.celu(t * 1, 0.7, inplace=True), lambda t: F.silu(t * 1, inplace=True),
               lambda t: F.hardtanh(t * 1, inplace=True), lambda t: (t * 1).sinh_(),
               lambda t: (t * 1).remainder_(0.5)):
        _check(lambda x: fn(x * 3), [X], second=False)
    x = numgrad.tensor([7.0, -7.0], device="cuda")
    x //= 2
    x %= 3
    np.testing.assert_array_equal(_host(x), [0.0, 2.0])
