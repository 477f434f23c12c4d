"""Indexing, utility and counting ops on CUDA in the simulator (run with tests/cuda_sim, see
test_cuda_sim.py): unbind/select/tensor_split (views of the device memory), index_add/index_copy/
index_fill (CUDA index tensors, in place too), take, masked_scatter, the composed ops (diff,
tensordot, kron, cartesian_prod, combinations), baddbmm, addmv, block_diag, cummax/cummin (NaN
included), logcumsumexp, searchsorted/bucketize (2-D boundaries, sorter), bincount (weights),
histc, one_hot and triu_indices on the device, against the CPU: values, dtypes, node names and
input gradients; integer inputs, 0-d, empty and non-contiguous ones; second derivatives; indices
out of range reported at the next sync. Shapes stay small: the simulator runs each thread as
Python."""
import numpy as np
import pytest
from _sim_helpers import count_host_reads, grad_of_grad_on_both, on_both
from _sim_helpers import data as _data
from _sim_helpers import host as _host

import numgrad

TOL = {"float64": {"rtol": 1e-12, "atol": 1e-12}, "float32": {"rtol": 1e-5, "atol": 1e-6}}


def _on_both(fn, a, grad=True, seed=0):
    """``fn(x, device)`` of the same data on the CPU and on CUDA: outputs, node names and the
    input gradients of the same vector-Jacobian product."""
    return on_both(fn, a, TOL, grad, seed)


def _i(values, device, dtype=None):
    return numgrad.tensor(values, device=device, dtype=dtype)


def _like(x, values):
    return numgrad.tensor(np.asarray(values, dtype=x.dtype.name), device=x.device)


CASES = [
    (lambda x, d: x.unbind(1), (2, 3)),
    (lambda x, d: x.t().select(0, -1), (2, 3)),
    (lambda x, d: numgrad.tensor_split(x, _i([1, 3], d), dim=1), (2, 4)),
    (lambda x, d: x.index_add(0, _i([2, 0, 2], d), x[:3] * 2, alpha=-1), (3, 2)),
    (lambda x, d: x.t().index_copy(1, _i([1, 0], d, numgrad.int64), x[:2].t() + 1), (3, 2)),
    (lambda x, d: x.index_fill(1, _i([0, -1], d), 2.5), (2, 3)),
    (lambda x, d: x.index_fill(0, _i([1], d), x[0, 0]), (2, 3)),
    (lambda x, d: (x * 1).index_add_(1, _i([0, 0], d), x[:, 1:]), (2, 3)),
    (lambda x, d: x.take(_i([[0, 5], [-1, 2]], d)), (2, 3)),
    (lambda x, d: x.t().masked_scatter(x.t() > 0, x.reshape(-1) * 3), (2, 3)),
    (lambda x, d: (x * 1).masked_scatter_(_i([True, False, True], d), x.flip(0)), (2, 3)),
    (lambda x, d: numgrad.diff(x, n=2, dim=0, prepend=x[:1]), (3, 2)),
    (lambda x, d: numgrad.tensordot(x, x.t(), dims=1), (2, 3)),
    (lambda x, d: numgrad.kron(x, x[0]), (2, 2)),
    (lambda x, d: numgrad.cartesian_prod(x[0], x[1, :2]), (2, 3)),
    (lambda x, d: numgrad.combinations(x, 2, with_replacement=True), (3,)),
    (lambda x, d: numgrad.baddbmm(x[0, :1, :2], x, x.transpose(1, 2), beta=0.5), (2, 2, 3)),
    (lambda x, d: numgrad.addmv(x[:, 0], x, x[0], alpha=2), (3, 3)),
    (lambda x, d: numgrad.block_diag(x, x[0], x[0, 0]), (2, 3)),
    (lambda x, d: x.cummax(1), (2, 4)),
    (lambda x, d: x.t().cummin(0), (2, 3)),
    (lambda x, d: x.logcumsumexp(-1), (2, 4)),
    (lambda x, d: x.t().logcumsumexp(0), (3, 2)),
    (lambda x, d: x.cummax(0), ()),
    (lambda x, d: x.logcumsumexp(0), (0, 2)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_op_matches_cpu(index, dtype):
    fn, shape = CASES[index]
    _on_both(fn, _data(shape, dtype, index))


def test_running_extremes_with_nan_as_the_cpu():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, -1.0, 5.0]])
    _on_both(lambda x, d: x.cummax(1), a, grad=False)
    _on_both(lambda x, d: x.cummin(-1), a, grad=False)
    b = np.array([[0.0, -np.inf, np.inf, 1.0], [-np.inf, -np.inf, 1.0, np.nan]])
    _on_both(lambda x, d: x.logcumsumexp(1), b, grad=False)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_and_bool_inputs_as_the_cpu(dtype):
    a = _data((3, 4), dtype, 2)
    for fn in (lambda x, d: x.cummax(1), lambda x, d: x.cummin(0), lambda x, d: x.unbind(0),
               lambda x, d: x.take(_i([0, 11], d)), lambda x, d: x.index_fill(0, _i([1], d), 1),
               lambda x, d: x.index_copy(1, _i([0], d), x[:, 3:]),
               lambda x, d: numgrad.block_diag(x, x[0])):
        _on_both(fn, a, grad=False)
    if dtype != "bool":
        _on_both(lambda x, d: x.index_add(0, _i([2, 2], d), x[:2]), a, grad=False)


