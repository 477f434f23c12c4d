"""Indexing, utility and dtype functions against PyTorch (issue 16, round three): unbind, select,
tensor_split (views), index_add/index_copy/index_fill (and in place), take, masked_scatter (and in
place), diff, tensordot, kron, baddbmm, addmv, cartesian_prod, block_diag, combinations,
triu_indices/tril_indices, bucketize, searchsorted, bincount, histc, cummax/cummin,
logcumsumexp, nn.functional.one_hot, torch.dropout, torch.detach, logspace, broadcast_shapes,
is_nonzero, typename, and finfo/iinfo/result_type/promote_types/can_cast.

Each case: values, dtypes, node names (``grad_fn`` and the nodes under it) and the input
gradients of one vector-Jacobian product against PyTorch's, on 0-d, empty, non-contiguous and
integer inputs and negative dims; float64 gradcheck (and gradgradcheck) of the composed ops and
the in-place variants (the registered ops are gradchecked by tests/test_ops.py from their
samples); views sharing storage where PyTorch's do; PyTorch's error messages.
"""
import numpy as np
import pytest
import torch
from _helpers import both_raise, compare
from _helpers import data as random_data

import numgrad

RNG = np.random.default_rng(1616)


def _data(shape, dtype="float64"):
    return random_data(RNG, shape, dtype)


def _compare(f, *arrays, grad=None, depth=2):
    """Values, dtypes, node names and input gradients of ``f(module, *tensors)``."""
    return compare(RNG, f, *arrays, grad=grad, depth=depth)


def _t(m, a):
    """A non-contiguous view (the last two dimensions swapped)."""
    return a.transpose(-1, -2)


def _i(m, values, dtype=None):
    return m.tensor(values) if dtype is None else m.tensor(values, dtype=getattr(m, dtype))


