"""No host round-trips inside forward or backward on CUDA (issue 5): indexing by CUDA index
tensors runs with the indices on the device (checked there, reported at the next sync), and host
data goes into numgrad's memory pool. Run in Numba's CUDA simulator with the rest of
tests/cuda_sim (see test_cuda_sim.py)."""
import contextlib

import numpy as np
import pytest
from numba import cuda
from numba.cuda.simulator.cudadrv import devicearray as simarray

import numgrad

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 5, 6)).astype(np.float32)


def _dev(v):
    return numgrad.tensor(v, device="cuda")


# Each case indexes a (4, 5, 6) tensor ``t``; ``m`` makes an index tensor (CPU or CUDA).
CASES = {
    "negative": lambda m, t: t[m(np.array([0, -1, 2, 2, -4]))],
    "2d index": lambda m, t: t[:, m(np.array([[0, 1], [-5, 4]]))],
    "separated": lambda m, t: t[m(np.array([1, 0, 3])), 1:, m(np.array([5, -6, 0]))],
    "broadcast": lambda m, t: t[m(np.array([[1], [2]])), None, m(np.array([0, 3, 4]))],
    "adjacent broadcast": lambda m, t: t[:, m(np.array([[1], [2]])), m(np.array([0, 3, 4]))],
    "strided view": lambda m, t: t.transpose(0, 2)[m(np.array([1, 1])), :, m(np.array([3, 0]))],
    "expanded index": lambda m, t: t[m(np.array([0, 2])).expand(3, 2)],
    "int32": lambda m, t: t[m(np.array([1, -2], dtype=np.int32))],
    "mask": lambda m, t: t[m(A[:, 0, 0] > 0)],
    "2d mask": lambda m, t: t[m(A[:, :, 0] > 0)],
    "mask and index": lambda m, t: t[1, m(A[1, :, 0] > 0), m(np.array([2]))],
    "empty index": lambda m, t: t[m(np.zeros(0, np.int64))],
}