def test_counting_and_searching_as_the_cpu():
    x = _data((3, 4), seed=3)
    bounds = [-1.0, 0.0, 0.5, 1.0]
    for fn in (lambda x, d: numgrad.searchsorted(_like(x, bounds), x),
               lambda x, d: numgrad.searchsorted(_like(x, bounds), x.t(), right=True,
                                                 out_int32=True),
               lambda x, d: numgrad.searchsorted(x.sort(-1).values, x[:, :2] * 0.5),
               lambda x, d: numgrad.searchsorted(_like(x, [1.0, -1, 0.5, 0]), x,
                                                 sorter=_i([1, 3, 2, 0], d)),
               lambda x, d: numgrad.bucketize(x, _like(x, bounds), right=True),
               lambda x, d: numgrad.searchsorted(_like(x, bounds), 0.25),
               lambda x, d: numgrad.bincount(_i([0, 2, 2, 5], d)),
               lambda x, d: numgrad.bincount(_i([1, 1, 0], d), x[0, :3], minlength=4),
               lambda x, d: numgrad.bincount(_i([1, 1, 0], d), x[0, :3].float()),
               lambda x, d: numgrad.bincount(_i([], d, numgrad.int64)),
               lambda x, d: x.histc(),
               lambda x, d: x.t().float().histc(bins=5, min=-1, max=1.5),
               lambda x, d: numgrad.nn.functional.one_hot(_i([[0], [3]], d)),
               lambda x, d: numgrad.nn.functional.one_hot(_i([1, 0], d), 3)):
        _on_both(fn, x, grad=False)
    for name in ("triu_indices", "tril_indices"):
        cpu = getattr(numgrad, name)(3, 4, 1)
        gpu = getattr(numgrad, name)(3, 4, 1, device="cuda")
        assert gpu.is_cuda and gpu.dtype is cpu.dtype
        np.testing.assert_array_equal(_host(gpu), _host(cpu))


def test_unbind_and_select_are_views_of_the_device_memory():
    x = numgrad.tensor(_data((3, 4)), device="cuda")
    parts = x.unbind(1)
    assert parts[2]._base is x
    parts[2].mul_(0)
    x.select(0, 1).fill_(7)
    want = _data((3, 4))
    want[:, 2] = 0
    want[1] = 7
    np.testing.assert_array_equal(_host(x), want)


@pytest.mark.parametrize("fn, shape", [
    (lambda x, d: x.index_add(0, _i([1, 1], d), x), (2, 2)),
    (lambda x, d: x.logcumsumexp(1), (2, 3)),
    (lambda x, d: numgrad.baddbmm(x, x, x), (1, 2, 2)),
    (lambda x, d: numgrad.block_diag(x, x.t()), (2, 2)),
])
def test_second_derivatives_as_the_cpu(fn, shape):
    a = _data(shape, seed=4)
    results = grad_of_grad_on_both(fn, a)
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)


def test_an_index_out_of_range_is_reported_at_the_next_sync():
    x = numgrad.tensor(_data((3, 2)), device="cuda")
    y = x.index_add(0, numgrad.tensor([0, 7], device="cuda"), x[:2])
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        y.cpu()


def test_the_kernels_ops_read_nothing_back_in_forward_and_backward(monkeypatch):
    """With CUDA index tensors, these ops run forward and backward with nothing copied to the
    host (bincount, histc without a range, one_hot and masked_scatter read values, as PyTorch's)."""
    x = numgrad.tensor(_data((3, 4)), device="cuda", requires_grad=True)
    i = numgrad.tensor([2, 0], device="cuda")
    b = numgrad.tensor([-1.0, 0.0, 1.0], dtype=numgrad.float64, device="cuda")
    calls = count_host_reads(monkeypatch)
    y = (x.index_add(0, i, x[:2]).sum() + x.index_copy(0, i, x[1:]).sum()
         + x.index_fill(1, i, 1.5).sum() + x.take(i).sum() + sum(p.sum() for p in x.unbind(1))
         + x.cummax(1).values.sum() + x.cummin(0).values.sum() + x.logcumsumexp(1).sum()
         + numgrad.baddbmm(x[None, :, :3], x[None], x.t()[None]).sum()
         + numgrad.addmv(x[:, 0], x, x[0]).sum() + numgrad.block_diag(x, x[0]).sum()
         + numgrad.searchsorted(b, x.detach()).sum() + x.histc(4, -1, 1).sum())
    y.backward()
    assert calls == []
    monkeypatch.undo()
    assert x.grad.is_cuda
