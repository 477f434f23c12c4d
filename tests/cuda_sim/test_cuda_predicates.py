"""The predicates, nan-aware and order reductions and data-dependent ops on CUDA tensors, against
the CPU, in Numba's CUDA simulator (run with tests/cuda_sim, see test_cuda_sim.py): NaN, ±inf and
±0, integer and bool inputs, 0-d, empty and non-contiguous tensors, gradients, results that stay
on the device, and the data-dependent ops' one read."""
import math

import numpy as np
import pytest

import numgrad

NAN, INF = math.nan, math.inf
RNG = np.random.default_rng(5)

DATA = {
    "special": np.array([[0.0, -0.0, 1.5, NAN], [INF, -INF, 3.0, NAN], [2.0, 2.0, -1.0, 1e-300]]),
    "matrix": RNG.standard_normal((3, 5)),
    "scalar": np.array(NAN),
    "empty": np.zeros((0, 2)),
    "int": np.array([[3, 0, -2], [0, 5, 5]], np.int64),
    "bool": np.array([[True, False], [False, False]]),
}


def _pair(a, requires_grad=False):
    return (numgrad.tensor(a, requires_grad=requires_grad),
            numgrad.tensor(a, device="cuda", requires_grad=requires_grad))


def _same(cpu, gpu):
    if isinstance(cpu, tuple):
        assert isinstance(gpu, tuple) and len(cpu) == len(gpu)
        for c, g in zip(cpu, gpu):
            _same(c, g)
        return
    if isinstance(cpu, bool):
        assert gpu is cpu
        return
    assert gpu.device.type == "cuda", "the result stays on the device"
    assert tuple(gpu.shape) == tuple(cpu.shape) and gpu.dtype is cpu.dtype
    np.testing.assert_allclose(gpu.detach().cpu().numpy(), cpu.detach().numpy(), rtol=1e-12,
                               atol=0)


def _both(fn, *arrays):
    cpu = [numgrad.tensor(a) for a in arrays]
    gpu = [numgrad.tensor(a, device="cuda") for a in arrays]
    _same(fn(*cpu), fn(*gpu))


def _views(a):
    yield a
    if a.ndim == 2:
        yield a.T


PREDICATES = {
    "isnan": numgrad.isnan, "isinf": numgrad.isinf, "isposinf": numgrad.isposinf,
    "isneginf": numgrad.isneginf, "isfinite": numgrad.isfinite,
    "any": numgrad.any, "all": numgrad.all, "count_nonzero": numgrad.count_nonzero,
    "any_dim": lambda x: x.any(-1, keepdim=True), "all_dims": lambda x: x.all((0, 1))
    if x.ndim == 2 else x.all(),
    "count_dim": lambda x: x.count_nonzero(0) if x.ndim else x.count_nonzero(),
    "nonzero": numgrad.nonzero, "nonzero_tuple": lambda x: x.nonzero(as_tuple=True),
    "argwhere": numgrad.argwhere,
}


@pytest.mark.parametrize("name", sorted(PREDICATES))
@pytest.mark.parametrize("case", sorted(DATA))
def test_predicates(name, case):
    for a in _views(DATA[case]):
        _both(PREDICATES[name], a)


def test_isclose_allclose_equal_isin():
    a = np.array([1.0, 1.0 + 1e-6, NAN, INF, -INF, 0.0, 100.0])
    b = np.array([1.0, 1.0, NAN, INF, INF, -0.0, 100.01])
    _both(numgrad.isclose, a, b)
    _both(lambda x, y: x.isclose(y, rtol=1e-3, equal_nan=True), a, b)
    _both(lambda x, y: numgrad.isclose(x, y, atol=1), np.array([1, 5]), np.array([2, 7]))
    _both(lambda x, y: numgrad.isclose(x, y), RNG.standard_normal((3, 1)), RNG.standard_normal(4))
    _both(numgrad.allclose, a[:2], b[:2])
    _both(numgrad.equal, a, a.copy())
    _both(numgrad.equal, a[:2], b[:2])
    _both(numgrad.isin, np.array([[1, 2], [3, 4]]), np.array([2, 3, 9]))


