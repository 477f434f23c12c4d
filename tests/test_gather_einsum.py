"""gather, scatter (tensor and number forms, reduce=), scatter_add, the in-place scatter_ and
scatter_add_, index_select and einsum against PyTorch: values, dtypes, gradients (second ones
too), node names and errors (indices out of range, wrong index dtypes and shapes)."""
import numpy as np
import pytest
import torch

import numgrad

pytestmark = pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
RNG = np.random.default_rng(1)
M34 = RNG.uniform(-2, 2, (3, 4))
T234 = RNG.uniform(-2, 2, (2, 3, 4))


def _pair(values, dtype="float64", requires_grad=False):
    a = np.asarray(values, dtype=dtype)
    return (numgrad.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _index(values, dtype="int64"):
    return _pair(values, dtype)


def _same(ours, theirs, exact=False):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    if exact:
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    else:
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)


def _node(ours, theirs):
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__


def _same_error(ours, theirs):
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(Exception) as got:
        ours()
    assert str(got.value) == str(expected.value)
    assert isinstance(got.value, type(expected.value)) or (
        issubclass(type(expected.value), RuntimeError) and isinstance(got.value, RuntimeError))


def _check(f, *arrays, grad=True, gradgrad=True):
    """Values, node and input gradients of ``f(module, *tensors)`` against PyTorch, and a
    float64 gradcheck (and gradgradcheck)."""
    ours = [numgrad.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    out, tout = f(numgrad, *ours), f(torch, *theirs)
    _same(out, tout)
    if not grad:
        return
    _node(out, tout)
    g = np.random.default_rng(5).standard_normal(tuple(tout.shape))
    out.backward(numgrad.tensor(g))
    tout.backward(torch.tensor(g))
    for o, t in zip(ours, theirs):
        _same(o.grad, t.grad)
    fresh = [numgrad.tensor(a, requires_grad=True) for a in arrays]
    assert numgrad.autograd.gradcheck(lambda *xs: f(numgrad, *xs), fresh)
    if gradgrad:
        assert numgrad.autograd.gradgradcheck(lambda *xs: f(numgrad, *xs), fresh)


def _idx(m, values):
    return m.tensor(values)


# ------------------------------------------------------------------ gather
@pytest.mark.parametrize("f, shape", [
    (lambda m, x: x.gather(1, _idx(m, [[0, 0, 3], [1, 2, 1]])), (3, 4)),  # smaller index
    (lambda m, x: m.gather(x, 0, _idx(m, [[2, 0, 1, 1], [0, 0, 0, 2]])), (3, 4)),
    (lambda m, x: x.gather(-1, _idx(m, [[[1], [0], [3]], [[2], [2], [0]]])), (2, 3, 4)),
    (lambda m, x: x.t().gather(0, _idx(m, [[3, 0, 1]])), (3, 4)),  # non-contiguous input
    (lambda m, x: x.gather(0, _idx(m, 0)), ()),  # 0-d
    (lambda m, x: x.gather(0, _idx(m, [2, 2, 0])), (3,)),
])
def test_gather(f, shape):
    _check(f, RNG.uniform(-2, 2, shape))


def test_gather_int32_and_empty_index_and_integer_input():
    x, xt = _pair(M34)
    for dtype in ("int32", "int64"):
        i, it = _index([[1, 0], [3, 3], [0, 2]], dtype)
        _same(x.gather(1, i), xt.gather(1, it), exact=True)
    i, it = _index(np.zeros((3, 0)))
    _same(x.gather(1, i), xt.gather(1, it))
    x, xt = _pair([[1, 2], [3, 4]], "int64")
    i, it = _index([[1, 1], [0, 1]])
    _same(x.gather(1, i), xt.gather(1, it), exact=True)


def test_gather_errors():
    x, xt = _pair(M34)
    for idx, dim in (([[5]], 1), ([[-1]], 1), ([[0]], 2), ([1], 1), (np.zeros((4, 1)), 1)):
        i, it = _index(idx)
        _same_error(lambda: x.gather(dim, i), lambda: xt.gather(dim, it))
    i, it = _pair([[1.0]])
    _same_error(lambda: x.gather(1, i), lambda: xt.gather(1, it))
    s, st = _pair(3.0)
    i, it = _index(1)
    _same_error(lambda: s.gather(0, i), lambda: st.gather(0, it))


# ------------------------------------------------------------------ scatter / scatter_add
@pytest.mark.parametrize("f, shapes", [
    (lambda m, x, s: x.scatter(1, _idx(m, [[0, 3], [2, 1], [1, 0]]), s), ((3, 4), (3, 2))),
    (lambda m, x, s: m.scatter(x, 0, _idx(m, [[2, 0, 1, 0]]), s), ((3, 4), (1, 4))),
    (lambda m, x, s: x.scatter(-1, _idx(m, [[[1], [0], [3]]]), s), ((2, 3, 4), (1, 3, 1))),
    (lambda m, x, s: x.scatter_add(0, _idx(m, [[0, 1, 2, 0], [0, 0, 0, 2]]), s),
     ((3, 4), (2, 4))),  # repeated positions add up
    (lambda m, x, s: m.scatter_add(x.t(), 1, _idx(m, [[1, 1], [0, 2]]), s), ((3, 4), (2, 2))),
    (lambda m, x, s: x.scatter_add(0, _idx(m, 0), s), ((), ())),
])
def test_scatter_and_scatter_add(f, shapes):
    _check(f, *(RNG.uniform(-2, 2, s) for s in shapes))


@pytest.mark.parametrize("value", [1.5, -2, 0])
def test_scatter_of_a_number(value):
    _check(lambda m, x: x.scatter(1, _idx(m, [[0, 2], [3, 1]]), value), M34[:2])
    _check(lambda m, x: m.scatter(x, 0, _idx(m, [[1, 0, 1, 2]]), value=value), M34)
    x, xt = _pair([[1, 2, 3]], "int64")
    i, it = _index([[2]])
    _same(x.scatter(1, i, 7.9), xt.scatter(1, it, 7.9), exact=True)  # cast, as PyTorch


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_argument(reduce):
    x, xt = _pair(M34)
    s, st = _pair(RNG.uniform(-2, 2, (3, 2)))
    i, it = _index([[0, 0], [2, 0], [3, 3]])  # repeated positions combine
    _same(x.scatter(1, i, s, reduce=reduce), xt.scatter(1, it, st, reduce=reduce))
    _same(x.scatter(1, i, 2.5, reduce=reduce), xt.scatter(1, it, 2.5, reduce=reduce))
    _same_error(lambda: x.scatter(1, i, s, reduce="max"), lambda: xt.scatter(1, it, st, reduce="max"))


def test_scatter_in_place():
    for name, args in (("scatter_", ("src",)), ("scatter_", (2.0,)), ("scatter_add_", ("src",))):
        a, at = _pair(M34, requires_grad=True)
        s, st = _pair(RNG.uniform(-2, 2, (3, 2)), requires_grad=True)
        i, it = _index([[0, 3], [2, 1], [1, 0]])
        y, yt = a * 2, at * 2
        ours = getattr(y, name)(1, i, *(s if v == "src" else v for v in args))
        theirs = getattr(yt, name)(1, it, *(st if v == "src" else v for v in args))
        assert ours is y and theirs is yt
        _same(y, yt)
        _node(y, yt)
        (y * y).sum().backward()
        (yt * yt).sum().backward()
        _same(a.grad, at.grad)
        if args == ("src",):
            _same(s.grad, st.grad)
        assert y._version == 1 or y._version == yt._version
    a, at = _pair(M34, requires_grad=True)
    i, it = _index([[0]])
    _same_error(lambda: a.scatter_(1, i, 1.0), lambda: at.scatter_(1, it, 1.0))


def test_scatter_errors():
    x, xt = _pair(M34)
    s, st = _pair(np.ones((1, 1)))
    for f in (lambda m, x, s, i: x.scatter(1, i([[5]]), s),
              lambda m, x, s, i: x.scatter_add(1, i([[-1]]), s),
              lambda m, x, s, i: x.scatter(1, i([[1]]), s.to(m.float32)),
              lambda m, x, s, i: x.scatter(1, i([[1.0]]), s),
              lambda m, x, s, i: x.scatter_add(1, i([[1.0]]), s),
              lambda m, x, s, i: x.scatter(1, i([1]), s),
              lambda m, x, s, i: x.scatter_add(1, i(np.zeros((3, 5), np.int64)), m.ones(3, 4,
                                                                                 dtype=x.dtype)),
              lambda m, x, s, i: x.scatter(1, i(np.zeros((2, 4), np.int64)), m.ones(1, 4,
                                                                             dtype=x.dtype))):
        _same_error(lambda: f(numgrad, x, s, numgrad.tensor), lambda: f(torch, xt, st, torch.tensor))


# ------------------------------------------------------------------ index_select
@pytest.mark.parametrize("f, shape", [
    (lambda m, x: x.index_select(0, _idx(m, [2, 0, 2])), (3, 4)),
    (lambda m, x: m.index_select(x, -1, _idx(m, [3, 1])), (2, 3, 4)),
    (lambda m, x: x.t().index_select(1, _idx(m, [1])), (3, 4)),
    (lambda m, x: x.index_select(1, _idx(m, 2)), (3, 4)),  # a 0-d index
    (lambda m, x: x.index_select(0, _idx(m, [0])), ()),  # a 0-d input
    (lambda m, x: x.index_select(0, _idx(m, 0)), ()),
])
def test_index_select(f, shape):
    _check(f, RNG.uniform(-2, 2, shape))


def test_index_select_int32_empty_and_errors():
    x, xt = _pair(M34)
    i, it = _index([2, 0], "int32")
    _same(x.index_select(1, i), xt.index_select(1, it), exact=True)
    i, it = _index(np.zeros(0))
    _same(x.index_select(0, i), xt.index_select(0, it))
    for idx, dtype in (([5], "int64"), ([-1], "int64"), ([[1]], "int64"), ([1.0], "float32")):
        i, it = _pair(idx, dtype)
        _same_error(lambda: x.index_select(1, i), lambda: xt.index_select(1, it))
    for shape, dim in (((3,), 0), ((3, 4), 0), ((2, 3, 4), 1), ((0,), 0), ((0, 3), 0), ((3, 0), 0),
                       ((3, 0), 1), ((), 0)):
        y, yt = _pair(np.zeros(shape))
        i, it = _index([7])
        _same_error(lambda: y.index_select(dim, i), lambda: yt.index_select(dim, it))
        _same_error(lambda: y.t().index_select(0, i) if y.ndim == 2 else y.index_select(-1, i),
                    lambda: yt.t().index_select(0, it) if yt.ndim == 2 else yt.index_select(-1, it))
    s, st = _pair(2.0)
    i, it = _index([0, 0])
    _same_error(lambda: s.index_select(0, i), lambda: st.index_select(0, it))
    _same_error(lambda: x.index_select(2, i), lambda: xt.index_select(2, it))


# ------------------------------------------------------------------ einsum
EINSUM = [
    ("ij,jk->ik", (3, 4), (4, 2)),
    ("ij,jk", (3, 4), (4, 2)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("bij,bjk", (2, 3, 4), (2, 4, 5)),
    ("ii->i", (3, 3)),
    ("ii", (3, 3)),
    ("ij->ji", (3, 4)),
    ("ij", (3, 4)),
    ("ji", (3, 4)),
    ("i,i->", (4,), (4,)),
    ("i,j->ij", (3,), (4,)),
    ("...ij,...jk->...ik", (2, 3, 3, 4), (4, 2)),
    ("...ij,...jk", (5, 3, 4), (5, 4, 2)),
    ("ij->", (3, 4)),
    ("ij->j", (3, 4)),
    ("ij,ij->ij", (3, 4), (3, 4)),
    ("iij->j", (2, 2, 3)),
    ("ij,j->i", (3, 4), (4,)),
    ("ij,kj->ik", (3, 4), (2, 4)),
    ("ab,bc,cd->ad", (2, 3), (3, 4), (4, 2)),
    ("bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5)),
    ("ik,k->i", (3, 1), (4,)),  # a size-1 subscript broadcasts
    ("i j , j k -> i k", (3, 4), (4, 2)),  # spaces
    ("Ab,bA->A", (3, 4), (4, 3)),
]


@pytest.mark.parametrize("case", EINSUM, ids=[c[0] for c in EINSUM])
def test_einsum(case):
    equation, *shapes = case
    _check(lambda m, *xs: m.einsum(equation, *xs), *(RNG.uniform(-2, 2, s) for s in shapes))


def test_einsum_takes_a_list_and_non_contiguous_operands():
    a, at = _pair(T234)
    b, bt = _pair(M34)
    _same(numgrad.einsum("bij,jk->bik", [a.transpose(1, 2), b]),
          torch.einsum("bij,jk->bik", [at.transpose(1, 2), bt]))


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk", ((2, 3), (4, 3))),
    ("ij,jk", ((2, 3),)),
    ("ij", ((2, 3), (2, 3))),
    ("ijk", ((2, 3),)),
    ("i1", ((2, 3),)),
    ("ij->k", ((2, 3),)),
    ("ii", ((2, 3),)),
    ("ij->ii", ((2, 3),)),
    ("...ij,k", ((2,), (2,))),
])
def test_einsum_errors(equation, shapes):
    ours = [numgrad.zeros(*s) for s in shapes]
    theirs = [torch.zeros(*s) for s in shapes]
    _same_error(lambda: numgrad.einsum(equation, *ours), lambda: torch.einsum(equation, *theirs))