CASES = [
    # views
    (lambda m, a: m.unbind(a), [(3, 4)]),
    (lambda m, a: _t(m, a).unbind(-1), [(3, 4)]),
    (lambda m, a: a.unbind(1), [(2, 0)]),
    (lambda m, a: m.select(a, -1, -2), [(2, 3, 4)]),
    (lambda m, a: _t(m, a).select(0, 3), [(3, 4)]),
    (lambda m, a: m.tensor_split(a, 3, dim=1), [(3, 4)]),
    (lambda m, a: a.tensor_split([1, 3, 10], -1), [(2, 5)]),
    (lambda m, a: m.tensor_split(a, _i(m, [3, 1]), dim=1), [(3, 4)]),
    (lambda m, a: m.tensor_split(a, _i(m, 2)), [(5,)]),
    (lambda m, a: m.tensor_split(a, [-2]), [(5,)]),
    # writes along one dimension
    (lambda m, a, s: a.index_add(0, _i(m, [2, 0, 2]), s), [(3, 4), (3, 4)]),
    (lambda m, a, s: m.index_add(_t(m, a), -1, _i(m, [1, 0], "int32"), s, alpha=3),
     [(2, 3), (3, 2)]),
    (lambda m, a, s: a.index_add(0, _i(m, [0]), s), [(), ()]),
    (lambda m, a, s: a.index_add(1, _i(m, [], "int64"), s), [(2, 3), (2, 0)]),
    (lambda m, a, s: a.index_add(0, _i(m, [1, 1]), s, alpha=2), [(3,), (2,)]),
    (lambda m, a, s: a.index_copy(1, _i(m, [2, 0]), s), [(3, 4), (3, 2)]),
    (lambda m, a, s: m.index_copy(_t(m, a), 0, _i(m, [1]), s), [(3, 4), (1, 3)]),
    (lambda m, a, s: a.index_copy(0, _i(m, 0), s), [(), ()]),
    (lambda m, a: a.index_fill(1, _i(m, [0, -1]), -2.5), [(3, 4)]),
    (lambda m, a: m.index_fill(_t(m, a), -2, _i(m, 1), 7), [(3, 4)]),
    (lambda m, a: a.index_fill(0, _i(m, [0]), m.tensor(3.0)), [()]),
    (lambda m, a: a.take(_i(m, [[0, 11], [5, -1]])), [(3, 4)]),
    (lambda m, a: m.take(_t(m, a), _i(m, [7, 7, 0])), [(2, 4)]),
    (lambda m, a: a.take(_i(m, [0, 0])), [()]),
    (lambda m, a: a.take(_i(m, [], "int64")), [(2, 3)]),
    (lambda m, a, s: a.masked_scatter(a > 0, s), [(3, 4), (12,)]),
    (lambda m, a, s: m.masked_scatter(_t(m, a), m.tensor([True, False, True]), s),
     [(3, 4), (3, 3)]),
    (lambda m, a, s: a.masked_scatter(m.tensor([[True], [False]]), s), [(3,), (2, 5)]),
    (lambda m, a, s: a.masked_scatter(a > 10, s), [(2, 3), (0,)]),
    # composed
    (lambda m, a: m.diff(a), [(3, 4)]),
    (lambda m, a: a.diff(n=2, dim=0), [(4, 3)]),
    (lambda m, a, p, q: m.diff(_t(m, a), dim=-1, prepend=p, append=q), [(3, 4), (4, 1), (4, 2)]),
    (lambda m, a: m.diff(a, n=5), [(3,)]),
    (lambda m, a: m.diff(a > 0), [(2, 3)]),
    (lambda m, a: m.diff(a), [(2, 3, 1)]),
    (lambda m, a, b: m.tensordot(a, b, dims=1), [(2, 3), (3, 4)]),
    (lambda m, a, b: m.tensordot(a, b), [(2, 3, 4), (3, 4, 5)]),
    (lambda m, a, b: m.tensordot(_t(m, a), b, dims=([0, 1], [2, 0])), [(3, 2), (3, 4, 2)]),
    (lambda m, a, b: m.tensordot(a, b, dims=0), [(2,), (3,)]),
    (lambda m, a, b: m.tensordot(a, b, dims=([-1], [0])), [(2, 3), (3,)]),
    (lambda m, a, b: m.kron(a, b), [(2, 3), (3, 2)]),
    (lambda m, a, b: a.kron(b), [(3,), (2, 2)]),
    (lambda m, a, b: m.kron(a, b), [(), (2,)]),
    (lambda m, a, b: m.kron(a, b), [(2, 3), (3,)]),
    (lambda m, a, b: m.cartesian_prod(a, b), [(2,), (3,)]),
    (lambda m, a, b, c: m.cartesian_prod(a, b, c), [(2,), (1,), (2,)], 1),
    (lambda m, a: m.cartesian_prod(a), [(3,)]),
    (lambda m, a: m.combinations(a), [(4,)]),
    (lambda m, a: m.combinations(a, 3, with_replacement=True), [(3,)]),
    (lambda m, a: m.combinations(a, r=0), [(3,)]),
    (lambda m, a: m.combinations(a, r=5), [(3,)]),
    # products
    (lambda m, c, a, b: m.baddbmm(c, a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    (lambda m, c, a, b: c.baddbmm(a, _t(m, b), beta=0.5, alpha=-2), [(5,), (2, 3, 4), (2, 5, 4)]),
    (lambda m, c, a, b: m.baddbmm(c, a, b, beta=0), [(1, 3, 1), (1, 3, 0), (1, 0, 2)]),
    (lambda m, c, a, v: m.addmv(c, a, v), [(3,), (3, 4), (4,)]),
    (lambda m, c, a, v: c.addmv(_t(m, a), v, beta=2, alpha=0.5), [(1,), (4, 3), (4,)]),
    (lambda m, c, a, v: m.addmv(c, a, v), [(), (2, 3), (3,)]),
    (lambda m, a, b: m.block_diag(a, b), [(2, 3), (3, 2)]),
    (lambda m, a, b, c: m.block_diag(a, _t(m, b), c), [(), (3, 2), (4,)]),
    (lambda m, a, b: m.block_diag(a, b), [(0, 2), (2, 0)]),
    (lambda m, a, b: m.block_diag(a, b), [(2, 2), (2,)]),
    # scans
    (lambda m, a: m.cummax(a, 1), [(3, 4)]),
    (lambda m, a: _t(m, a).cummax(dim=-1), [(3, 4)]),
    (lambda m, a: m.cummin(a, 0), [(4, 3)]),
    (lambda m, a: a.cummin(0), [()]),
    (lambda m, a: a.cummax(0), [(0,)]),
    (lambda m, a: m.logcumsumexp(a, 1), [(3, 4)]),
    (lambda m, a: _t(m, a).logcumsumexp(-2), [(3, 4)]),
    (lambda m, a: a.logcumsumexp(0), [()]),
    (lambda m, a: a.logcumsumexp(0), [(0, 2)]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_against_pytorch(case):
    f, shapes, *depth = CASES[case]  # (depth: how deep the node names are compared, 2 default)
    _compare(f, *[_data(s) for s in shapes], depth=depth[0] if depth else 2)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "bool"])
def test_dtypes(dtype):
    a = _data((3, 4), dtype)
    s = _data((2, 4), dtype)
    cases = [lambda m, a: m.unbind(a, -1), lambda m, a: a.select(1, 2),
             lambda m, a: a.take(_i(m, [1, 3])), lambda m, a: a.index_fill(0, _i(m, [1]), 1),
             lambda m, a: m.tensor_split(a, 2), lambda m, a: m.diff(a, dim=0),
             lambda m, a: a.cummax(1), lambda m, a: m.cummin(a, 0),
             lambda m, a: m.block_diag(a, a[:1])]
    if dtype != "bool":
        cases += [lambda m, a: m.kron(a, a[:2, :1]), lambda m, a: m.tensordot(a, a.t(), 1)]
    for f in cases:
        _compare(f, a)
    _compare(lambda m, a, s: a.index_copy(0, _i(m, [2, 0]), s), a, s)
    if dtype != "bool":
        _compare(lambda m, a, s: a.index_add(0, _i(m, [2, 2]), s), a, s)
        _compare(lambda m, c, x, y: m.baddbmm(c, x, y), _data((2, 3, 2), dtype),
                 _data((2, 3, 4), dtype), _data((2, 4, 2), dtype))
        _compare(lambda m, c, x, y: m.addmv(c, x, y), _data((3,), dtype), _data((3, 4), dtype),
                 _data((4,), dtype))
    _compare(lambda m, a, s: a.masked_scatter(_i(m, [True, False, True, True]), s), a,
             _data((12,), dtype))


def test_nan_in_running_extremes():
    a = np.array([[1.0, np.nan, 3.0, np.nan, 2.0], [2.0, 2.0, -1.0, -1.0, 5.0]])
    _compare(lambda m, a: m.cummax(a, 1), a, grad=False)
    _compare(lambda m, a: m.cummin(a, -1), a, grad=False)
    b = np.array([[0.0, -np.inf, np.inf, 1.0], [-np.inf, -np.inf, 1.0, np.nan]])
    _compare(lambda m, a: m.logcumsumexp(a, 1), b, grad=False)


# ------------------------------------------------------------------ views share storage
def test_views_share_storage():
    for fn in (lambda m, x: m.unbind(x, 1)[2], lambda m, x: x.select(0, 1),
               lambda m, x: m.tensor_split(x, [1, 3], dim=1)[1]):
        a = _data((3, 4))
        x, tx = numgrad.tensor(a), torch.tensor(a)
        v, tv = fn(numgrad, x), fn(torch, tx)
        assert v._base is x
        v.mul_(2)
        tv.mul_(2)
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        x.add_(1)
        tx.add_(1)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())


def test_inplace_variants():
    cases = [
        (lambda m, a, s: a.index_add_(0, _i(m, [1, 1]), s, alpha=-1), [(3, 4), (2, 4)]),
        (lambda m, a, s: a.index_copy_(0, _i(m, [2, 0]), s), [(3, 4), (2, 4)]),
        (lambda m, a, s: a.index_fill_(1, _i(m, [0]), 2.5), [(3, 4), (2, 4)]),
        (lambda m, a, s: a.masked_scatter_(a > 0, s.reshape(-1)), [(3, 4), (2, 6)]),
        (lambda m, a, s: a.baddbmm_(s, s.transpose(1, 2)[:, :, :3], beta=0.5), [(2, 3, 3),
                                                                               (2, 3, 4)]),
        (lambda m, a, s: a.addmv_(s, s[0], alpha=-1), [(3,), (3, 3)]),
    ]
    for f, shapes in cases:
        a, s = (_data(shape) for shape in shapes)
        x, tx = numgrad.tensor(a), torch.tensor(a)
        out, tout = f(numgrad, x, numgrad.tensor(s)), f(torch, tx, torch.tensor(s))
        assert out is x and tout is tx
        np.testing.assert_allclose(x.numpy(), tx.numpy())
        _compare(lambda m, a, s, f=f: f(m, a * 1, s), a, s)


def test_tensordot_out():
    a, b = _data((2, 3)), _data((3, 4))
    out, tout = numgrad.empty(2, 4, dtype=numgrad.float64), torch.empty(2, 4, dtype=torch.float64)
    assert numgrad.tensordot(numgrad.tensor(a), numgrad.tensor(b), 1, out=out) is out
    torch.tensordot(torch.tensor(a), torch.tensor(b), 1, out=tout)
    np.testing.assert_allclose(out.numpy(), tout.numpy())


def test_out_and_keywords():
    x = _data((3, 4))
    for name, call in (("histc", lambda m, v, o: m.histc(v, 5, out=o)),
                       ("searchsorted", lambda m, v, o: m.searchsorted(
                           m.tensor([-1.0, 0.0, 1.0], dtype=v.dtype), v, out=o)),
                       ("bucketize", lambda m, v, o: m.bucketize(
                           v, m.tensor([-1.0, 0.0, 1.0], dtype=v.dtype), out=o))):
        dtype = "float64" if name == "histc" else "int64"
        o, to = numgrad.empty(0, dtype=getattr(numgrad, dtype)), torch.empty(
            0, dtype=getattr(torch, dtype))
        assert call(numgrad, numgrad.tensor(x), o) is o
        call(torch, torch.tensor(x), to)
        np.testing.assert_array_equal(o.numpy(), to.numpy())
    for kw in ({"sections": 3}, {"indices": [1, 2]}):
        parts = numgrad.tensor_split(numgrad.tensor(x), dim=1, **kw)
        tparts = torch.tensor_split(torch.tensor(x), dim=1, **kw)
        assert [tuple(p.shape) for p in parts] == [tuple(p.shape) for p in tparts]


def test_gradcheck_composed():
    def d(*shape):
        return numgrad.tensor(_data(shape), requires_grad=True)

    checks = [
        (lambda a: numgrad.diff(a, n=2, dim=0), (d(4, 3),)),
        (lambda a, p: numgrad.diff(a, prepend=p), (d(2, 3), d(2, 1))),
        (lambda a, b: numgrad.tensordot(a, b, dims=([1, 0], [2, 0])), (d(3, 2), d(3, 4, 2))),
        (lambda a, b: numgrad.kron(a, b), (d(2, 2), d(3,))),
        (lambda a, b: numgrad.cartesian_prod(a, b), (d(2,), d(3,))),
        (lambda a: numgrad.combinations(a, 2), (d(4,),)),
        (lambda a, s: (a * 1).index_add_(0, numgrad.tensor([0, 0]), s), (d(2, 3), d(2, 3))),
        (lambda a, s: (a * 1).index_copy_(1, numgrad.tensor([2]), s), (d(2, 3), d(2, 1))),
        (lambda a: (a * 1).index_fill_(0, numgrad.tensor([1]), 0.5), (d(2, 3),)),
        (lambda a, s: (a * 1).masked_scatter_(a > 0, s), (d(2, 3), d(7,))),
        (lambda a: numgrad.unbind(a, 1)[1] * numgrad.unbind(a, 1)[0], (d(2, 3),)),
        (lambda a: numgrad.cummax(a, 1).values, (d(2, 4),)),
        (lambda a: numgrad.logcumsumexp(a, 0), (d(3, 2),)),
    ]
    for fn, inputs in checks:
        assert numgrad.autograd.gradcheck(fn, inputs)
        assert numgrad.autograd.gradgradcheck(fn, inputs)


# ------------------------------------------------------------------ counting and searching
@pytest.mark.filterwarnings("ignore:torch.searchsorted")  # (PyTorch's, for a strided input)
def test_counting_and_searching():
    x = _data((3, 4))
    bounds = np.array([-1.0, 0.0, 0.5, 1.0])
    cases = [
        (lambda m, b, v: m.searchsorted(b, v), (bounds, x)),
        (lambda m, b, v: m.searchsorted(b, v, right=True), (bounds, x)),
        (lambda m, b, v: m.searchsorted(b, _t(m, v), side="right", out_int32=True), (bounds, x)),
        (lambda m, b, v: m.searchsorted(b.sort(-1).values, v), (_data((3, 5)), x)),
        (lambda m, b, v: m.searchsorted(b, v, sorter=m.tensor([3, 0, 2, 1])),
         (bounds[[1, 3, 2, 0]], x)),
        (lambda m, b, v: m.searchsorted(b, v), (bounds, np.array(0.25))),
        (lambda m, b, v: m.searchsorted(b, v), (bounds, np.zeros((0, 2)))),
        (lambda m, b, v: m.searchsorted(b, v), (np.array([1, 3, 3, 7]), np.array([0, 3, 8]))),
        (lambda m, b, v: m.bucketize(v, b), (bounds, x)),
        (lambda m, b, v: m.bucketize(v, b, right=True, out_int32=True), (bounds, x)),
        (lambda m, b, v: m.bucketize(v.long(), b), (bounds, x * 2)),
        (lambda m, b, v: m.searchsorted(b, v), (bounds, np.array([np.nan, -np.inf]))),
        (lambda m, v: m.bincount(v), (np.array([0, 1, 1, 4, 1]),)),
        (lambda m, v: v.bincount(minlength=7), (np.array([0, 2, 2], np.int32),)),
        (lambda m, v, w: m.bincount(v, w), (np.array([3, 1, 1]), np.array([0.5, -1.0, 2.0]))),
        (lambda m, v, w: m.bincount(v, weights=w.float()),
         (np.array([3, 1, 1]), np.array([0.5, -1.0, 2.0]))),
        (lambda m, v, w: m.bincount(v, weights=w), (np.array([0, 2]), np.array([1, 5]))),
        (lambda m, v: m.bincount(v), (np.zeros(0, np.int64),)),
        (lambda m, v: m.bincount(v, minlength=3), (np.zeros(0, np.int64),)),
        (lambda m, v: m.histc(v), (x,)),
        (lambda m, v: _t(m, v).histc(bins=7, min=-1, max=1.5), (x.astype("float32"),)),
        (lambda m, v: m.histc(v, 3), (np.ones(4),)),
        (lambda m, v: m.histc(v, 4), (np.zeros(0),)),
        (lambda m, v: m.histc(v, 4, min=0, max=3), (np.array([0.0, 3.0, 1.5, np.nan, 4.0]),)),
    ]
    for f, arrays in cases:
        _compare(f, *arrays, grad=False)


def test_no_gradient_through_counts():
    w = numgrad.tensor([1.0, 2.0], requires_grad=True)
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    out, tout = numgrad.bincount(numgrad.tensor([0, 2]), w), torch.bincount(torch.tensor([0, 2]), tw)
    assert out.requires_grad is False and tout.grad_fn is not None  # (PyTorch's node raises)
    for m, x in ((numgrad, numgrad.ones(3, requires_grad=True)),
                 (torch, torch.ones(3, requires_grad=True))):
        assert not m.histc(x).requires_grad
        assert not m.searchsorted(x, x).requires_grad
        assert not m.cummax(x, 0).indices.requires_grad


def test_one_hot():
    F, TF = numgrad.nn.functional, torch.nn.functional
    for idx, n in (([0, 2, 1], -1), ([[1], [3]], 5), ([], 3), (4, -1), ([0, 0], 1)):
        out, tout = F.one_hot(numgrad.tensor(idx, dtype=numgrad.int64), n), TF.one_hot(
            torch.tensor(idx, dtype=torch.int64), n)
        assert out.dtype is numgrad.int64 and tuple(out.shape) == tuple(tout.shape)
        np.testing.assert_array_equal(out.numpy(), tout.numpy())


def test_triangle_indices():
    for args, kwargs in (((3, 3), {}), ((3, 4, 1), {}), ((4, 3, -1), {}), ((0, 3), {}),
                         ((3, 5, 7), {}), ((2, 4, -5), {}), ((3, 3), {"dtype": "int32"})):
        for name in ("triu_indices", "tril_indices"):
            kw = {k: getattr(numgrad, v) for k, v in kwargs.items()}
            tkw = {k: getattr(torch, v) for k, v in kwargs.items()}
            out, tout = getattr(numgrad, name)(*args, **kw), getattr(torch, name)(*args, **tkw)
            assert out.dtype.name == str(tout.dtype).removeprefix("torch.")
            np.testing.assert_array_equal(out.numpy(), tout.numpy())


# ------------------------------------------------------------------ utilities
def test_utilities():
    for args, kwargs in (((0, 2, 5), {}), ((-1, 1, 4), {"base": 2}), ((1, 3, 1), {}),
                         ((0, 2, 0), {}), ((0, 3, 4), {"dtype": "float64"}),
                         ((0, 2, 3), {"dtype": "int64"}), ((2, 0, 6), {"base": 3.5})):
        kw = {k: getattr(numgrad, v) if k == "dtype" else v for k, v in kwargs.items()}
        tkw = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
        out, tout = numgrad.logspace(*args, **kw), torch.logspace(*args, **tkw)
        assert out.dtype.name == str(tout.dtype).removeprefix("torch.")
        np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-6)
    for shapes in (((2, 1), (3,)), ((),), (), (2, (3, 1)), ((1, 0), (4, 1)), ([5], (2, 1))):
        assert tuple(numgrad.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    assert isinstance(numgrad.broadcast_shapes((2, 1)), numgrad.Size)
    for v in ([3], 0.0, [[0]], float("nan"), True, -2):
        assert numgrad.is_nonzero(numgrad.tensor(v)) == torch.is_nonzero(torch.tensor(v))
        assert numgrad.tensor(v).is_nonzero() == torch.tensor(v).is_nonzero()
    assert numgrad.typename(numgrad.ones(2)) == "numgrad.FloatTensor"
    assert numgrad.typename(numgrad.ones(2, dtype=numgrad.int64)) == "numgrad.LongTensor"
    for obj in (3, "s", 2.5, None, [1]):
        assert numgrad.typename(obj) == torch.typename(obj)
    assert numgrad.typename(numgrad.nn.Linear(2, 2)) == "numgrad.nn.modules.linear.Linear"
    x = numgrad.ones(2, requires_grad=True)
    d = numgrad.detach(x * 2)
    assert not d.requires_grad and d.grad_fn is None
    tx = torch.ones(2, requires_grad=True)
    assert numgrad.dropout(x, 0.5, False) is x and torch.dropout(tx, 0.5, False) is tx
    y = numgrad.dropout(x, 0.5, True)
    assert type(y.grad_fn).__name__ == type(
        torch.dropout(torch.ones(2, requires_grad=True), 0.5, True).grad_fn).__name__
    assert set(np.unique(y.detach().numpy())) <= {0.0, 2.0}


# ------------------------------------------------------------------ dtype introspection
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def test_finfo_iinfo():
    for name in ("float32", "float64"):
        ours, theirs = numgrad.finfo(getattr(numgrad, name)), torch.finfo(getattr(torch, name))
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                     "dtype"):
            assert getattr(ours, attr) == getattr(theirs, attr), attr
            assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), attr
        assert repr(ours) == repr(theirs)
    assert numgrad.finfo().dtype == torch.finfo().dtype
    for name in ("int32", "int64"):
        ours, theirs = numgrad.iinfo(getattr(numgrad, name)), torch.iinfo(getattr(torch, name))
        for attr in ("bits", "max", "min", "dtype"):
            assert getattr(ours, attr) == getattr(theirs, attr), attr
            assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), attr
        assert repr(ours) == repr(theirs)
    for fn, name in (("finfo", "int64"), ("finfo", "bool"), ("iinfo", "float32"),
                     ("iinfo", "bool")):
        with pytest.raises(TypeError) as expected:
            getattr(torch, fn)(getattr(torch, name))
        with pytest.raises(TypeError, match="^" + str(expected.value).replace("(", r"\(")
                           .replace(")", r"\)").replace(".", r"\.") + "$"):
            getattr(numgrad, fn)(getattr(numgrad, name))


