"""Helpers shared by the simulator tests that compare CUDA with the CPU (imported by name from
the test files, which pytest runs with ``tests/cuda_sim/`` on ``sys.path``; named apart from
``tests/_helpers.py``, whose folder is on the path too): host copies, random data, the same
inputs on both devices, and one comparison of outputs, dtypes, node names and input
gradients."""
import numpy as np

import numgrad


def host(t):
    return t.detach().cpu().numpy()


def data(shape, dtype="float64", seed=0):
    """Random data of ``shape``: floats in [-2, 2), bools, or ints in [-9, 9)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.uniform(-1, 1, shape) > 0
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 9, shape).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def pair(shapes, dtype, seed=0):
    """The same uniform [-1, 1) inputs of ``shapes``, requiring grad, on the CPU and on CUDA."""
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]
    return ([numgrad.tensor(a, requires_grad=True) for a in arrays],
            [numgrad.tensor(a, device="cuda", requires_grad=True) for a in arrays])


def same(cpu, gpu, tol):
    """``gpu`` on CUDA with the CPU's shape, dtype and values (``tol``: assert_allclose's)."""
    assert gpu.is_cuda and gpu.shape == cpu.shape and gpu.dtype is cpu.dtype
    np.testing.assert_allclose(host(gpu), host(cpu), **tol)


# (the convolution tests' tolerances: the tiled GEMM sums in another order than the CPU's BLAS)
CONV_TOL = {"float64": dict(rtol=1e-7, atol=1e-9), "float32": dict(rtol=2e-5, atol=2e-5)}


def same_conv(cpu, gpu, dtype):
    """``same`` with ``CONV_TOL`` for ``dtype``."""
    same(cpu, gpu, CONV_TOL[dtype])


def on_both(fn, a, tols, grad=True, seed=0, with_device=True, backward_of=None,
            sequences=(tuple, list)):
    """``fn(x, device)`` (``fn(x)`` without ``with_device``) of the same data on the CPU and on
    CUDA: outputs, node names and the input gradients of the same vector-Jacobian product, over
    the outputs ``backward_of`` picks (default: those that require grad); ``tols`` by dtype
    name (exact for the others)."""
    outs, grads = [], []
    for device in ("cpu", "cuda"):
        x = numgrad.tensor(a, device=device, requires_grad=grad)
        out = fn(x, device) if with_device else fn(x)
        out = tuple(out) if isinstance(out, sequences) else (out,)
        outs.append(out)
        if grad:
            rng = np.random.default_rng(seed)
            pick = backward_of or (lambda o: o.requires_grad)
            picked = [o for o in out if pick(o)]
            seeds = [numgrad.tensor(rng.standard_normal(tuple(o.shape)).astype(a.dtype),
                                    device=device) for o in picked]
            numgrad.autograd.backward(picked, seeds)
            grads.append(host(x.grad))
    tol = tols.get(a.dtype.name, {"rtol": 0, "atol": 0})
    for c, g in zip(*outs):
        assert g.is_cuda and g.shape == c.shape and g.dtype is c.dtype
        np.testing.assert_allclose(host(g), host(c), **tol)
        assert (g.grad_fn is None) == (c.grad_fn is None)
        if c.grad_fn is not None:
            assert g.grad_fn.name() == c.grad_fn.name()
    if grad:
        np.testing.assert_allclose(grads[1], grads[0], **tol)
    return outs


def module_matches_cpu(net, x, tol):
    """``net`` (built on the CPU) moved to CUDA: the same output of ``x`` and the same parameter
    gradients of its sum as on the CPU."""
    c = net(x)
    c.sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    net.zero_grad()
    net.cuda()
    g = net(x.cuda())
    same(c, g, tol)
    g.sum().backward()
    for p, want in zip(net.parameters(), grads):
        np.testing.assert_allclose(host(p.grad), want, **tol)


def count_host_reads(monkeypatch):
    """Counts the simulator's copies to the host from now on (until ``monkeypatch.undo()``): the
    list it returns gets one entry per copy."""
    from numba.cuda.simulator.cudadrv import devicearray

    calls = []
    real = devicearray.FakeCUDAArray.copy_to_host

    def copy_to_host(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(devicearray.FakeCUDAArray, "copy_to_host", copy_to_host)
    return calls


def grad_of_grad_on_both(fn, a, with_device=True):
    """``(dL/dx, d|dL/dx|²/dg)`` of ``y = fn(x * x, device)`` (``fn(x * x)`` without
    ``with_device``), ``L = <g, y>`` with ``g`` all ones, on the CPU and on CUDA (host arrays)."""
    results = []
    for device in ("cpu", "cuda"):
        x = numgrad.tensor(a, device=device, requires_grad=True)
        y = fn(x * x, device) if with_device else fn(x * x)
        g = numgrad.ones(tuple(y.shape), dtype=numgrad.float64, device=device,
                         requires_grad=True)
        (gx,) = numgrad.autograd.grad(y, x, g, create_graph=True)
        (gg,) = numgrad.autograd.grad((gx * gx).sum(), g)
        results.append((host(gx), host(gg)))
    return results


def function_matches_cpu(fn, shapes, kw, dtype, tol):
    """``fn(*inputs, **kw)`` on the CPU and on CUDA: the same node name, values and, for one
    random seed gradient, the inputs' gradients; returns the CPU's output."""
    cpu, gpu = pair(shapes, dtype)
    c, g = fn(*cpu, **kw), fn(*gpu, **kw)
    assert g.grad_fn.name() == c.grad_fn.name()
    same(c, g, tol)
    seed = np.random.default_rng(1).standard_normal(tuple(c.shape)).astype(dtype)
    c.backward(numgrad.tensor(seed))
    g.backward(numgrad.tensor(seed, device="cuda"))
    for a, b in zip(cpu, gpu):
        same(a.grad, b.grad, tol)
    return c


def second_derivatives_on_both(pairs, build, node):
    """For each of ``pairs`` (the CPU's and CUDA's inputs): the gradients of ``sum(|dL/dts|²)``
    with ``L = sum(build(*ts)²)``, the first gradients recorded as ``node``."""
    results = []
    for ts in pairs:
        y = build(*ts)
        grads = numgrad.autograd.grad((y * y).sum(), ts, create_graph=True)
        assert grads[0].grad_fn.name() == node
        total = sum((g * g).sum() for g in grads)
        results.append(numgrad.autograd.grad(total, ts))
    return results
