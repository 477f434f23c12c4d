"""CUDA tests, run by tests/test_cuda.py in a subprocess with NUMBA_ENABLE_CUDASIM=1 (Numba's CUDA
simulator must be chosen before numba-cuda is imported, and the rest of the suite keeps the real
CPU Numba). Run by hand with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda_sim``.

The op cases come from the registry, as in tests/test_ops.py: each sample of each op that runs on
CUDA gives the same values, dtypes, node names and input gradients on CUDA as on the CPU.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import numgrad
from numgrad.ops import REGISTRY

from _cases import CPU_ONLY, case_id, cuda_cases

TOL = {"float64": dict(rtol=1e-7, atol=1e-9), "float32": dict(rtol=2e-5, atol=2e-6)}


def _inputs(sample, dtype, seed, device):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(sample.low, sample.high, size=s).astype(dtype) for s in sample.shapes]
    return [numgrad.tensor(a, device=device, requires_grad=sample.grad) for a in arrays]


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _host(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------ the registry-driven cases
def test_every_registered_op_runs_on_cuda():
    """Each primitive has a CUDA kernel but those listed in ``CPU_ONLY`` (with why), which are
    declared ``on_cuda = False`` and raise NotImplementedError on CUDA tensors, before their
    forward runs."""
    from numgrad.ops.registry import kernels_for

    assert sorted(name for name, op in REGISTRY.items() if not op.on_cuda) == sorted(CPU_ONLY)
    t = numgrad.ones(2, 3, device="cuda")
    for name in CPU_ONLY:
        with pytest.raises(NotImplementedError, match=f"{name} is not implemented for CUDA "
                                                      "tensors yet"):
            kernels_for((t,), REGISTRY[name])


@pytest.mark.parametrize("name, index, dtype", cuda_cases(), ids=[case_id(*c) for c in cuda_cases()])
def test_op_matches_cpu(name, index, dtype):
    sample = REGISTRY[name].samples[index]
    seed = 1000 + index
    cpu_in = _inputs(sample, dtype, seed, "cpu")
    cuda_in = _inputs(sample, dtype, seed, "cuda")
    cpu_out = _as_tuple(sample.call(numgrad, *cpu_in))
    cuda_out = _as_tuple(sample.call(numgrad, *cuda_in))
    for c, g in zip(cpu_out, cuda_out):
        assert g.shape == c.shape and g.dtype is c.dtype
        assert g.requires_grad == c.requires_grad
        assert (g.grad_fn is None) == (c.grad_fn is None)
        if c.grad_fn is not None:
            assert g.grad_fn.name() == c.grad_fn.name()
        np.testing.assert_allclose(_host(g), _host(c), err_msg="forward values", **TOL[dtype])
    if not sample.grad:
        return
    rng = np.random.default_rng(seed + 1)
    seeds = [rng.standard_normal(tuple(c.shape)).astype(c.dtype.name) for c in cpu_out]
    numgrad.autograd.backward(list(cpu_out), [numgrad.tensor(s) for s in seeds])
    numgrad.autograd.backward(list(cuda_out), [numgrad.tensor(s, device=o.device)
                                               for s, o in zip(seeds, cuda_out)])
    for c, g in zip(cpu_in, cuda_in):
        if c.grad is None:
            assert g.grad is None
            continue
        assert g.grad is not None and g.grad.device.type == "cuda" and g.grad.dtype is c.grad.dtype
        np.testing.assert_allclose(_host(g.grad), _host(c.grad), err_msg="input gradients", **TOL[dtype])


# ------------------------------------------------------------------ device plumbing
def test_is_available_and_synchronize():
    assert numgrad.cuda.is_available()
    assert numgrad.cuda.device_count() >= 1
    numgrad.cuda.synchronize()


@pytest.mark.parametrize("make", [
    lambda d: numgrad.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
    lambda d: numgrad.zeros(2, 3, device=d),
    lambda d: numgrad.ones((2, 3), dtype=numgrad.float64, device=d),
    lambda d: numgrad.full((2,), 7, device=d),
    lambda d: numgrad.arange(5, device=d),
    lambda d: numgrad.rand(3, device=d),
    lambda d: numgrad.randn(3, 2, device=d),
    lambda d: numgrad.zeros_like(numgrad.ones(2), device=d),
    lambda d: numgrad.ones_like(numgrad.ones(2, device=d)),
    lambda d: numgrad.full_like(numgrad.ones(2, device=d), 3.0),
    lambda d: numgrad.empty(4, device=numgrad.device(d)),
], ids=["tensor", "zeros", "ones", "full", "arange", "rand", "randn", "zeros_like", "ones_like",
        "full_like", "empty"])
def test_creation_on_cuda(make):
    t = make("cuda")
    assert t.device == numgrad.device("cuda", 0) and t.is_cuda
    assert repr(t.device) == "device(type='cuda', index=0)" and str(t.device) == "cuda:0"
    host = t.cpu()
    assert host.device.type == "cpu" and host.shape == t.shape and host.dtype is t.dtype


def test_creation_values():
    numgrad.manual_seed(3)
    a = numgrad.randn(4, 5, device="cuda")
    numgrad.manual_seed(3)
    b = numgrad.randn(4, 5)
    np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())
    np.testing.assert_array_equal(numgrad.arange(5, device="cuda").cpu().numpy(), np.arange(5))
    assert numgrad.full((2,), 7, device="cuda").tolist() == [7, 7]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_draws_on_cuda_are_the_cpus_and_advance_the_generator_alike(dtype, monkeypatch):
    """The CUDA Philox kernels (drawing on the device: the CPU's loops are not called) make the
    CPU's uniforms bit for bit (and, in the simulator, its normals), from the same state, which
    they advance by the same counters; fills and dropout masks are the CPU's too."""
    from numgrad.kernels.cpu import philox

    dt = getattr(numgrad, dtype)

    def draws(device):
        numgrad.manual_seed(11)
        out = [numgrad.rand(1001, dtype=dt, device=device),
               numgrad.randn(3, 5, dtype=dt, device=device),
               numgrad.normal(2.0, 3.0, (7,), dtype=dt, device=device),
               numgrad.empty(9, dtype=dt, device=device).uniform_(-1, 2),
               numgrad.empty(9, dtype=dt, device=device).bernoulli_(0.3),
               numgrad.nn.functional.dropout(numgrad.ones(33, dtype=dt, device=device), 0.4),
               numgrad.empty(0, dtype=dt, device=device).normal_()]
        assert all(t.device.type == device for t in out)
        return [t.cpu().numpy() for t in out], numgrad.get_rng_state().numpy()

    for loop in ("_uniform32", "_uniform64", "_normal32", "_normal64"):
        monkeypatch.setattr(philox, loop, None)  # (a call of it raises)
    on_cuda, cuda_state = draws("cuda")
    monkeypatch.undo()
    on_cpu, cpu_state = draws("cpu")
    for a, b in zip(on_cuda, on_cpu):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    np.testing.assert_array_equal(cuda_state, cpu_state)


def test_to_cuda_cpu_round_trip():
    x = numgrad.tensor([1.0, -2.0, 3.5])
    for y in (x.to("cuda"), x.cuda(), x.to(device="cuda:0"), x.to(numgrad.device("cuda"))):
        assert y.device.type == "cuda"
        assert y.to("cpu").tolist() == [1.0, -2.0, 3.5]
        assert y.cuda() is y and y.to("cuda") is y
    assert x.cpu() is x and x.to("cpu") is x
    y = x.to("cuda", numgrad.float64)
    assert y.dtype is numgrad.float64 and y.device.type == "cuda"
    z = numgrad.ones(2, device="cuda").to(x)  # to(other): its dtype and device
    assert z.device.type == "cpu"


def test_gradients_flow_across_devices():
    x = numgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.cuda()
    assert y.grad_fn.name() == "ToCopyBackward0"
    z = (y * y).sum().cpu()
    assert z.grad_fn.name() == "ToCopyBackward0" and z.device.type == "cpu"
    z.backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_issue_example_matches_cpu():
    numgrad.manual_seed(0)
    x = numgrad.randn(3, 4, device="cuda", requires_grad=True)
    (x.tanh() * x.sigmoid() + 2).mean().backward()
    assert x.grad.device.type == "cuda" and x.grad.is_leaf
    xc = x.detach().cpu().requires_grad_()
    (xc.tanh() * xc.sigmoid() + 2).mean().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=2e-5, atol=1e-7)


