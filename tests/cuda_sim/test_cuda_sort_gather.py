"""The CUDA kernels of sort/argsort/topk (a rank sort per element), cumsum/cumprod (one thread
per line) and gather/scatter/scatter_add/index_select (one thread per index element, atomics for
scatter_add), against the CPU's, in Numba's CUDA simulator (run with tests/cuda_sim, see
test_cuda_sim.py): ties, NaN, every dimension, integer and bool inputs, rows longer than a
block, zeros in cumprod's input, repeated scatter positions, indices out of range reported at the
next sync, and einsum's composite on CUDA tensors."""
import math

import numpy as np
import pytest

import numgrad

RNG = np.random.default_rng(0)
NAN = math.nan


def _pair(a, requires_grad=False):
    """The same data as a CPU and a CUDA tensor."""
    return (numgrad.tensor(a, requires_grad=requires_grad),
            numgrad.tensor(a, device="cuda", requires_grad=requires_grad))


def _same(cpu, gpu, exact=True):
    assert gpu.device.type == "cuda" and tuple(gpu.shape) == tuple(cpu.shape)
    assert gpu.dtype is cpu.dtype
    c, g = cpu.detach().numpy(), gpu.detach().cpu().numpy()
    if exact:
        np.testing.assert_array_equal(g, c)
    else:
        np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)


SORTED = [
    np.array([[3.0, 1.0, NAN, 1.0, -np.inf, 3.0, 0.0, -0.0, NAN, 2.0]]),  # ties, NaN, ±0, inf
    RNG.integers(0, 4, (3, 5, 2)).astype(np.float64),  # many ties, every dim
    RNG.standard_normal((2, 45)),  # a row longer than the simulator's block
]


@pytest.mark.parametrize("a", SORTED, ids=["nan-ties", "3d-ties", "long-row"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_cpu(a, descending):
    for dtype in ("float64", "float32"):
        cpu, gpu = _pair(a.astype(dtype))
        for dim in range(-cpu.ndim, cpu.ndim):
            for c, g in zip(cpu.sort(dim, descending), gpu.sort(dim, descending)):
                _same(c, g)
    for dtype in ("int64", "int32", "bool"):
        cpu, gpu = _pair(np.nan_to_num(a, posinf=5, neginf=-5).astype(dtype))
        for c, g in zip(cpu.sort(-1, descending), gpu.sort(-1, descending)):
            _same(c, g)


def test_sort_argsort_topk_edge_cases():
    for a, dim in ((np.array(2.5), 0), (np.zeros((0, 3)), 1), (np.zeros((2, 0)), -1)):
        cpu, gpu = _pair(a)
        for c, g in zip(cpu.sort(dim), gpu.sort(dim)):
            _same(c, g)
    a = RNG.standard_normal((4, 6))
    cpu, gpu = _pair(a)
    _same(cpu.t().argsort(0, descending=True), gpu.t().argsort(0, descending=True))
    for k, dim, largest in ((3, -1, True), (2, 0, False), (0, 1, True), (6, 1, False)):
        for c, g in zip(cpu.topk(k, dim, largest), gpu.topk(k, dim, largest)):
            _same(c, g)


def test_sort_and_topk_gradients_on_cuda():
    a = RNG.standard_normal((3, 5))
    cpu, gpu = _pair(a, requires_grad=True)
    for x in (cpu, gpu):
        (x.sort(1, descending=True)[0] * numgrad.arange(5.0, device=x.device)).sum().backward()
        (x.topk(2, 0).values ** 2).sum().backward()
    _same(cpu.grad, gpu.grad, exact=False)
    assert gpu.sort(0)[0].grad_fn.name() == "SortBackward0"


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_match_cpu(name):
    for a in (RNG.standard_normal((3, 4, 5)), np.array(1.5), np.zeros((0, 2))):
        for dtype in ("float64", "float32"):
            cpu, gpu = _pair(a.astype(dtype))
            for dim in range(-max(cpu.ndim, 1), max(cpu.ndim, 1)):
                _same(getattr(cpu, name)(dim), getattr(gpu, name)(dim), exact=False)
        cpu, gpu = _pair(np.arange(6).reshape(2, 3).astype("int32"))
        _same(getattr(cpu, name)(1), getattr(gpu, name)(1))
    cpu, gpu = _pair(RNG.standard_normal((4, 3)))
    _same(getattr(cpu.t(), name)(0), getattr(gpu.t(), name)(0), exact=False)


def test_scan_gradients_with_zeros_on_cuda():
    a = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 1.5, 2.0, 1.0, 3.0], [1.0, 2.0, 3.0, 4.0, 0.5]])
    cpu, gpu = _pair(a, requires_grad=True)
    for x in (cpu, gpu):  # cumprod's exact kernel (no graph), then the composite (create_graph)
        w = numgrad.arange(15.0, device=x.device).reshape(3, 5)
        (x.cumprod(1) * w).sum().backward()
        (g,) = numgrad.autograd.grad((x.cumprod(1) * w).sum(), x, create_graph=True)
        (g * g).sum().backward()
        (x.t().cumsum(0) * w.t()).sum().backward()
    _same(cpu.grad, gpu.grad, exact=False)


