"""Structure ops against PyTorch (issue 16): tril/triu (and in place), diag, diagonal (a view),
diagonal_copy, trace, diag_embed, flip/fliplr/flipud, roll, outer/ger, movedim/moveaxis,
swapaxes/swapdims, unflatten and nn.Unflatten, expand_as, Tensor.repeat, repeat_interleave, tile,
atleast_Nd, hstack/vstack/dstack/column_stack, concat/concatenate, meshgrid (and its warning),
broadcast_tensors, take_along_dim, numel/is_tensor/is_floating_point.

Each case: values, dtypes, node names (``grad_fn`` and the nodes under it) and input gradients of
one vector-Jacobian product against PyTorch's, on 0-d, empty, non-contiguous and integer inputs
and negative dims; float64 gradcheck and gradgradcheck of the composed ops (the registered ones
are gradchecked by tests/test_ops.py from their samples); views sharing storage where PyTorch's
do; PyTorch's error messages.
"""
import warnings

import numpy as np
import pytest
import torch
from _helpers import both_raise, compare
from _helpers import data as random_data

import numgrad

RNG = np.random.default_rng(16)


def _data(shape, dtype="float64"):
    return random_data(RNG, shape, dtype)


def _compare(f, *arrays, grad=None):
    """Values, dtypes, node names and input gradients of ``f(module, *tensors)``."""
    return compare(RNG, f, *arrays, grad=grad)


def _t(m, a):
    """A non-contiguous view (the transpose of the last two dimensions)."""
    return a.transpose(-1, -2)


