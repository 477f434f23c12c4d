"""CUDA views share device memory, as on the CPU: writes through a view land in its base, and every
kernel reads strided (and expanded, stride-0) operands. Run in Numba's CUDA simulator with the rest
of tests/cuda_sim (see test_cuda_sim.py)."""
import numpy as np
import pytest

import numgrad


def _pair(shape=(3, 4), dtype="float32"):
    """The same values on the host and on the device."""
    host = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return host, numgrad.tensor(host, device="cuda")


def _eq(t, expected):
    assert t.device.type == "cuda"
    np.testing.assert_array_equal(t.cpu().numpy(), expected)


# ------------------------------------------------------------------ views share memory
@pytest.mark.parametrize("make, index", [
    (lambda x: x.narrow(1, 1, 2), (slice(None), slice(1, 3))),
    (lambda x: x.permute(1, 0), None),
    (lambda x: x.t(), None),
    (lambda x: x.transpose(0, 1), None),
    (lambda x: x[1], (1,)),
    (lambda x: x[:, ::2], (slice(None), slice(None, None, 2))),
    (lambda x: x[1:, None, 2:], (slice(1, None), slice(2, None))),
    (lambda x: x.unsqueeze(0).squeeze(0), (slice(None),)),
    (lambda x: x.view(2, 6), None),
])
@pytest.mark.parametrize("write", ["add_", "mul_", "iadd", "fill_", "zero_", "copy_", "clamp_",
                                   "setitem"])
def test_write_through_a_view_changes_the_base(make, index, write):
    host, x = _pair()
    view = make(x)
    assert view._base is x
    expected_view = make(numgrad.tensor(host.copy())).numpy()  # a NumPy view of a host copy
    base_host = expected_view.base if expected_view.base is not None else expected_view
    while base_host.base is not None:
        base_host = base_host.base
    if write == "add_":
        view.add_(10)
        expected_view += 10
    elif write == "mul_":
        view.mul_(numgrad.full(tuple(view.shape), 2.0, device="cuda"))
        expected_view *= 2
    elif write == "iadd":
        view += numgrad.ones(view.shape[-1], device="cuda")
        expected_view += 1
    elif write == "fill_":
        view.fill_(-3)
        expected_view[...] = -3
    elif write == "zero_":
        view.zero_()
        expected_view[...] = 0
    elif write == "copy_":
        src = np.linspace(-1, 1, view.shape[-1]).astype(np.float32)
        view.copy_(numgrad.tensor(src, device="cuda"))
        expected_view[...] = src
    elif write == "clamp_":
        view.clamp_(2, 5)
        np.clip(expected_view, 2, 5, out=expected_view)
    else:
        view[0] = 99
        expected_view[0] = 99
    _eq(view, expected_view)
    _eq(x, base_host.reshape(3, 4))
    assert x._version == view._version > 0


def test_writes_through_nested_views_and_indexing():
    host, x = _pair((4, 5))
    y = x.permute(1, 0)[1:4]  # a view of a view: strides (1, 5), offset 1
    y[0, 2] = -1
    host[2, 1] = -1
    y[:, 0] = numgrad.tensor([7.0, 8.0, 9.0], device="cuda")
    host[0, 1:4] = [7, 8, 9]
    x[1:3][:, ::2] = 0.5
    host[1:3, ::2] = 0.5
    x[numgrad.tensor([3, 3, 0], device="cuda"), numgrad.tensor([4, 4, 0])] = -5  # CUDA and CPU indices
    host[[3, 3, 0], [4, 4, 0]] = -5
    x[x > 15] = 0  # a CUDA mask
    host[host > 15] = 0
    _eq(x, host)
    v = x.narrow(0, 1, 2)
    v[numgrad.tensor([1, 0])] = numgrad.ones(2, 5, device="cuda")  # advanced write into a view
    host[1:3][[1, 0]] = 1
    _eq(x, host)


def test_write_into_an_expanded_view_is_refused():
    x = numgrad.ones(3, 1, device="cuda")
    e = x.expand(3, 4)
    assert 0 in e._data.strides
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e[0] = 2.0