def test_gather_scatter_index_select_match_cpu():
    a = RNG.standard_normal((3, 4))
    idx = np.array([[0, 3, 3], [1, 0, 2], [2, 2, 1]])
    cpu, gpu = _pair(a, requires_grad=True)
    ic, ig = _pair(idx)
    src = RNG.standard_normal((3, 3))
    sc, sg = _pair(src, requires_grad=True)
    outs = []
    for x, i, s in ((cpu, ic, sc), (gpu, ig, sg)):
        y = [x.gather(1, i), x.t().gather(0, i),
             x.scatter_add(1, i, s),  # repeated positions: atomics
             x.scatter(0, i[:, :1], s[:, :1]), x.scatter(1, i[:1], 2.5),
             x.index_select(1, i[0]), x.index_select(0, i[0, 0]),
             x.detach().scatter(1, i, s.detach(), reduce="multiply"),
             x.detach().scatter(1, i, 0.5, reduce="add")]
        sum(((t if t.requires_grad else t * 0) * (k + 1)).sum() for k, t in enumerate(y)).backward()
        outs.append(y)
    for c, g in zip(*outs):
        _same(c, g, exact=False)
    _same(cpu.grad, gpu.grad, exact=False)
    _same(sc.grad, sg.grad, exact=False)
    # (a plain scatter to one position from two sources leaves either value, in PyTorch too: its
    # comparison takes indices without repeats in a row)
    uc, ug = _pair(np.array([[0, 3, 1], [1, 0, 2], [2, 3, 1]]))
    for dtype in ("int64", "int32", "bool"):
        cpu, gpu = _pair((a > 0).astype(dtype))
        _same(cpu.gather(1, ic), gpu.gather(1, ig))
        _same(cpu.index_select(0, ic[1]), gpu.index_select(0, ig[1]))
        _same(cpu.scatter(1, uc, cpu[:, :3]), gpu.scatter(1, ug, gpu[:, :3]))


def test_in_place_scatter_on_cuda():
    a = RNG.standard_normal((3, 4))
    idx = np.array([[0, 3], [1, 0], [2, 2]])
    cpu, gpu = _pair(a)
    ic, ig = _pair(idx)
    for x, i in ((cpu, ic), (gpu, ig)):
        x.scatter_(1, i, 7.0).scatter_add_(1, i, x[:, :2].clone())
    _same(cpu, gpu, exact=False)


@pytest.mark.parametrize("call", [
    lambda x, i: x.gather(1, i),
    lambda x, i: x.scatter_add(1, i, x.gather(1, i * 0)),
    lambda x, i: x.index_select(1, i[0]),
])
def test_an_index_out_of_range_raises_at_the_next_sync(call):
    gpu = numgrad.tensor(RNG.standard_normal((2, 4)), device="cuda")
    bad = numgrad.tensor(np.array([[1, 9], [0, 2]]), device="cuda")
    out = call(gpu, bad)  # no sync here: the kernel records the index
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 1 with size 4"):
        out.cpu()
    numgrad.cuda.synchronize()  # reported once


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", ((3, 4), (4, 2))), ("bij,bjk", ((2, 3, 4), (2, 4, 5))), ("ii->i", ((3, 3),)),
    ("i,j->ij", ((3,), (4,))), ("...ij,...jk->...ik", ((2, 3, 4), (4, 2))),
])
def test_einsum_on_cuda(equation, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    cpus, gpus = zip(*(_pair(a, requires_grad=True) for a in arrays))
    c, g = numgrad.einsum(equation, *cpus), numgrad.einsum(equation, *gpus)
    _same(c, g, exact=False)
    assert g.grad_fn.name() == c.grad_fn.name()
    (c * c).sum().backward()
    (g * g).sum().backward()
    for x, y in zip(cpus, gpus):
        _same(x.grad, y.grad, exact=False)


NO_READ_BACK = {
    "sort": lambda x, i: x.sort(1, descending=True).values,
    "topk": lambda x, i: x.topk(2, 0).values,
    "cumsum": lambda x, i: x.cumsum(1),
    "cumprod": lambda x, i: x.cumprod(0),  # (its backward without a graph: one kernel)
    "gather": lambda x, i: x.gather(1, i),
    "scatter": lambda x, i: x.scatter(1, i[:, :1], x[:, :1] * 2),
    "scatter_add": lambda x, i: x.scatter_add(1, i, x[:, :3]),
    "index_select": lambda x, i: x.index_select(1, i[0]),
    "einsum": lambda x, i: numgrad.einsum("ij,kj->ik", x, x),
}


@pytest.mark.parametrize("case", NO_READ_BACK)
def test_forward_and_backward_read_nothing_back(case):
    from test_cuda_sync import _count_transfers

    x = numgrad.tensor(RNG.standard_normal((3, 4)), device="cuda", requires_grad=True)
    i = numgrad.tensor(np.array([[0, 3, 3], [1, 0, 2], [2, 2, 1]]), device="cuda")
    NO_READ_BACK[case](x, i).sum().backward()  # warm: launch configurations, layouts' meta
    with _count_transfers() as counts:
        NO_READ_BACK[case](x, i).sum().backward()
    assert counts["d2h"] == 0