@pytest.mark.parametrize("case", ["special", "matrix", "scalar", "empty", "int"])
def test_nan_reductions_and_nan_to_num(case):
    a = DATA[case]
    for v in _views(a):
        _both(numgrad.nan_to_num, v)
        _both(lambda x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0), v)
        if v.size:  # (an empty CUDA tensor is refused by every in-place op: is_writeable)
            _both(lambda x: x.clone().nan_to_num_(posinf=3.0), v)
        _both(numgrad.nansum, v)
        if v.ndim:
            _both(lambda x: x.nansum(-1, keepdim=True), v)
        if v.dtype.kind == "f" and v.size and not np.isnan(v).all():
            _both(numgrad.nanmean, v)  # (the simulator raises on 0 / 0)


@pytest.mark.parametrize("case", ["special", "matrix", "scalar", "int"])
def test_median(case):
    a = DATA[case]
    for v in _views(a):
        for name in ("median", "nanmedian"):
            _both(getattr(numgrad, name), v)
            for d in range(v.ndim) if v.ndim else (0,):
                _both(lambda x: tuple(getattr(x, name)(d)), v)
                _both(lambda x: tuple(getattr(numgrad, name)(x, d, keepdim=True)), v)


@pytest.mark.parametrize("case", ["special", "matrix", "scalar", "int", "bool"])
def test_mode(case):
    a = DATA[case]
    for v in _views(a):
        for d in range(v.ndim) if v.ndim else (0,):
            _both(lambda x: tuple(numgrad.mode(x, d)), v)
            _both(lambda x: tuple(x.mode(d, keepdim=True)), v)


def test_median_aminmax_var_mean_gradients():
    a = np.array([[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 3.0, 0.25], [0.5, -1.0, 4.0, 2.5]])
    calls = [lambda x: x.median(), lambda x: x.median(1).values, lambda x: x.nanmedian(0)[0],
             lambda x: x.mode(1).values, lambda x: x.t().mode(1, keepdim=True)[0],
             lambda x: numgrad.aminmax(x, dim=1).max, lambda x: numgrad.aminmax(x).min,
             lambda x: numgrad.var_mean(x, 1)[0] + numgrad.var_mean(x, 1)[1],
             lambda x: numgrad.std_mean(x)[0] * numgrad.std_mean(x)[1],
             lambda x: numgrad.nan_to_num(x.log()), lambda x: numgrad.nansum(x.log(), 0),
             lambda x: numgrad.nanmean(x.log())]
    for fn in calls:
        c, g = _pair(a, requires_grad=True)
        oc, og = fn(c), fn(g)
        _same(oc, og)
        assert og.grad_fn.name() == oc.grad_fn.name()
        seed = RNG.standard_normal(tuple(oc.shape))
        oc.backward(numgrad.tensor(seed))
        og.backward(numgrad.tensor(seed, device="cuda"))
        _same(c.grad, g.grad)


def test_cross_dist_cdist():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    calls = [lambda x, y: numgrad.cross(x, y, dim=1), lambda x, y: x.t().cross(y.t(), dim=0),
             lambda x, y: numgrad.dist(x, y), lambda x, y: numgrad.dist(x, y, 1),
             lambda x, y: numgrad.dist(x, y, INF), lambda x, y: numgrad.cdist(x, y),
             lambda x, y: numgrad.cdist(x, y[:2], p=3.0),
             lambda x, y: numgrad.cdist(x, y, compute_mode="use_mm_for_euclid_dist")]
    for fn in calls:
        c1, g1 = _pair(a, requires_grad=True)
        c2, g2 = _pair(b, requires_grad=True)
        oc, og = fn(c1, c2), fn(g1, g2)
        _same(oc, og)
        assert og.grad_fn.name() == oc.grad_fn.name()
        oc.sum().backward()
        og.sum().backward()
        _same(c1.grad, g1.grad)
        _same(c2.grad, g2.grad)