CASES = [
    # triangles
    (lambda m, a: a.tril(), [(3, 4)]),
    (lambda m, a: m.tril(a, diagonal=-2), [(2, 4, 3)]),
    (lambda m, a: m.triu(_t(m, a), 1), [(3, 4)]),
    (lambda m, a: a.triu(10), [(2, 3)]),
    (lambda m, a: a.tril(), [(0, 3)]),
    # diagonals
    (lambda m, a: a.diagonal(), [(3, 4)]),
    (lambda m, a: m.diagonal(a, -1, -1, 0), [(3, 2, 4)]),
    (lambda m, a: _t(m, a).diagonal(2), [(4, 3)]),
    (lambda m, a: a.diagonal(5), [(2, 3)]),
    (lambda m, a: m.diag(a), [(4,)]),
    (lambda m, a: m.diag(a, 2), [(3,)]),
    (lambda m, a: a.diag(-1), [(3, 4)]),
    (lambda m, a: m.diag(_t(m, a)), [(2, 3)]),
    (lambda m, a: m.diag(a), [(0,)]),
    (lambda m, a: m.diagonal_copy(a, 1), [(3, 3)]),
    (lambda m, a: a.trace(), [(3, 4)]),
    (lambda m, a: m.trace(_t(m, a)), [(2, 5)]),
    (lambda m, a: m.trace(a), [(0, 3)]),
    (lambda m, a: m.diag_embed(a), [(2, 3)]),
    (lambda m, a: m.diag_embed(a, -1, 0, 2), [(2, 3)]),
    (lambda m, a: a.diag_embed(1, dim1=-1, dim2=0), [(3,)]),
    # flip and roll
    (lambda m, a: a.flip(0), [(3, 4)]),
    (lambda m, a: m.flip(_t(m, a), (-1, 0)), [(2, 3, 4)]),
    (lambda m, a: a.flip(1, 0), [(3, 2)]),
    (lambda m, a: m.flip(a, [0]), [()]),
    (lambda m, a: m.fliplr(a), [(2, 3, 2)]),
    (lambda m, a: m.flipud(a), [(4,)]),
    (lambda m, a: a.roll(2), [(3, 4)]),
    (lambda m, a: m.roll(a, -7), [(2, 3)]),
    (lambda m, a: m.roll(_t(m, a), (1, -1), (0, -1)), [(3, 4)]),
    (lambda m, a: m.roll(a, (1, 1), (1, 1)), [(2, 3)]),
    (lambda m, a: a.roll(1), [()]),
    (lambda m, a: a.roll(1, 0), [(0, 3)]),
    # composed
    (lambda m, a, b: m.outer(a, b), [(3,), (4,)]),
    (lambda m, a, b: a.ger(b), [(2,), (0,)]),
    (lambda m, a: a.movedim(0, -1), [(2, 3, 4)]),
    (lambda m, a: m.movedim(a, (0, 2), (2, 0)), [(2, 3, 4)]),
    (lambda m, a: m.moveaxis(a, [-1], [0]), [(2, 3, 4)]),
    (lambda m, a: m.movedim(a, 0, 0), [()]),
    (lambda m, a: m.movedim(a, (), ()), [(2, 3)]),
    (lambda m, a: a.swapaxes(0, -1), [(2, 3, 4)]),
    (lambda m, a: m.swapdims(a, 1, 1), [(2, 3)]),
    (lambda m, a: a.unflatten(1, (2, -1)), [(3, 4)]),
    (lambda m, a: m.unflatten(_t(m, a), -1, (3, 1)), [(3, 4)]),
    (lambda m, a: a.unflatten(0, [1, 0, 2]), [(0, 2)]),
    (lambda m, a, b: a.expand_as(b), [(3, 1), (2, 3, 4)]),
    (lambda m, a: a.repeat(2, 1, 3), [(2, 3)]),
    (lambda m, a: a.repeat_interleave(2), [(2, 3)]),
    (lambda m, a: m.repeat_interleave(_t(m, a), 3, dim=-1), [(2, 3)]),
    (lambda m, a: a.repeat_interleave(2), [()]),
    (lambda m, a: m.repeat_interleave(a, m.tensor([3])), [()]),
    (lambda m, a: a.repeat_interleave(m.tensor([1, 0, 2]), dim=0), [(3, 2)]),
    (lambda m, a: m.repeat_interleave(a, m.tensor(2)), [(2, 2)]),
    (lambda m, a: a.tile(2), [(2, 3)]),
    (lambda m, a: m.tile(a, (2, 1, 2)), [(3,)]),
    (lambda m, a: a.tile(()), [()]),
    (lambda m, a: m.tile(a, dims=(2,)), [(2, 1)]),
    (lambda m, a, b: m.hstack([a, b]), [(2, 3), (2, 1)]),
    (lambda m, a, b: m.hstack((a, b)), [(), (3,)]),
    (lambda m, a, b: m.vstack([a, b]), [(3,), (2, 3)]),
    (lambda m, a, b: m.vstack([a, b]), [(), ()]),
    (lambda m, a, b: m.row_stack([a, b]), [(3,), (3,)]),
    (lambda m, a, b: m.dstack([a, b]), [(2, 3), (2, 3, 2)]),
    (lambda m, a, b: m.dstack((a, b)), [(3,), (3,)]),
    (lambda m, a, b: m.dstack((a, b)), [(), ()]),
    (lambda m, a, b, c: m.column_stack([a, b, c]), [(3,), (3, 2), (3,)]),
    (lambda m, a, b: m.column_stack([a, b]), [(), ()]),
    (lambda m, a, b: m.concat([a, b], dim=-1), [(2, 3), (2, 1)]),
    (lambda m, a, b: m.concatenate((a, b)), [(2, 3), (1, 3)]),
    (lambda m, a, b: m.meshgrid(a, b, indexing="ij"), [(3,), (2,)]),
    (lambda m, a, b, c: m.meshgrid([a, b, c], indexing="xy"), [(3,), (2,), ()]),
    (lambda m, a: m.meshgrid(a, indexing="xy"), [(3,)]),
    (lambda m, a, b: m.broadcast_tensors(a, b), [(3, 1), (4,)]),
    (lambda m, a, b, c: m.broadcast_tensors(a, b, c), [(2, 3), (3,), ()]),
    (lambda m, a: m.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    (lambda m, a: a.broadcast_to((-1, 3)), [(2, 1)]),
    (lambda m, a: m.ravel(a), [(2, 3)]),
    (lambda m, a: _t(m, a).ravel(), [(2, 3)]),
    (lambda m, a: m.ravel(a), [()]),
    (lambda m, a: m.take_along_dim(a, m.tensor([[0, 2], [1, 1], [3, 0]]), 1), [(3, 4)]),
    (lambda m, a: a.take_along_dim(m.tensor([[2, 0, 1, 1]]), dim=0), [(3, 4)]),
    (lambda m, a: m.take_along_dim(_t(m, a), m.tensor([[0], [2]]), -1), [(3, 2)]),
    (lambda m, a: m.take_along_dim(a, m.tensor([5, 0, 5])), [(2, 3)]),
]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_matches_pytorch(index):
    f, shapes = CASES[index]
    _compare(f, *[_data(s) for s in shapes])


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "bool"])
@pytest.mark.parametrize("f, shape", [
    (lambda m, a: a.tril(1), (3, 4)), (lambda m, a: a.triu(), (2, 3, 3)),
    (lambda m, a: a.diagonal(-1), (3, 4)), (lambda m, a: m.diag(a), (3,)),
    (lambda m, a: m.diag_embed(a, 1), (2, 2)), (lambda m, a: a.flip(-1), (2, 3)),
    (lambda m, a: a.roll((1, 2), (0, 1)), (2, 3)), (lambda m, a: m.hstack([a, a]), (2,)),
    (lambda m, a: a.repeat_interleave(m.tensor([2, 1]), dim=0), (2, 2)),
    (lambda m, a: a.tile(2, 1), (2,)), (lambda m, a: m.meshgrid(a, a, indexing="ij"), (2,)),
    (lambda m, a: m.take_along_dim(a, m.tensor([[1], [0]]), 1), (2, 3)),
])
def test_other_dtypes(f, shape, dtype):
    _compare(f, _data(shape, dtype))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_trace_dtypes(dtype):
    _compare(lambda m, a: m.trace(a), _data((3, 3), dtype))
    _compare(lambda m, a, b: m.outer(a, b), _data((2,), dtype), _data((3,), "float64"))


