"""The registry-driven harness: every registered op, every sample, checked the same way.

For each sample of each op: values and dtypes against PyTorch in float64 and float32, the node name
against PyTorch's, the input gradients of a random vector-Jacobian product against PyTorch's, a
float64 finite-difference gradcheck and, where declared twice differentiable, gradgradcheck.
Registering an op adds it here; an op without samples fails ``test_every_op_has_samples``.
"""
import numpy as np
import pytest
import torch

import numgrad
from numgrad.ops import REGISTRY


class _TorchNamespace:
    """``torch`` as the samples see it: ``m.ops.X`` is ATen's ``X`` (the backward ops)."""

    ops = torch.ops.aten

    def __getattr__(self, name):
        return getattr(torch, name)


TORCH = _TorchNamespace()
CASES = [
    pytest.param(op, i, id=f"{name}-{i}")
    for name, op in sorted(REGISTRY.items())
    for i in range(len(op.samples))
]
GRAD_CASES = [c for c in CASES if c.values[0].samples[c.values[1]].grad]
GRADGRAD_CASES = [c for c in GRAD_CASES if c.values[0].samples[c.values[1]].gradgrad]
TOL = {"float64": dict(rtol=1e-7, atol=1e-9), "float32": dict(rtol=2e-5, atol=2e-6)}


def test_every_op_has_samples():
    missing = [name for name, op in REGISTRY.items() if not op.samples]
    assert not missing, f"ops without test samples: {missing}"


def test_every_differentiable_op_is_gradchecked():
    checked = {c.values[0].name for c in GRAD_CASES}
    differentiable = {name for name, op in REGISTRY.items() if op.differentiable}
    assert differentiable <= checked, differentiable - checked


def _inputs(sample, dtype: str, seed: int):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(sample.low, sample.high, size=s).astype(dtype) for s in sample.shapes]
    grad = sample.grad
    ours = [numgrad.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    return ours, theirs


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _assert_close(ours, theirs, dtype, what):
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), err_msg=what, **TOL[dtype]
    )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op, index", CASES)
def test_matches_pytorch(op, index, dtype):
    sample = op.samples[index]
    seed = 1000 + index
    ours_in, theirs_in = _inputs(sample, dtype, seed)
    ours_out = _as_tuple(sample.call(numgrad, *ours_in))
    theirs_out = _as_tuple(sample.call(TORCH, *theirs_in))
    assert len(ours_out) == len(theirs_out)
    for o, t in zip(ours_out, theirs_out):
        assert tuple(o.shape) == tuple(t.shape)
        assert o.dtype.name == str(t.dtype).removeprefix("torch."), (o.dtype, t.dtype)
        _assert_close(o, t, dtype, "forward values")
        assert o.requires_grad == t.requires_grad
        if t.grad_fn is not None:
            assert o.grad_fn.name() == t.grad_fn.name()
    if not sample.grad:
        return
    rng = np.random.default_rng(seed + 1)
    seeds = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in theirs_out]
    numgrad.autograd.backward(list(ours_out), [numgrad.tensor(s) for s in seeds])
    torch.autograd.backward(list(theirs_out), [torch.tensor(s) for s in seeds])
    for o, t in zip(ours_in, theirs_in):
        if t.grad is None:
            assert o.grad is None
        else:
            assert o.grad is not None and o.grad.dtype.name == dtype
            _assert_close(o.grad, t.grad, dtype, "input gradients")


@pytest.mark.parametrize("op, index", GRAD_CASES)
def test_gradcheck(op, index):
    sample = op.samples[index]
    ours, _ = _inputs(sample, "float64", 2000 + index)
    assert numgrad.autograd.gradcheck(
        lambda *xs: sample.call(numgrad, *xs), ours, eps=sample.eps, atol=sample.atol
    )


@pytest.mark.parametrize("op, index", GRADGRAD_CASES)
def test_gradgradcheck(op, index):
    sample = op.samples[index]
    ours, _ = _inputs(sample, "float64", 3000 + index)
    assert numgrad.autograd.gradgradcheck(
        lambda *xs: sample.call(numgrad, *xs), ours, eps=sample.eps, atol=sample.atol
    )
