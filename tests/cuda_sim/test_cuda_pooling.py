"""Pooling and padding on CUDA in the simulator (run with tests/cuda_sim, see test_cuda_sim.py):
every option of max/avg/adaptive pooling and every padding mode against the CPU (values,
indices, input gradients and node names), ties and NaN, integer inputs, non-contiguous inputs,
second derivatives, and no host read-back while forward and backward run. Shapes stay small:
the simulator runs each thread as Python."""
import numpy as np
import pytest
from _sim_helpers import host as _host
from _sim_helpers import on_both

import numgrad
import numgrad.nn.functional as F

TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}


def _on_both(fn, a, grad=True, seed=0):
    """``fn(x)`` of the same data on the CPU and on CUDA: outputs, node names and the input
    gradients of the same vector-Jacobian product."""
    return on_both(fn, a, TOL, grad, seed, with_device=False,
                   backward_of=lambda o: o.dtype.is_floating_point, sequences=tuple)


def _data(shape, dtype="float64", seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(dtype)


CASES = [
    (lambda x: F.max_pool2d(x, 2, return_indices=True), (1, 2, 4, 5)),
    (lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 0), dilation=(1, 2), ceil_mode=True,
                            return_indices=True), (2, 5, 6)),
    (lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), (2, 7)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1), (1, 2, 5, 4)),
    (lambda x: F.avg_pool2d(x, (3, 2), 2, 1, ceil_mode=True, count_include_pad=False),
     (1, 2, 5, 4)),
    (lambda x: F.avg_pool2d(x, 2, 1, 1, divisor_override=3), (2, 3, 3)),
    (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), (1, 2, 6)),
    (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 5, 7)),
    (lambda x: F.adaptive_avg_pool2d(x, (7, 4)), (2, 3, 3)),
    (lambda x: F.adaptive_avg_pool1d(x, 1), (2, 5)),
    (lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True), (1, 2, 5, 7)),
    (lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), (2, 6)),
    (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), (1, 2, 3, 4)),
    (lambda x: F.pad(x, (-1, 2), mode="reflect"), (2, 4)),
    (lambda x: F.pad(x, (3, 1, 0, 2), mode="replicate"), (2, 3, 2)),
    (lambda x: F.pad(x, (2, -1), mode="replicate"), (1, 2, 4)),
    (lambda x: F.pad(x, (1, 2, 2, -1), mode="circular"), (1, 2, 3, 4)),
    (lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), (2, 3, 4)),
    (lambda x: F.pad(x, (1, 0, 2, -1, 1, 1), mode="reflect"), (1, 2, 3, 3)),
    (lambda x: F.pad(x, (2, 1, 0, 1, -1, 2), mode="replicate"), (1, 1, 2, 3, 2)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_matches_cpu(index, dtype):
    fn, shape = CASES[index]
    outs = _on_both(fn, _data(shape, dtype, index))
    for c, g in zip(*outs):
        if c.dtype is numgrad.int64:
            np.testing.assert_array_equal(_host(g), _host(c))


def test_ties_and_nan_as_the_cpu():
    a = np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, np.nan, 5.0],
                    [-np.inf, -np.inf, 7.0, 7.0], [-np.inf, -np.inf, 7.0, np.nan]]]])
    for fn in (lambda x: F.max_pool2d(x, 2, 1, return_indices=True),
               lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True),
               lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True)):
        cpu, gpu = _on_both(fn, a, grad=False)
        np.testing.assert_array_equal(_host(gpu[1]), _host(cpu[1]))
        np.testing.assert_array_equal(_host(gpu[0]), _host(cpu[0]))
    _on_both(lambda x: F.avg_pool2d(x, 2), a, grad=False)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integers_as_the_cpu(dtype):
    a = np.random.default_rng(1).integers(-50, 50, size=(1, 2, 4, 5)).astype(dtype)
    fns = [lambda x: F.max_pool2d(x, 2, padding=1, return_indices=True),
           lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"),
           lambda x: F.pad(x[0], (2, 1), mode="replicate"),
           lambda x: F.pad(x, (1, 1), value=3)]
    if dtype == "int64":
        fns.append(lambda x: F.avg_pool2d(-x, 3, 2, 1, count_include_pad=False))
    for fn in fns:
        _on_both(fn, a, grad=False)


def test_non_contiguous_inputs_as_the_cpu():
    a = _data((2, 4, 5, 3))
    for fn in (lambda x: F.max_pool2d(x.permute(0, 3, 2, 1), 2, 1),
               lambda x: F.avg_pool2d(x.permute(0, 3, 2, 1)[:, :, ::2], 2, 1, 1),
               lambda x: F.adaptive_avg_pool2d(x.transpose(1, 2), 3),
               lambda x: F.pad(x.permute(0, 3, 2, 1), (1, 2, 2, 1), mode="reflect")):
        _on_both(fn, a)


@pytest.mark.parametrize("fn, shape", [
    (lambda x: F.max_pool2d(x, 2, 1), (1, 1, 3, 3)),
    (lambda x: F.avg_pool2d(x, 2, 1, 1, count_include_pad=False), (1, 1, 3, 3)),
    (lambda x: F.adaptive_avg_pool2d(x, (2, 2)), (1, 3, 3)),
    (lambda x: F.adaptive_max_pool2d(x, (2, 2)), (1, 3, 3)),
    (lambda x: F.pad(x, (2, 1), mode="reflect"), (1, 3)),
    (lambda x: F.pad(x, (1, 1, 1, 0), mode="replicate"), (1, 2, 2)),
])
def test_second_derivatives_as_the_cpu(fn, shape):
    a = _data(shape, seed=4)
    results = []
    for device in ("cpu", "cuda"):
        x = numgrad.tensor(a, device=device, requires_grad=True)
        y = fn(x)
        g = numgrad.ones(tuple(y.shape), dtype=numgrad.float64, device=device,
                         requires_grad=True)
        (gx,) = numgrad.autograd.grad(y, x, g, create_graph=True)
        (gg,) = numgrad.autograd.grad((gx * gx).sum(), g)
        results.append((_host(gx), _host(gg)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)


def test_no_host_read_back_in_forward_and_backward(monkeypatch):
    """Pooling and padding run forward and backward with nothing copied to the host."""
    from numba.cuda.simulator.cudadrv import devicearray

    x = numgrad.tensor(_data((1, 2, 4, 4)), device="cuda", requires_grad=True)
    calls = []
    real = devicearray.FakeCUDAArray.copy_to_host

    def copy_to_host(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(devicearray.FakeCUDAArray, "copy_to_host", copy_to_host)
    y = (F.max_pool2d(x, 2, 1).sum() + F.avg_pool2d(x, 3, 1, 1).sum()
         + F.adaptive_avg_pool2d(x, 3).sum() + F.adaptive_max_pool2d(x, 3).sum()
         + F.pad(x, (1, 1, 1, 1), mode="reflect").sum() + F.pad(x, (1, 2)).sum()
         + F.pad(x, (2, 1, 0, 1), mode="replicate").sum())
    y.backward()
    assert calls == []
    monkeypatch.undo()
    assert x.grad.is_cuda