def test_promotion_functions():
    for a in DTYPES:
        for b in DTYPES:
            na, nb, ta, tb = (getattr(numgrad, a if a != "bool" else "bool"),
                              getattr(numgrad, b), getattr(torch, a), getattr(torch, b))
            assert numgrad.promote_types(na, nb).name == str(
                torch.promote_types(ta, tb)).removeprefix("torch.")
            assert numgrad.can_cast(na, nb) == torch.can_cast(ta, tb), (a, b)
    values = [numgrad.ones(2), numgrad.ones(2, dtype=numgrad.int32), numgrad.tensor(1.0,
              dtype=numgrad.float64), numgrad.tensor(True), numgrad.tensor(3), 2, 2.5, True]
    tvalues = [torch.ones(2), torch.ones(2, dtype=torch.int32), torch.tensor(1.0,
               dtype=torch.float64), torch.tensor(True), torch.tensor(3), 2, 2.5, True]
    for i, x in enumerate(values):
        for j, y in enumerate(values):
            got = numgrad.result_type(x, y).name
            want = str(torch.result_type(tvalues[i], tvalues[j])).removeprefix("torch.")
            assert got == want, (i, j, got, want)


# ------------------------------------------------------------------ errors
def _same_error(f, *arrays):
    got, expected = both_raise(f, *arrays)
    want = str(expected).split("\nException raised from")[0].split("\n")[0]
    assert str(got).split("\n")[0] == want, (str(got), want)
    assert type(got) is type(expected) or (
        isinstance(expected, RuntimeError) and isinstance(got, RuntimeError))