# ------------------------------------------------------------------ strided operands
def test_strided_and_expanded_operands_of_every_kernel():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    da, db = numgrad.tensor(a, device="cuda"), numgrad.tensor(b, device="cuda")
    at, dat = a.T, da.t()
    assert not dat._data.is_c_contiguous()
    tol = dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose((dat + db).cpu().numpy(), at + b, **tol)
    np.testing.assert_allclose((db * dat).cpu().numpy(), b * at, **tol)
    np.testing.assert_allclose((dat - 1).cpu().numpy(), at - 1, **tol)
    np.testing.assert_allclose((2 / dat[:, 1:]).cpu().numpy(), 2 / at[:, 1:], **tol)
    np.testing.assert_allclose(dat.exp().cpu().numpy(), np.exp(at), **tol)
    np.testing.assert_allclose(dat.abs().cpu().numpy(), np.abs(at), **tol)
    np.testing.assert_allclose(numgrad.where(dat > 0, dat, db).cpu().numpy(), np.where(at > 0, at, b), **tol)
    np.testing.assert_allclose(dat.sum(0).cpu().numpy(), at.sum(0), **tol)
    np.testing.assert_allclose(dat[:, ::2].sum().cpu().numpy(), at[:, ::2].sum(), **tol)
    np.testing.assert_allclose(dat.double().cpu().numpy(), at.astype(np.float64), **tol)
    np.testing.assert_allclose(dat.clone().cpu().numpy(), at)
    assert dat.contiguous()._data.is_c_contiguous() and da.contiguous() is da
    np.testing.assert_allclose(dat.reshape(-1).cpu().numpy(), at.reshape(-1))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        dat.view(-1)
    np.testing.assert_allclose(dat.unsqueeze(1).view(3, 1, 2, 2).cpu().numpy(), at.reshape(3, 1, 2, 2))
    np.testing.assert_allclose(numgrad.cat([dat, db[:, ::2].t().t()], 1).cpu().numpy(),
                               np.concatenate([at, b[:, ::2]], 1))
    np.testing.assert_allclose(numgrad.stack([dat, db], 1).cpu().numpy(), np.stack([at, b], 1))
    np.testing.assert_allclose(dat.repeat(2, 1, 2).cpu().numpy(), np.tile(at, (2, 1, 2)))
    np.testing.assert_allclose(dat[numgrad.tensor([2, 0, 2])].cpu().numpy(), at[[2, 0, 2]])
    # expand is a stride-0 view that every kernel reads
    e = numgrad.tensor(a[:, :1], device="cuda").expand(4, 5)
    assert e._base is not None and 0 in e._data.strides
    ae = np.broadcast_to(a[:, :1], (4, 5))
    np.testing.assert_allclose((e * 2).cpu().numpy(), ae * 2)
    np.testing.assert_allclose(e.exp().sum(1).cpu().numpy(), np.exp(ae).sum(1), **tol)
    np.testing.assert_allclose(e.t().reshape(20).cpu().numpy(), ae.T.reshape(20))
    np.testing.assert_allclose(e[1:3, numgrad.tensor([0, 4])].cpu().numpy(), ae[1:3, [0, 4]])
    assert e.tolist() == ae.tolist() and dat.tolist() == at.tolist()
    # accumulation of a strided gradient into .grad
    w = numgrad.tensor(b, device="cuda", requires_grad=True)
    for _ in range(2):
        (w.t() * numgrad.tensor(a, device="cuda")).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * a.T, **tol)
    g = numgrad.zeros(3, 4, device="cuda")
    g += numgrad.tensor(a, device="cuda").t()
    np.testing.assert_allclose(g.cpu().numpy(), a.T)


def test_in_place_op_whose_operand_overlaps_its_target():
    host, x = _pair((3, 3))
    with numgrad.no_grad():
        x.add_(x)  # (the same elements: allowed)
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location"):
            x.add_(x.t())  # (a partial overlap: PyTorch's error, before anything is written)
    _eq(x, host + host)


# ------------------------------------------------------------------ scatter-add
def test_index_put_accumulates_duplicates():
    x = numgrad.zeros(4, 2, device="cuda", dtype=numgrad.float64)
    idx = numgrad.tensor([0, 2, 0, 0], device="cuda")
    x.index_put_((idx,), numgrad.ones(4, 2, device="cuda", dtype=numgrad.float64), accumulate=True)
    _eq(x, [[3, 3], [0, 0], [1, 1], [0, 0]])
    y = numgrad.index_put(x, (numgrad.tensor([1, 1, 1]), numgrad.tensor([1, 1, 0])),
                          numgrad.tensor([1.0, 2.0, 4.0], device="cuda", dtype=numgrad.float64), True)
    _eq(y, [[3, 3], [4, 3], [1, 1], [0, 0]])
    _eq(x, [[3, 3], [0, 0], [1, 1], [0, 0]])  # out of place


@pytest.mark.parametrize("dtype", [numgrad.float32, numgrad.float64])
def test_gradient_of_repeated_indices_accumulates(dtype):
    x = numgrad.ones(5, device="cuda", dtype=dtype, requires_grad=True)
    w = numgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], device="cuda", dtype=dtype)
    (x[numgrad.tensor([4, 0, 4, 4, 1, 0], device="cuda")] * w).sum().backward()
    _eq(x.grad, [2 + 6, 5, 0, 0, 1 + 3 + 4])
    assert x.grad.dtype is dtype


def test_many_duplicates_across_threads():
    # more elements than the simulator's threads: the atomic adds of several threads meet
    n = 200
    x = numgrad.zeros(3, device="cuda")
    x.index_put_((numgrad.tensor(np.arange(n) % 3, device="cuda"),), numgrad.ones(n, device="cuda"),
                 accumulate=True)
    _eq(x, [67, 67, 66])


def test_kernel_level_strided_views():
    from numgrad.kernels import cuda as K

    base = K.upload(np.arange(24, dtype=np.float64).reshape(4, 6))
    v = K.strided(base, (2, 3), (6, 2), 7)  # rows 1-2, columns 1, 3, 5
    np.testing.assert_array_equal(K.to_host(v), np.arange(24).reshape(4, 6)[1:3, 1::2])
    K.assign(v, np.float64(-1))
    host = np.arange(24, dtype=np.float64).reshape(4, 6)
    host[1:3, 1::2] = -1
    np.testing.assert_array_equal(K.to_host(base), host)
    K.binary_into(K.ADD, K.permute(v, (1, 0)), K.upload(np.array([1.0, 2.0])))
    host[1:3, 1::2] += np.array([1.0, 2.0])[:, None]
    np.testing.assert_array_equal(K.to_host(base), host)
    c = K.ascontiguous(v)
    assert c.is_c_contiguous() and K.ascontiguous(c) is c
    np.testing.assert_array_equal(K.to_host(c), host[1:3, 1::2])
    np.testing.assert_array_equal(K.to_host(K.reshape_view(v, (6,))), host[1:3, 1::2].reshape(6))
    with pytest.raises(ValueError):
        K.reshape_view(K.permute(v, (1, 0)), (6,))
    np.testing.assert_array_equal(K.to_host(K.reshape_view(K.view_index(base, (slice(None), slice(0, 3))), (4, 1, 3))),
                                  host[:, :3].reshape(4, 1, 3))