def test_gradient_accumulates_on_cuda():
    x = numgrad.ones(3, device="cuda", requires_grad=True)
    for _ in range(3):
        (x * 2).sum().backward()
    assert x.grad.device.type == "cuda" and x.grad.tolist() == [6.0, 6.0, 6.0]


def test_broadcast_gradient_is_reduced_on_cuda():
    a = numgrad.ones(3, 1, device="cuda", requires_grad=True)
    b = numgrad.ones(1, 4, device="cuda", dtype=numgrad.float64, requires_grad=True)
    (a * b).sum().backward()  # the result is float64: a's gradient is cast back to float32
    assert a.grad.shape == (3, 1) and a.grad.dtype is numgrad.float32 and a.grad.tolist() == [[4.0]] * 3
    assert b.grad.shape == (1, 4) and b.grad.tolist() == [[3.0] * 4]


def test_mixed_devices_raise():
    a, b = numgrad.ones(2), numgrad.ones(2, device="cuda")
    message = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    for f in (lambda: a + b, lambda: b * a, lambda: numgrad.where(b > 0, a, b)):
        with pytest.raises(RuntimeError, match=re.escape(message)):
            f()


def test_host_conversions():
    t = numgrad.tensor([[1.5, 2.0]], device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy. Use "
                                        r"Tensor.cpu\(\) to copy the tensor to host memory first."):
        t.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(t)
    assert t.tolist() == [[1.5, 2.0]]
    assert t.sum().item() == 3.5 and float(t.sum()) == 3.5
    assert repr(t) == "tensor([[1.5000, 2.0000]], device='cuda:0')"
    r = numgrad.ones(2, device="cuda", requires_grad=True) * 2
    assert repr(r) == "tensor([2., 2.], device='cuda:0', grad_fn=<MulBackward0>)"