M = _data((3, 4)).astype("float32")
ERRORS = [
    (lambda m, a: m.unbind(a[0, 0]), [M]),
    (lambda m, a: a.select(2, 0), [M]),
    (lambda m, a: a.select(0, 3), [M]),
    (lambda m, a: a.select(1, -5), [M]),
    (lambda m, a: m.tensor_split(a, 0), [M]),
    (lambda m, a: m.tensor_split(a[0, 0], 2), [M]),
    (lambda m, a: m.tensor_split(a, m.tensor([[1]])), [M]),
    (lambda m, a: m.tensor_split(a, m.tensor([1.0])), [M]),
    (lambda m, a: a.index_add(0, m.tensor([0, 5]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([-1, 1]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([0, 1]), m.ones(2, 3)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([0.0, 1]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([0, 1]), m.ones(2, 4, dtype=m.float64)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([[0, 1]]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([1]), m.ones(4)), [M]),
    (lambda m, a: a.index_copy(0, m.tensor([0, 5]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_copy(1, m.tensor([0]), m.ones(3)), [M]),
    (lambda m, a: a.index_copy(1, m.tensor([0]), m.ones(4, 1)), [M]),
    (lambda m, a: m.ones(3, 4, 5).index_copy(1, m.tensor([0]), m.ones(4, 1, 5)), [M]),
    (lambda m, a: a.index_add(1, m.tensor([0]), m.ones(3)), [M]),
    (lambda m, a: a.index_add(0, m.tensor([0]), m.ones(1, 4, 1)), [M]),
    (lambda m, a: a.index_copy(0, m.tensor([0, 1]), m.ones(3, 4)), [M]),
    (lambda m, a: a.index_copy(0, m.tensor([[0, 1]]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_copy(0, m.tensor([0.0, 1]), m.ones(2, 4)), [M]),
    (lambda m, a: a.index_copy(0, m.tensor([0, 1]), m.ones(2, 4, dtype=m.float64)), [M]),
    (lambda m, a: a.index_fill(0, m.tensor([0, 5]), 1.0), [M]),
    (lambda m, a: a.index_fill(0, m.tensor([[0, 1]]), 1.0), [M]),
    (lambda m, a: a.index_fill(0, m.tensor([0.0, 1]), 1), [M]),
    (lambda m, a: a.index_fill(0, m.tensor([0, 1]), m.tensor([1.0, 2])), [M]),
    (lambda m, a: a.take(m.tensor([12])), [M]),
    (lambda m, a: a.take(m.tensor([-13])), [M]),
    (lambda m, a: a.take(m.tensor([1.0])), [M]),
    (lambda m, a: a.masked_scatter(a > 0, m.ones(1)), [np.abs(M) + 1]),
    (lambda m, a: a.masked_scatter(m.ones(3, 4), m.ones(12)), [M]),
    (lambda m, a: a.masked_scatter(a > 0, m.ones(12, dtype=m.float64)), [M]),
    (lambda m, a: m.diff(a[0, 0]), [M]),
    (lambda m, a: m.diff(a, n=-1), [M]),
    (lambda m, a: m.diff(a, prepend=m.ones(4)), [M]),
    (lambda m, a: m.tensordot(a, a, dims=-1), [M]),
    (lambda m, a: m.tensordot(a, m.ones(5, 2), dims=1), [M]),
    (lambda m, a: m.tensordot(a, a, dims=([0], [1])), [M]),
    (lambda m, a: m.tensordot(a, a, 3), [M]),
    (lambda m, a: m.tensordot(a, a.double(), 1), [M]),
    (lambda m, a: m.tensordot(a, a, ([0, 1], [1])), [M]),
    (lambda m, a: m.baddbmm(m.ones(2, 3, 5), m.ones(2, 3, 4, dtype=m.float64), m.ones(2, 4, 5)),
     [M]),
    (lambda m, a: m.baddbmm(m.ones(2, 3, 5), m.ones(2, 3, 4), m.ones(2, 3, 5)), [M]),
    (lambda m, a: m.baddbmm(m.ones(3, 5), m.ones(2, 4, 4), m.ones(2, 4, 5)), [M]),
    (lambda m, a: m.addmv(m.ones(3), a, m.ones(5)), [M]),
    (lambda m, a: m.addmv(m.ones(2), a, m.ones(4)), [M]),
    (lambda m, a: m.addmv(m.ones(3), a, m.ones(4, 1)), [M]),
    (lambda m, a: m.addmv(m.ones(3, dtype=m.float64), a, m.ones(4)), [M]),
    (lambda m, a: m.block_diag(a, m.ones(2, 2, 2)), [M]),
    (lambda m, a: m.cartesian_prod(a), [M]),
    (lambda m, a: m.combinations(a), [M]),
    (lambda m, a: m.combinations(a[0], r=-1), [M]),
    (lambda m, a: m.logcumsumexp(a.long(), 0), [M]),
    (lambda m, a: m.cummax(a, 2), [M]),
    (lambda m, a: m.bincount(m.tensor([-1, 2])), [M]),
    (lambda m, a: m.bincount(m.tensor([[1, 2]])), [M]),
    (lambda m, a: m.bincount(m.tensor([1.0, 2])), [M]),
    (lambda m, a: m.bincount(m.tensor([1, 2]), minlength=-1), [M]),
    (lambda m, a: m.bincount(m.tensor([1, 2]), m.tensor([1.0, 2, 3])), [M]),
    (lambda m, a: m.histc(a, bins=-1), [M]),
    (lambda m, a: m.histc(a, min=2, max=1), [M]),
    (lambda m, a: m.histc(a.long()), [M]),
    (lambda m, a: m.histc(m.tensor([float("nan")])), [M]),
    (lambda m, a: m.histc(m.tensor([1.0, float("-inf")])), [M]),
    (lambda m, a: m.searchsorted(m.tensor([3.0, 1]), a, side="left", right=True), [M]),
    (lambda m, a: m.searchsorted(m.tensor([[1.0, 3]]), m.tensor([2.0, 3])), [M]),
    (lambda m, a: m.searchsorted(m.tensor([1.0, 3]), a, side="middle"), [M]),
    (lambda m, a: m.searchsorted(m.tensor(3.0), a), [M]),
    (lambda m, a: m.searchsorted(m.tensor([3.0, 1]), a, sorter=m.tensor([1, 2])), [M]),
    (lambda m, a: m.searchsorted(m.tensor([3.0, 1]), a, sorter=m.tensor([1.0, 0])), [M]),
    (lambda m, a: m.searchsorted(m.tensor([3.0, 1]), a, sorter=m.tensor([1, 0, 2])), [M]),
    (lambda m, a: m.bucketize(a, m.tensor([[1.0, 3]])), [M]),
    (lambda m, a: m.nn.functional.one_hot(m.tensor([-1, 2])), [M]),
    (lambda m, a: m.nn.functional.one_hot(m.tensor([1, 5]), 3), [M]),
    (lambda m, a: m.nn.functional.one_hot(m.tensor([1.0, 2])), [M]),
    (lambda m, a: m.nn.functional.one_hot(m.tensor([], dtype=m.int64)), [M]),
    (lambda m, a: m.triu_indices(3, 3, dtype=m.float32), [M]),
    (lambda m, a: m.tril_indices(3, -1), [M]),
    (lambda m, a: m.tril_indices(-2, 3), [M]),
    (lambda m, a: m.dropout(a, 1.5, True), [M]),
    (lambda m, a: m.is_nonzero(a), [M]),
    (lambda m, a: m.is_nonzero(a[:0]), [M]),
    (lambda m, a: m.broadcast_shapes((2, 1), (3, 4)), [M]),
    (lambda m, a: m.broadcast_shapes((2, -1)), [M]),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_pytorch(case):
    f, arrays = ERRORS[case]
    _same_error(f, *arrays)