@pytest.mark.parametrize("case", CASES)
def test_indexing_by_cuda_indices_matches_the_cpu(case):
    index = CASES[case]
    x = numgrad.tensor(A, device="cuda", requires_grad=True)
    xc = numgrad.tensor(A, requires_grad=True)
    want = index(numgrad.tensor, xc)
    got = index(_dev, x)
    assert got.device.type == "cuda" and got.shape == want.shape
    np.testing.assert_array_equal(got.detach().cpu().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(index(numgrad.tensor, x).detach().cpu().numpy(),
                                  want.detach().numpy())  # CPU indices on a CUDA tensor
    w = RNG.standard_normal(tuple(want.shape)).astype(np.float32)
    (want * numgrad.tensor(w)).sum().backward()
    (got * _dev(w)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_index_put_with_cuda_indices_matches_the_cpu():
    idx = np.array([0, 2, -4, 2, 3])
    for accumulate in (False, True):
        for make in (numgrad.tensor, _dev):
            x = numgrad.zeros(4, 3, device="cuda")
            v = np.arange(15, dtype=np.float32).reshape(5, 3)
            x.index_put_((make(idx),), _dev(v), accumulate=accumulate)
            xc = numgrad.zeros(4, 3)
            xc.index_put_((numgrad.tensor(idx),), numgrad.tensor(v), accumulate=accumulate)
            if accumulate:  # (without it, the winner among duplicates is unspecified)
                np.testing.assert_array_equal(x.cpu().numpy(), xc.numpy())
            else:
                np.testing.assert_array_equal(x.cpu().numpy()[[1, 3]], xc.numpy()[[1, 3]])
    # two index tensors, broadcast, duplicates accumulating
    x = numgrad.zeros(3, 4, device="cuda", dtype=numgrad.float64)
    x.index_put_((_dev(np.array([[0], [2], [0]])), _dev(np.array([1, -1]))),
                 numgrad.ones(3, 2, device="cuda", dtype=numgrad.float64), accumulate=True)
    expected = np.zeros((3, 4))
    np.add.at(expected, (np.array([[0], [2], [0]]), np.array([1, -1])), 1.0)
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    # bools accumulate as "or" (the CPU's and PyTorch's result), repeated indices included
    for device in ("cuda", "cpu"):
        b = numgrad.zeros(4, dtype=numgrad.bool, device=device)
        b.index_put_((numgrad.tensor([0, 0, 2, 3, 3], device=device),),
                     numgrad.tensor([True, False, True, False, False], device=device),
                     accumulate=True)
        assert b.cpu().tolist() == [True, False, True, False]
    # setitem with a CUDA mask and with CUDA indices through a view
    y = numgrad.tensor(A.copy(), device="cuda")
    y[_dev(A > 0)] = 0.0
    y[1][_dev(np.array([0, -1]))] = 7.0
    yc = A.copy()
    yc[yc > 0] = 0
    yc[1][[0, -1]] = 7
    np.testing.assert_array_equal(y.cpu().numpy(), yc)


def test_backward_of_index_put_with_cuda_indices():
    x = numgrad.tensor(A[0], device="cuda", requires_grad=True)
    v = numgrad.ones(2, 6, device="cuda", requires_grad=True)
    xc = numgrad.tensor(A[0], requires_grad=True)
    vc = numgrad.ones(2, 6, requires_grad=True)
    idx = np.array([4, -1])
    out = numgrad.index_put(x * 1, (_dev(idx),), v * 3, accumulate=True)
    outc = numgrad.index_put(xc * 1, (numgrad.tensor(idx),), vc * 3, accumulate=True)
    g = RNG.standard_normal((5, 6)).astype(np.float32)
    (out * _dev(g)).sum().backward()
    (outc * numgrad.tensor(g)).sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), outc.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(v.grad.cpu().numpy(), vc.grad.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ no host round-trips
@contextlib.contextmanager
def _count_transfers():
    """Counts device-to-host copies (the simulator's ``copy_to_host``) and uploads
    (``cuda.to_device`` and ``copy_to_device``) made inside the block."""
    counts = {"d2h": 0, "h2d": 0}
    d2h, h2d, to_device = (simarray.FakeCUDAArray.copy_to_host,
                           simarray.FakeCUDAArray.copy_to_device, cuda.to_device)

    def counted(kind, fn):
        def wrapper(*args, **kwargs):
            counts[kind] += 1
            return fn(*args, **kwargs)
        return wrapper

    mp = pytest.MonkeyPatch()
    mp.setattr(simarray.FakeCUDAArray, "copy_to_host", counted("d2h", d2h))
    mp.setattr(simarray.FakeCUDAArray, "copy_to_device", counted("h2d", h2d))
    mp.setattr(cuda, "to_device", counted("h2d", to_device))
    try:
        yield counts
    finally:
        mp.undo()


def _indexing_graph(x, idx, rows, cols, values):
    y = x[idx] * 2  # gather
    z = y[:, cols].sum()  # a second gather, broadcast-free
    w = numgrad.index_put(x, (rows, cols[:2]), values, accumulate=True)  # scatter-add
    return z + (w * w).sum() + x[idx, cols[:1]].sum()


def test_forward_and_backward_of_indexing_make_no_host_round_trip():
    x = numgrad.tensor(A[0], device="cuda", requires_grad=True)
    idx = _dev(np.array([4, -1, 0, 0]))
    rows, cols = _dev(np.array([[1], [3]])), _dev(np.array([5, 0, -1]))
    values = numgrad.ones(2, 2, device="cuda", requires_grad=True)
    _indexing_graph(x, idx, rows, cols, values).backward()  # warm: launch configs, meta cache
    x.grad = values.grad = None
    with _count_transfers() as counts:
        loss = _indexing_graph(x, idx, rows, cols, values)
        loss.backward()
    assert counts == {"d2h": 0, "h2d": 0}
    # and the results are right
    xc = numgrad.tensor(A[0], requires_grad=True)
    vc = numgrad.ones(2, 2, requires_grad=True)
    lc = _indexing_graph(xc, numgrad.tensor([4, -1, 0, 0]), numgrad.tensor([[1], [3]]),
                         numgrad.tensor([5, 0, -1]), vc)
    lc.backward()
    np.testing.assert_allclose(loss.item(), lc.item(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values.grad.cpu().numpy(), vc.grad.numpy(), rtol=1e-5)


def test_a_mask_reads_back_only_its_count():
    x = numgrad.tensor(A, device="cuda")
    mask = _dev(A > 0)
    x[mask]  # warm
    with _count_transfers() as counts:
        y = x[mask]
    assert counts == {"d2h": 1, "h2d": 0}
    np.testing.assert_array_equal(y.cpu().numpy(), A[A > 0])


def test_cpu_indices_are_uploaded_once_for_forward_and_backward():
    x = numgrad.tensor(A[0], device="cuda", requires_grad=True)
    idx = numgrad.tensor([4, -1, 0])
    x[idx].sum().backward()  # warm
    with _count_transfers() as counts:
        x[idx].sum().backward()
    assert counts == {"d2h": 0, "h2d": 1}


# ------------------------------------------------------------------ bounds, checked on the device
@pytest.mark.parametrize("sync", ["synchronize", "cpu", "item", "tolist", "repr"])
def test_an_out_of_range_cuda_index_raises_at_the_next_sync(sync):
    x = numgrad.arange(6, device="cuda", dtype=numgrad.float32).reshape(2, 3)
    y = x[:, _dev(np.array([0, 3, -1]))]  # no error yet: the kernel found it
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        if sync == "synchronize":
            numgrad.cuda.synchronize()
        elif sync == "cpu":
            y.cpu()
        elif sync == "item":
            y.sum().item()
        elif sync == "tolist":
            y.tolist()
        else:
            repr(y)
    numgrad.cuda.synchronize()  # reported once
    np.testing.assert_array_equal(x[:, _dev(np.array([-1]))].cpu().numpy(), [[2], [5]])


def test_out_of_range_writes_and_negative_indices_raise_too():
    x = numgrad.zeros(3, device="cuda")
    x.index_put_((_dev(np.array([1, -4])),), numgrad.ones(2, device="cuda"), accumulate=True)
    with pytest.raises(RuntimeError, match="index -4 is out of bounds for dimension 0 with size 3"):
        numgrad.cuda.synchronize()
    np.testing.assert_array_equal(x.cpu().numpy(), [0, 1, 0])  # the bad element is skipped
    x = numgrad.zeros(2, 3, device="cuda")
    x[_dev(np.array([0])), _dev(np.array([7]))] = 1.0
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 1 with size 3"):
        x.cpu()


def test_cpu_index_out_of_range_still_raises_at_once():
    x = numgrad.zeros(3, device="cuda")
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[numgrad.tensor([5])]


# ------------------------------------------------------------------ uploads use the pool
def test_uploaded_tensors_are_counted_and_reuse_pooled_blocks():
    import gc

    from numgrad.kernels.cuda import pool

    gc.collect()
    before = numgrad.cuda.memory_allocated()
    host = np.ones(1000, np.float32)
    t = numgrad.tensor(host, device="cuda")
    assert numgrad.cuda.memory_allocated() - before == pool.size_class(host.nbytes)
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    del t
    gc.collect()
    assert numgrad.cuda.memory_allocated() == before
    reuses = numgrad.cuda.memory_stats()["reuses"]
    raw = numgrad.cuda.memory_stats()["raw_allocs"]
    u = numgrad.tensor(host * 2, device="cuda")  # the same size class: the freed block
    stats = numgrad.cuda.memory_stats()
    assert stats["reuses"] == reuses + 1 and stats["raw_allocs"] == raw
    np.testing.assert_array_equal(u.cpu().numpy(), host * 2)
    v = numgrad.ones(3).cuda()  # .cuda() / .to("cuda") upload through the pool too
    assert numgrad.cuda.memory_allocated() >= before + 2 * 512
    np.testing.assert_array_equal(v.cpu().numpy(), np.ones(3))


def test_scalars_fills_and_seed_gradients_make_no_transfer():
    x = numgrad.tensor(A[0], device="cuda", requires_grad=True)
    c = numgrad.tensor(1.5, device="cuda")

    def graph():
        y = numgrad.where(x > 0, x, 0.25) + (2 - x) * numgrad.ones(5, 6, device="cuda")
        z = numgrad.zeros(6, device="cuda").fill_(c) + numgrad.full((6,), 3.0, device="cuda")
        return (y * z).sum()

    graph().backward()  # warm
    x.grad = None
    with _count_transfers() as counts:
        graph().backward()
    assert counts == {"d2h": 0, "h2d": 0}
    a = A[0]
    want = (np.where(a > 0, a, 0.25) + (2 - a)) * 4.5
    np.testing.assert_allclose(graph().item(), want.sum(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(a > 0, 1.0, 0.0) * 4.5 - 4.5,
                               rtol=1e-6, atol=1e-6)
