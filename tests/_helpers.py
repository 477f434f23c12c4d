"""Helpers shared by the tests that compare numgrad with PyTorch (imported by name from the test
files, which pytest runs with ``tests/`` on ``sys.path``): random data, the node names under an
output, one comparison of values, dtypes, node names and input gradients, and the exception a
call raises."""
import numpy as np
import torch

import numgrad


def data(rng, shape, dtype="float64"):
    """Random data of ``shape`` from ``rng``: floats in [-2, 2), bools, or ints in [-5, 5)."""
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    if dtype == "bool":
        return rng.uniform(-1, 1, shape) > 0
    return rng.integers(-5, 5, shape).astype(dtype)


def names(t, depth=2):
    """The node names under ``t`` down to ``depth`` levels (PyTorch's graph shape)."""
    return names_of(t.grad_fn, depth)


def names_of(fn, depth):
    if fn is None or depth == 0:
        return None
    return (type(fn).__name__, tuple(names_of(f, depth - 1) for f, _ in fn.next_functions))


def outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(rng, f, *arrays, grad=None, depth=2):
    """Values, dtypes, node names and input gradients of ``f(module, *tensors)`` (the gradients
    of one vector-Jacobian product, its seeds drawn from ``rng``); float arrays only require
    grad, and ``grad`` defaults to whether all arrays are floats."""
    if grad is None:
        grad = all(np.asarray(a).dtype.kind == "f" for a in arrays)
    ours = [numgrad.tensor(a, requires_grad=grad and np.asarray(a).dtype.kind == "f")
            for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad and np.asarray(a).dtype.kind == "f")
              for a in arrays]
    out, tout = f(numgrad, *ours), f(torch, *theirs)
    outs, touts = outputs(out), outputs(tout)
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert tuple(o.shape) == tuple(t.shape)
        assert o.dtype.name == str(t.dtype).removeprefix("torch."), (o.dtype, t.dtype)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)
        assert o.requires_grad == t.requires_grad
        assert names(o, depth) == names(t, depth)
    if not grad:
        return outs, touts
    pairs = [(o, t) for o, t in zip(outs, touts) if t.requires_grad]
    seeds = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    numgrad.autograd.backward([o for o, _ in pairs],
                              [numgrad.tensor(s.astype(o.dtype.name)) for s, (o, _) in
                               zip(seeds, pairs)])
    torch.autograd.backward([t for _, t in pairs],
                            [torch.tensor(s, dtype=t.dtype) for s, (_, t) in zip(seeds, pairs)])
    for o, t in zip(ours, theirs):
        if t.grad is None:
            assert o.grad is None
        else:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
    return outs, touts


def raised(call, by_name=True):
    """``(type, message)`` of the exception ``call()`` raises (the type's name with
    ``by_name``), or None."""
    try:
        call()
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__ if by_name else type(e)), str(e)
    return None


def both_raise(f, *arrays):
    """The exceptions ``f(numgrad, *tensors)`` and ``f(torch, *tensors)`` raise (asserted to
    raise), as ``(ours, theirs)``."""
    import pytest

    ours = [numgrad.tensor(a) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    with pytest.raises(Exception) as expected:
        f(torch, *theirs)
    with pytest.raises(Exception) as got:
        f(numgrad, *ours)
    return got.value, expected.value