# The composed ops, through gradcheck and gradgradcheck (float64).
GRADCHECKED = [
    (lambda a, b: numgrad.outer(a, b), [(3,), (2,)]),
    (lambda a: a.movedim((0, 1), (2, 0)), [(2, 3, 2)]),
    (lambda a: a.swapaxes(0, 1).unflatten(0, (2, 2)), [(3, 4)]),
    (lambda a: a.repeat_interleave(2, dim=1), [(2, 3)]),
    (lambda a: a.repeat_interleave(numgrad.tensor([2, 0, 1])), [(3,)]),
    (lambda a: a.tile(2, 1, 2), [(2, 2)]),
    (lambda a, b: numgrad.column_stack([a, b]), [(3,), (3, 2)]),
    (lambda a, b: numgrad.dstack([a, b]), [(2, 2), (2, 2)]),
    (lambda a, b: numgrad.meshgrid(a, b, indexing="xy"), [(3,), (2,)]),
    (lambda a, b: numgrad.broadcast_tensors(a, b), [(3, 1), (2,)]),
    (lambda a: numgrad.take_along_dim(a, numgrad.tensor([[0, 0], [2, 1]]), 1), [(2, 3)]),
    (lambda a: (a * a).tril(-1).flip(0).roll(1, 1).diagonal(), [(3, 3)]),
    (lambda a: numgrad.trace(a * a) * numgrad.diag(a).sum(), [(2, 3)]),
]


@pytest.mark.parametrize("index", range(len(GRADCHECKED)))
def test_gradcheck_and_gradgradcheck(index):
    f, shapes = GRADCHECKED[index]
    xs = [numgrad.tensor(_data(s), requires_grad=True) for s in shapes]
    assert numgrad.autograd.gradcheck(f, xs)
    assert numgrad.autograd.gradgradcheck(f, xs)


# ------------------------------------------------------------------ views
@pytest.mark.parametrize("f", [
    lambda m, a: a.diagonal(), lambda m, a: m.diagonal(a, 1, 1, 0),
    lambda m, a: a.movedim(0, 1), lambda m, a: m.swapaxes(a, 0, 1), lambda m, a: a.swapdims(1, 0),
    lambda m, a: a.unflatten(1, (2, 2)), lambda m, a: m.moveaxis(a, 1, 0),
    lambda m, a: a.ravel(), lambda m, a: a.unfold(1, 2, 2),
])
def test_views_share_storage_as_pytorch(f):
    data = _data((3, 4))
    base, tbase = numgrad.tensor(data), torch.tensor(data)
    v, tv = f(numgrad, base), f(torch, tbase)
    assert v._base is base and tv._base is tbase
    v.mul_(0)  # (written through the view: the base changes as PyTorch's does)
    tv.mul_(0)
    np.testing.assert_array_equal(base.numpy(), tbase.numpy())
    assert base._version == tbase._version