def test_an_op_not_ported_to_cuda_says_so():
    """Every registered op runs on CUDA now; the guard for an op declared
    with ``on_cuda = False`` still gives a clear error, before its forward runs."""
    from numgrad.ops.registry import Op, apply

    class HostOnly(Op):
        name, node = "host_only", "HostOnlyBackward0"

        @staticmethod
        def forward(K, a):
            raise AssertionError("the forward of a CPU-only op ran on CUDA")

    t = numgrad.ones(2, 3, device="cuda")
    with pytest.raises(NotImplementedError, match="host_only is not implemented for CUDA tensors yet"):
        apply(HostOnly, (t,), (t._data,))


def test_cuda_kernels_directly():
    from numgrad.kernels import cuda as K

    a = K.upload(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = K.upload(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(K.to_host(K.binary(K.ADD, a, b)), np.arange(6).reshape(2, 3) + [1, 2, 3])
    np.testing.assert_array_equal(K.to_host(K.binary(K.RSUB, a, np.float32(1))), 1 - np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(K.to_host(K.binary(K.SUB, np.float32(1), a)), 1 - np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(K.to_host(K.binary(K.LT, a, b, np.bool_)), np.arange(6).reshape(2, 3) < [1, 2, 3])
    np.testing.assert_array_equal(K.to_host(K.sum_dims(a, (0,), False)), [3, 5, 7])
    np.testing.assert_array_equal(K.to_host(K.sum_dims(a, (0, 1), True)), [[15]])
    x3 = K.upload(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
    np.testing.assert_array_equal(K.to_host(K.sum_dims(x3, (0, 2), False)),
                                  np.arange(24).reshape(2, 3, 4).sum((0, 2)))
    K.binary_into(K.MUL, a, b)
    np.testing.assert_array_equal(K.to_host(a), np.arange(6).reshape(2, 3) * [1, 2, 3])
    e = K.unary(K.EXP, K.upload(np.zeros(0, np.float32)))
    assert e.shape == (0,)


# ------------------------------------------------------------------ numpy 2.5 and numba-cuda
_WITHOUT_ROW_STACK = """
import numpy as np
if hasattr(np, "row_stack"):
    del np.row_stack  # numpy 2.5 removed it
{body}
"""


def _run(body: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    return subprocess.run([sys.executable, "-c", _WITHOUT_ROW_STACK.format(body=body)],
                          env=env, capture_output=True, text=True, timeout=300)


def test_numba_cuda_needs_row_stack_without_the_shim():
    # The control: numba-cuda's array overloads (loaded to compile kernels) fail without it.
    result = _run("import numba.cuda.np.arrayobj")
    assert result.returncode != 0 and "row_stack" in result.stderr


def test_row_stack_shim_makes_numba_cuda_work():
    result = _run(
        "import numgrad\n"
        "assert numgrad.cuda.is_available()\n"
        "assert np.row_stack is np.vstack\n"
        "import numba.cuda.np.arrayobj\n"
        "x = numgrad.ones(3, device='cuda', requires_grad=True)\n"
        "(x * 2).sum().backward()\n"
        "assert x.grad.tolist() == [2.0, 2.0, 2.0]\n"
    )
    assert result.returncode == 0, result.stderr