def test_masked_select_and_its_gradient():
    a = RNG.standard_normal((3, 4))
    mask = RNG.standard_normal((2, 3, 4)) > 0
    for fn in (lambda x, m: numgrad.masked_select(x, m), lambda x, m: x[:, :1].masked_select(m),
               lambda x, m: x.t().masked_select(m[0].t())):
        c, g = _pair(a, requires_grad=True)
        cm, gm = _pair(mask)
        oc, og = fn(c, cm), fn(g, gm)
        _same(oc, og)
        assert og.grad_fn.name() == "MaskedSelectBackward0"
        seed = RNG.standard_normal(tuple(oc.shape))
        oc.backward(numgrad.tensor(seed))
        og.backward(numgrad.tensor(seed, device="cuda"))
        _same(c.grad, g.grad)
    _both(lambda x: numgrad.masked_select(x, x > 0), np.array(1.5))


UNIQUE = [np.array([[3, 1, 3], [2, 1, 0]]), np.array([2.0, -0.0, 0.0, 1.5, 2.0, INF, NAN, 1.5]),
          np.array([7]), np.array(4.0), np.zeros((2, 0)), np.array([True, False, True])]


@pytest.mark.parametrize("index", range(len(UNIQUE)))
def test_unique(index):
    a = UNIQUE[index]
    for v in _views(a):
        for inverse in (False, True):
            for counts in (False, True):
                _both(lambda x: numgrad.unique(x, return_inverse=inverse, return_counts=counts), v)
                _both(lambda x: x.unique_consecutive(return_inverse=inverse,
                                                     return_counts=counts), v)


@pytest.mark.parametrize("index", [0, 1, 5])
def test_unique_dim(index):
    a = UNIQUE[index] if index != 5 else np.array([[1, 2], [3, 4], [1, 2], [0, 9]])
    for d in range(a.ndim):
        _both(lambda x: numgrad.unique(x, dim=d, return_inverse=True, return_counts=True), a)
        _both(lambda x: x.unique_consecutive(dim=d, return_counts=True), a)


@pytest.fixture
def bitonic(monkeypatch):
    """Long lines' bitonic sort from 5 elements on (1024 otherwise), so the simulator runs it."""
    from numgrad.kernels.cuda import predicates

    monkeypatch.setattr(predicates, "_BITONIC_FROM", 5)


LONG = [RNG.standard_normal((3, 11)), RNG.integers(0, 4, (2, 9)).astype(np.float64),
        np.array([[3.0, NAN, 1.0, 1.0, -INF, 3.0, 0.0, -0.0, NAN, 2.0, INF, 1.0, 3.0]]),
        RNG.integers(0, 3, (4, 6)), np.array([[True, False, True, True, False, False, True, True]])]


@pytest.mark.parametrize("index", range(len(LONG)))
def test_long_lines_sort_by_the_bitonic_network(bitonic, index):
    a = LONG[index]
    from numgrad.kernels import cpu

    for v in _views(a):
        for d in range(v.ndim):
            if v.shape[d] < 5:
                continue
            c, g = numgrad.tensor(v), numgrad.tensor(v, device="cuda")
            want = cpu.order_dim(c._data, d)
            got = numgrad.kernels.cuda.order_dim(g._data, d)
            for w, h in zip(want, got):  # (the stable order: indices too)
                np.testing.assert_array_equal(h.copy_to_host(), w)
            if v.dtype != np.bool_:  # (median refuses bools)
                _both(lambda x: tuple(x.median(d)), v)
                _both(lambda x: tuple(x.nanmedian(d)), v)
            _both(lambda x: tuple(x.mode(d)), v)
        if v.dtype != np.bool_:
            _both(lambda x: x.median(), v)
        _both(lambda x: numgrad.unique(x, return_inverse=True, return_counts=True), v)
        _both(lambda x: numgrad.unique(x, dim=0, return_inverse=True), v)