def test_copies_do_not_share_storage():
    data = _data((3, 3))
    for f in (lambda m, a: m.diag(a), lambda m, a: a.flip(0), lambda m, a: a.roll(1),
              lambda m, a: a.tril(), lambda m, a: a.repeat_interleave(2),
              lambda m, a: m.hstack([a])):
        base, tbase = numgrad.tensor(data), torch.tensor(data)
        out, tout = f(numgrad, base), f(torch, tbase)
        assert (out._base is None) == (tout._base is None)
        assert out._base is not base and tout._base is not tbase
        out.mul_(0)
        np.testing.assert_array_equal(base.numpy(), data)


def test_expand_as_and_broadcast_tensors_are_views():
    a = numgrad.tensor(_data((3, 1)))
    e = a.expand_as(numgrad.zeros(2, 3, 4))
    assert e._base is a and e.shape == (2, 3, 4)
    b, c = numgrad.broadcast_tensors(a, numgrad.zeros(3, 3))
    assert b._base is a
    d = numgrad.zeros(3, 3)
    assert numgrad.broadcast_tensors(d, a)[0] is d  # (already of the shape: returned, as torch)
    x = torch.zeros(3, 3)
    assert torch.broadcast_tensors(x, torch.zeros(3, 1))[0] is x


def test_the_diagonal_view_of_a_requires_grad_tensor_after_an_inplace_write():
    data = _data((3, 3))
    outs = []
    for m in (numgrad, torch):
        x = m.tensor(data, requires_grad=True)
        y = x * 1
        y.diagonal().mul_(2)
        y.sum().backward()
        outs.append((y.grad_fn.name(), x.grad.numpy().copy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("name", ["tril_", "triu_"])
def test_inplace_triangles(name):
    data = _data((3, 4))
    results = []
    for m in (numgrad, torch):
        x = m.tensor(data, requires_grad=True)
        y = x * 2
        out = getattr(y, name)(1)
        assert out is y
        y.sum().backward()
        results.append((y.detach().numpy().copy(), y.grad_fn.name(), y._version,
                        x.grad.numpy().copy()))
    (a, na, va, ga), (b, nb, vb, gb) = results
    np.testing.assert_array_equal(a, b)
    assert (na, va) == (nb, vb)
    np.testing.assert_array_equal(ga, gb)
    plain = numgrad.tensor(data)
    getattr(plain, name)(-1)
    np.testing.assert_array_equal(plain.numpy(), getattr(torch.tensor(data), name)(-1).numpy())


def test_repeat_interleave_of_counts_alone():
    for counts in ([1, 0, 3], [], [2]):
        ours = numgrad.repeat_interleave(numgrad.tensor(counts, dtype=numgrad.int64))
        theirs = torch.repeat_interleave(torch.tensor(counts, dtype=torch.int64))
        assert ours.dtype is numgrad.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    out = numgrad.repeat_interleave(numgrad.tensor([[1.0, 2.0]]), numgrad.tensor([2]), dim=1,
                                    output_size=4)
    assert out.shape == (1, 4)


def test_meshgrid_warns_without_indexing_as_pytorch():
    a = numgrad.tensor([1.0, 2.0])
    with pytest.warns(UserWarning) as ours:
        grids = numgrad.meshgrid(a, a)
    with pytest.warns(UserWarning) as theirs:
        torch.meshgrid(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))
    assert str(theirs[0].message).startswith(str(ours[0].message))
    assert grids[0].shape == (2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numgrad.meshgrid(a, a, indexing="ij")


def test_unflatten_module():
    for m in (numgrad, torch):
        layer = m.nn.Unflatten(1, (2, 3))
        assert repr(layer) == "Unflatten(dim=1, unflattened_size=(2, 3))"
        x = m.ones(4, 6, requires_grad=True)
        y = layer(x)
        assert tuple(y.shape) == (4, 2, 3) and y.grad_fn.name() == "ViewBackward0"
        assert isinstance(layer, m.nn.Module) and not list(layer.parameters())
    seq = numgrad.nn.Sequential(numgrad.nn.Flatten(), numgrad.nn.Unflatten(1, (3, 4)))
    assert seq(numgrad.ones(2, 3, 4)).shape == (2, 3, 4)


def test_unflatten_module_errors():
    for bad in (2, (2, 2.0)):
        with pytest.raises(TypeError) as theirs:
            torch.nn.Unflatten(1, bad)
        with pytest.raises(TypeError) as ours:
            numgrad.nn.Unflatten(1, bad)
        assert str(ours.value) == str(theirs.value)


def test_size_and_type_predicates():
    for data in (_data((2, 3)), _data(()), _data((0, 4)), _data((3,), "int64")):
        ours, theirs = numgrad.tensor(data), torch.tensor(data)
        assert numgrad.numel(ours) == torch.numel(theirs)
        assert numgrad.is_floating_point(ours) == torch.is_floating_point(theirs)
        assert numgrad.is_tensor(ours) and torch.is_tensor(theirs)
    for obj in (3, [1.0], np.ones(2), None):
        assert numgrad.is_tensor(obj) == torch.is_tensor(obj)


# ------------------------------------------------------------------ errors
def _same_error(f, *arrays):
    got, expected = both_raise(f, *arrays)
    want = str(expected).split("\nException raised from")[0]
    if "torch.FloatTensor" in want or "DoubleTensor" in want:  # (a tensor printed: its head)
        want = want.split(":")[0]
    assert str(got).startswith(want) and want, (str(got), want)
    assert type(got) is type(expected) or (
        isinstance(expected, RuntimeError) and isinstance(got, RuntimeError))


M = _data((3, 4))
V = _data((3,))
ERRORS = [
    (lambda m, v: m.tril(v), [V]), (lambda m, a: m.triu(a), [np.float64(1.0)]),
    (lambda m, a: m.tril(a, 1.5), [M]), (lambda m, a: a.tril_(), [V]),
    (lambda m, a: m.diag(a), [_data((2, 2, 2))]), (lambda m, a: m.diag(a), [np.float64(1)]),
    (lambda m, a: m.diagonal(a, 0, 0, 0), [M]), (lambda m, a: m.diagonal(a, 0, 0, 2), [M]),
    (lambda m, a: m.diagonal(a, 0.5), [M]), (lambda m, a: m.diag_embed(a, 0, 0, -2), [V]),
    (lambda m, a: m.diagonal(a, 0, 0, -2), [M]), (lambda m, a: a.flip(), [M]),
    (lambda m, a: a.repeat_interleave(2, 0), [np.float64(1)]),
    (lambda m, a: a.repeat_interleave(m.tensor([3]), 0), [np.float64(1)]),
    (lambda m, v: m.trace(v), [V]), (lambda m, a: m.trace(a), [_data((2, 2, 2))]),
    (lambda m, a: m.trace(a), [_data((2, 2), "bool")]),
    (lambda m, a: m.flip(a, (0, 0)), [M]), (lambda m, a: m.flip(a, (2,)), [M]),
    (lambda m, v: m.fliplr(v), [V]), (lambda m, a: m.flipud(a), [np.float64(1)]),
    (lambda m, a: m.roll(a, (1, 2), (0,)), [M]), (lambda m, a: m.roll(a, 1, 2), [M]),
    (lambda m, a: m.roll(a, ()), [M]), (lambda m, a: m.roll(a, (1, 2)), [M]),
    (lambda m, a: m.roll(a, 1, 0), [np.float64(1)]),
    (lambda m, a, v: m.outer(a, v), [M, V]), (lambda m, v, a: m.outer(v, a), [V, M]),
    (lambda m, a: m.movedim(a, (0, 1), (0,)), [M]), (lambda m, a: m.movedim(a, (0, 0), (0, 1)), [M]),
    (lambda m, a: m.movedim(a, (0, 1), (1, 1)), [M]), (lambda m, a: m.movedim(a, 2, 0), [M]),
    (lambda m, a: m.swapaxes(a, 0, 2), [M]),
    (lambda m, a: a.unflatten(1, (3, 2)), [M]), (lambda m, a: a.unflatten(1, (-1, -1)), [M]),
    (lambda m, a: a.unflatten(1, ()), [M]), (lambda m, a: a.unflatten(1, (-1, 3)), [M]),
    (lambda m, a: a.unflatten(0, (1,)), [np.float64(1)]),
    (lambda m, a: m.repeat_interleave(a, -1), [M]),
    (lambda m, a: m.repeat_interleave(a, m.tensor([1, 2]), dim=0), [M]),
    (lambda m, a: m.repeat_interleave(a, m.tensor([1, -2, 1]), dim=0), [M]),
    (lambda m, a: m.repeat_interleave(a, m.tensor([[1]]), dim=0), [M]),
    (lambda m, a: m.repeat_interleave(a, m.tensor([1.0, 2, 3]), dim=0), [M]),
    (lambda m, a: m.tile(a, (2, -1)), [M]),
    (lambda m: m.hstack([]), []), (lambda m: m.vstack([]), []), (lambda m: m.dstack([]), []),
    (lambda m: m.column_stack([]), []), (lambda m, a, v: m.hstack([a, v]), [M, V]),
    (lambda m, a, v: m.meshgrid(a, v, indexing="ij"), [M, V]),
    (lambda m, v: m.meshgrid(v, v, indexing="foo"), [V]),
    (lambda m, v: m.meshgrid(v, v.float(), indexing="ij"), [V]),
    (lambda m: m.meshgrid(indexing="ij"), []),
    (lambda m, a, v: m.broadcast_tensors(a, v[:2]), [M, V]),
    (lambda m, a: m.take_along_dim(a, m.tensor([[0.0]]), 1), [M]),
    (lambda m, a: m.take_along_dim(a, m.tensor([[0]], dtype=m.int32), 1), [M]),
    (lambda m, a: m.take_along_dim(a, m.tensor([0]), 1), [M]),
    (lambda m, a: m.take_along_dim(a, m.tensor([[0]]), 2), [M]),
    (lambda m: m.numel(3), []), (lambda m: m.is_floating_point([1.0]), []),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_as_pytorch(index):
    f, arrays = ERRORS[index]
    _same_error(f, *arrays)


def test_out_keyword_as_pytorch():
    data = _data((3, 3))
    for name, args in (("tril", (1,)), ("diag", ()), ("outer", None), ("hstack", None)):
        results = []
        for m in (numgrad, torch):
            x = m.tensor(data)
            out = m.empty(0, dtype=m.float64)
            if name == "outer":
                got = m.outer(x[0], x[1], out=out)
            elif name == "hstack":
                got = m.hstack([x, x], out=out)
            else:
                got = getattr(m, name)(x, *args, out=out)
            assert got is out
            results.append(out.numpy().copy())
        np.testing.assert_array_equal(results[0], results[1])


def test_inplace_triangles_through_a_view_and_on_a_leaf():
    data = _data((4, 3))
    results = []
    for m in (numgrad, torch):
        x = m.tensor(data, requires_grad=True)
        y = x * 1
        y[1:].triu_(1)  # (written through the view into its base)
        (y * y).sum().backward()
        results.append((y.detach().numpy().copy(), y.grad_fn.name(), x.grad.numpy().copy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]
    np.testing.assert_allclose(results[0][2], results[1][2])
    _same_error(lambda m, a: a.requires_grad_().tril_(), data)


@pytest.mark.parametrize("call", [
    lambda m: m.zeros(3, 4).unfold(2, 2, 1), lambda m: m.zeros(3, 4).unfold(1, 5, 1),
    lambda m: m.zeros(3, 4).unfold(1, 2, 0), lambda m: m.zeros(3, 4).unfold(1, -1, 1),
    lambda m: m.tensor(5.0).unfold(0, 2, 1),
])
def test_unfold_errors_match_pytorch(call):
    with pytest.raises((IndexError, RuntimeError)) as theirs:
        call(torch)
    with pytest.raises(theirs.type) as ours:
        call(numgrad)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda m, x: x.unfold(1, 2, 1), lambda m, x: x.unfold(0, 2, 1), lambda m, x: x.unfold(-1, 2, 3),
    lambda m, x: x.unfold(1, 0, 1), lambda m, x: x.t().unfold(1, 3, 1), lambda m, x: x[0, 0].unfold(0, 1, 1),
    lambda m, x: m.zeros(3, 0).unfold(1, 0, 1),
])
def test_unfold_shapes_strides_and_values_match_pytorch(call):
    ours = call(numgrad, numgrad.arange(12.0).view(3, 4))
    theirs = call(torch, torch.arange(12.0).view(3, 4))
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
