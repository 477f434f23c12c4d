"""Structure ops on CUDA in the simulator (run with tests/cuda_sim, see test_cuda_sim.py): tril/triu,
diagonals (the view, its write-through and its backward), diag_embed, trace, flip and roll, and the
composed ops (repeat_interleave with a CUDA count tensor, take_along_dim, meshgrid, the *stack
family, outer, movedim, unflatten) against the CPU: values, dtypes, node names and input
gradients; integer and bool inputs, 0-d, empty and non-contiguous ones; second derivatives; no
host read-back in the kernels' forward and backward. Shapes stay small: the simulator runs each
thread as Python."""
import numpy as np
import pytest
from _sim_helpers import count_host_reads, grad_of_grad_on_both, on_both
from _sim_helpers import data as _data
from _sim_helpers import host as _host

import numgrad

TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}


def _on_both(fn, a, grad=True, seed=0):
    """``fn(x, device)`` of the same data on the CPU and on CUDA: outputs, node names and the
    input gradients of the same vector-Jacobian product."""
    return on_both(fn, a, TOL, grad, seed, backward_of=lambda o: True)


def _i(values, device):
    return numgrad.tensor(values, device=device)


CASES = [
    (lambda x, d: x.tril(), (3, 4)),
    (lambda x, d: numgrad.triu(x.transpose(-1, -2), -1), (2, 4, 3)),
    (lambda x, d: x.diagonal(1), (3, 4)),
    (lambda x, d: numgrad.diagonal(x.permute(2, 0, 1), -1, 0, 2), (2, 3, 4)),
    (lambda x, d: numgrad.diag(x, -1), (3, 4)),
    (lambda x, d: numgrad.diag(x, 1), (3,)),
    (lambda x, d: numgrad.diag_embed(x, -1, 0, 2), (2, 3)),
    (lambda x, d: x.t().trace(), (2, 3)),
    (lambda x, d: x.flip(0, -1), (2, 3, 2)),
    (lambda x, d: numgrad.fliplr(x.t()), (3, 4)),
    (lambda x, d: x.roll(-5), (3, 4)),
    (lambda x, d: numgrad.roll(x.t(), (1, 3), (0, 1)), (3, 4)),
    (lambda x, d: x.repeat_interleave(_i([2, 0, 1], d), dim=0), (3, 2)),
    (lambda x, d: x.repeat_interleave(2, dim=-1), (2, 3)),
    (lambda x, d: numgrad.take_along_dim(x, _i([[0, 3], [2, 2], [1, 0]], d), -1), (3, 4)),
    (lambda x, d: numgrad.take_along_dim(x.t(), _i([5, 0, 11], d)), (3, 4)),
    (lambda x, d: numgrad.meshgrid(x[0], x[1, :2], indexing="xy"), (2, 3)),
    (lambda x, d: numgrad.hstack([x, x[:, :1]]), (2, 3)),
    (lambda x, d: numgrad.column_stack([x[0], x.t()]), (3, 3)),
    (lambda x, d: numgrad.outer(x[0], x[1]), (2, 3)),
    (lambda x, d: x.movedim(0, -1).unflatten(0, (2, 2)), (3, 4)),
    (lambda x, d: x.tile(2, 1), (2, 3)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_structure_op_matches_cpu(index, dtype):
    fn, shape = CASES[index]
    _on_both(fn, _data(shape, dtype, index))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_structure_ops_on_integers_and_bools_as_the_cpu(dtype):
    a = _data((3, 4), dtype, 1)
    for fn in (lambda x, d: x.triu(1), lambda x, d: x.tril(-1), lambda x, d: x.flip(1),
               lambda x, d: x.roll((1, -1), (0, 1)), lambda x, d: x.diagonal(),
               lambda x, d: numgrad.diag_embed(x), lambda x, d: numgrad.diag(x, 1)):
        _on_both(fn, a, grad=False)
    if dtype != "bool":
        _on_both(lambda x, d: x.trace(), a, grad=False)


def test_structure_ops_on_zero_dim_and_empty_as_the_cpu():
    _on_both(lambda x, d: x.flip(0), _data(()))
    _on_both(lambda x, d: x.roll(3), _data(()))
    _on_both(lambda x, d: x.roll(1, 0), _data((0, 3)))
    _on_both(lambda x, d: x.tril(), _data((0, 3)))
    _on_both(lambda x, d: x.diagonal(4), _data((2, 3)))
    _on_both(lambda x, d: numgrad.diag(x), _data((0,)))


def test_the_diagonal_is_a_view_of_the_device_memory():
    x = numgrad.tensor(_data((3, 4)), device="cuda")
    v = x.diagonal(1)
    assert v._base is x
    v.mul_(0)
    want = _data((3, 4))
    want[[0, 1, 2], [1, 2, 3]] = 0
    np.testing.assert_array_equal(_host(x), want)


@pytest.mark.parametrize("fn, shape", [
    (lambda x: x.tril(1), (3, 3)), (lambda x: x.diagonal(-1), (3, 3)),
    (lambda x: numgrad.diag_embed(x), (2, 2)), (lambda x: x.trace() * x, (2, 2)),
    (lambda x: x.flip(1).roll(1, 0), (2, 3)),
])
def test_structure_second_derivatives_as_the_cpu(fn, shape):
    a = _data(shape, seed=4)
    results = grad_of_grad_on_both(fn, a, with_device=False)
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)


def test_structure_ops_read_nothing_back_in_forward_and_backward(monkeypatch):
    """The kernels' ops run forward and backward with nothing copied to the host."""
    x = numgrad.tensor(_data((3, 4)), device="cuda", requires_grad=True)
    calls = count_host_reads(monkeypatch)
    y = (x.tril().sum() + x.triu(1).sum() + x.diagonal().sum() + numgrad.diag(x).sum()
         + numgrad.diag_embed(x).sum() + x.trace() + x.flip(0).sum() + x.roll(1).sum()
         + x.roll((1, 2), (0, 1)).sum())
    y.backward()
    assert calls == []
    monkeypatch.undo()
    assert x.grad.is_cuda
