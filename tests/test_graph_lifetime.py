"""Graph lifetime: deep graphs backpropagate without recursion, graphs die by reference counting
alone (no leaks, no cycles), and saved values are released by backward unless retain_graph."""

import gc
import os
import subprocess
import sys
import textwrap
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest

import numgrad as ng

CHAIN = 100_000
# the directory that holds the numgrad under test, for the subprocess
SRC = str(Path(ng.__file__).resolve().parents[1])


@pytest.fixture(autouse=True)
def _heap_before_the_test_frozen():
    """The objects alive before the test, moved out of the collector's sight (``gc.freeze``), so
    that its collections and counts visit only the objects the test makes: after thousands of
    tests the heap holds millions of objects (a collection took ~9 s in CI's run, two per
    test); a leak is in what the test makes, which is still counted. No collection first: the
    garbage of earlier tests is frozen with the rest (``gc.freeze`` moves lists, it visits
    nothing)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _live_numgrad_objects():
    gc.collect()
    tensors = nodes = 0
    for o in gc.get_objects():
        cls = type(o)  # not isinstance: it would touch lazy torch proxies' __class__
        if issubclass(cls, ng.Tensor):
            tensors += 1
        elif issubclass(cls, ng.autograd.Node):
            nodes += 1
    return tensors, nodes


# --------------------------------------------------------------------------- (a) deep graphs
def test_chain_of_100000_muls_backpropagates():
    x = ng.tensor(1.0, dtype=ng.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y * 1.0001
    limit = sys.getrecursionlimit()
    y.backward()
    assert sys.getrecursionlimit() == limit
    assert x.grad.dtype == ng.float64
    np.testing.assert_allclose(x.grad.item(), 1.0001 ** CHAIN, rtol=1e-9)
    np.testing.assert_allclose(y.item(), 1.0001 ** CHAIN, rtol=1e-9)
    del y  # dropping the (released) 100,000-node chain must not recurse either


def test_chain_of_100000_adds_reusing_a_leaf():
    """Each step adds the leaf w again: w's AccumulateGrad collects 100,000 gradients."""
    x = ng.tensor([1.0, 2.0], dtype=ng.float64, requires_grad=True)
    w = ng.tensor([0.5, 0.25], dtype=ng.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y + w
    y.backward(ng.tensor([1.0, 3.0], dtype=ng.float64))
    np.testing.assert_array_equal(x.grad.tolist(), [1.0, 3.0])
    np.testing.assert_array_equal(w.grad.tolist(), [1.0 * CHAIN, 3.0 * CHAIN])
    np.testing.assert_allclose(y.detach().tolist(), [1.0 + 0.5 * CHAIN, 2.0 + 0.25 * CHAIN])


def test_dropping_a_deep_unused_graph_does_not_crash():
    """A 100,000-node graph that never ran backward still holds its saved tensors; freeing it
    must not overflow the C stack (run in a subprocess so a crash cannot take pytest down)."""
    code = textwrap.dedent(f"""
        import numgrad as ng
        x = ng.tensor([1.0, 2.0], requires_grad=True)
        y = x
        for i in range({CHAIN}):
            y = y * 1.0 if i % 2 else y + 1.0
        fn = y.grad_fn
        del y
        assert fn.name() == "MulBackward0"
        del fn
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


# --------------------------------------------------------------------------- (b) no leaks
def _step(x, w, backward=True, retain=False):
    h = (x * w).tanh()
    out = (h * h).sum() + x.exp().mean() + (w / (x + 3.0)).sum()
    if backward:
        out.backward(retain_graph=retain)
    return out


def test_no_growth_of_live_objects_over_1000_iterations():
    x = ng.tensor([0.1, -0.2, 0.3], requires_grad=True)
    w = ng.tensor([1.0, 2.0, -1.0], requires_grad=True)
    _step(x, w)  # warm up (compilation, the leaves' first .grad)
    before = _live_numgrad_objects()
    for i in range(1000):
        _step(x, w, backward=i % 3 != 2, retain=i % 3 == 1)
    after = _live_numgrad_objects()
    assert after == before
    # and the gradients really accumulated over the 1 + 667 backward passes
    g = x.grad.tolist()
    assert np.isfinite(g).all() and abs(g[0]) > 100


def test_no_growth_with_hooks_and_retain_grad():
    x = ng.tensor([0.5, 1.5], requires_grad=True)
    x.register_hook(lambda g: g * 1.0)
    before = _live_numgrad_objects()
    for _ in range(1000):
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g + 0.0)
        z = (y * y).sum()
        z.backward()
        del y, z
    after = _live_numgrad_objects()
    assert after[1] == before[1]
    assert after[0] <= before[0] + 1  # + x.grad, created by the first backward
    np.testing.assert_allclose(x.grad.tolist(), [1000 * 8 * 0.5, 1000 * 8 * 1.5], rtol=1e-5)


def test_no_growth_over_an_adam_training_loop():
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(4, 8), ng.nn.ReLU(), ng.nn.Linear(8, 1))
    opt = ng.optim.Adam(model.parameters(), lr=1e-2)
    x, y = ng.randn(16, 4), ng.randn(16, 1)

    def step():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    first = [step() for _ in range(3)]  # (warm: Adam's state exists from here)
    before = _live_numgrad_objects()
    last = [step() for _ in range(300)]
    assert _live_numgrad_objects() == before
    assert last[-1] < first[0]


def test_no_growth_over_create_graph_loops():
    x = ng.tensor([0.3, -0.7], requires_grad=True)
    ng.autograd.grad((x ** 3).sum(), x, create_graph=True)[0].sum().backward()
    x.grad = None
    before = _live_numgrad_objects()
    for _ in range(300):
        (g,) = ng.autograd.grad((x ** 3).sum(), x, create_graph=True)
        (g * g).sum().backward()
        x.grad = None
        del g
    assert _live_numgrad_objects() == before


def test_graph_freed_by_reference_counting_alone():
    x = ng.tensor([0.1, -0.2, 0.3], requires_grad=True)
    w = ng.tensor([1.0, 2.0, -1.0], requires_grad=True)
    _step(x, w)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        counts_before = _count_without_collecting()
        for i in range(1000):
            p = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)  # a leaf that dies too
            h = (x * w).tanh()  # TanhBackward0 saves its output
            e = (h * p).exp()
            out = (e * h).sum() + p.mean()
            acc = out.grad_fn.next_functions[1][0].next_functions[0][0]  # p's AccumulateGrad
            refs = [weakref.ref(o) for o in (out.grad_fn, h.grad_fn, e.grad_fn, acc, h, e, p)]
            assert type(acc).__name__ == "AccumulateGrad" and acc.variable is p
            if i % 2:
                out.backward()
            del h, e, out, acc, p
            alive = [r() for r in refs if r() is not None]
            assert alive == [], f"iteration {i}: still alive without gc: {alive}"
        counts_after = _count_without_collecting()
    finally:
        if was_enabled:
            gc.enable()
    assert counts_after == counts_before


_DECOMPOSITIONS = {
    "eig": lambda x: ng.linalg.eig(x),
    "eigvals": lambda x: (ng.linalg.eigvals(x),),
    "eigh": lambda x: ng.linalg.eigh(x + x.mT),
    "eigvalsh": lambda x: (ng.linalg.eigvalsh(x + x.mT),),
    "svd": lambda x: ng.linalg.svd(x),
    "svdvals": lambda x: (ng.linalg.svdvals(x),),
    "qr": lambda x: ng.linalg.qr(x),
}


@pytest.mark.parametrize("name", list(_DECOMPOSITIONS))
def test_decomposition_graphs_freed_by_reference_counting_alone(name):
    """The outputs of a decomposition share what their recorded backward needs, the forward's
    outputs (``linalg_common._Outputs``), which refers to their nodes weakly: after a backward,
    plain or through a recorded one (``create_graph``, then a second backward), the outputs, their
    nodes and the first gradient's graph die with the last tensor, without the collector."""
    fn = _DECOMPOSITIONS[name]
    data = np.random.default_rng(0).uniform(-2, 2, (3, 3))
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        counts_before = _count_without_collecting()
        for create_graph in (False, True, False, True):
            x = ng.tensor(data, requires_grad=True)
            outs = fn(x)  # (abs: sign- and phase-free)
            loss = sum(o.abs().sum() for o in outs)
            refs = [weakref.ref(o) for o in outs] + [weakref.ref(o.grad_fn) for o in outs]
            if create_graph:
                (g,) = ng.autograd.grad(loss, x, create_graph=True)
                refs.append(weakref.ref(g.grad_fn))
                (g * g).sum().backward()
                del g
            else:
                loss.backward()
            assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
            del outs, loss, x
            alive = [r() for r in refs if r() is not None]
            assert alive == [], f"create_graph={create_graph}: alive without gc: {alive}"
        counts_after = _count_without_collecting()
    finally:
        if was_enabled:
            gc.enable()
    assert counts_after == counts_before


def _count_without_collecting():
    tensors = nodes = 0
    for o in gc.get_objects():
        cls = type(o)  # not isinstance: it would touch lazy torch proxies' __class__
        if issubclass(cls, ng.Tensor):
            tensors += 1
        elif issubclass(cls, ng.autograd.Node):
            nodes += 1
    return tensors, nodes


def test_retained_graph_freed_when_last_tensor_goes():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    gc.disable()
    try:
        y = x.exp()
        out = (y * y).sum()
        out.backward(retain_graph=True)
        refs = [weakref.ref(out.grad_fn), weakref.ref(y.grad_fn), weakref.ref(y)]
        data_ref = weakref.ref(y.grad_fn.saved_tensors[0]._data)
        del y
        assert refs[1]() is not None  # still in out's graph
        del out
        assert [r() for r in refs] == [None, None, None]
        assert data_ref() is None
    finally:
        gc.enable()


def test_accumulate_grad_outlives_no_graph():
    x = ng.ones(2, requires_grad=True)
    y = x * 2
    acc = weakref.ref(y.grad_fn.next_functions[0][0])
    assert acc() is not None
    del y
    assert acc() is None  # the leaf holds no strong reference to its accumulator
    assert x.requires_grad and x.grad is None


# --------------------------------------------------------------------------- (c) saved arrays
N = 10_000_000


def _big_graph():
    """out = exp(s * big).sum(): ExpBackward0 holds the only reference to its 40 MB output."""
    rng = np.random.default_rng(0)
    big = ng.from_numpy(rng.standard_normal(N, dtype=np.float32) * np.float32(0.1))
    s = ng.tensor(0.5, requires_grad=True)
    h = (s * big).exp()
    out = h.sum()
    node = h.grad_fn
    assert node.name() == "ExpBackward0"
    saved = node.saved_tensors[0]._data
    assert saved.nbytes == 4 * N
    saved_ref = weakref.ref(saved)
    del saved, h
    return big, s, out, node, saved_ref


@pytest.fixture
def no_pool(monkeypatch):
    """numgrad's pool of large buffers (numgrad/_pool.py) off: these tests measure, with
    tracemalloc, that the graph lets go of its arrays, which a pool would keep for reuse."""
    from numgrad import _pool

    monkeypatch.setattr(_pool, "POOL_FROM", 1 << 62)
    ng.empty_cache()


def _warm_kernels():
    """Runs the graph once so that compiling its kernels (on a cold Numba cache, as in CI) does not
    land inside a tracemalloc measurement."""
    big, s, out, node, saved_ref = _big_graph()
    out.backward()


def _expected_grad(big):
    b = big.numpy().astype(np.float64)
    return float(np.sum(b * np.exp(0.5 * b)))


def test_backward_releases_saved_arrays(no_pool):
    _warm_kernels()
    tracemalloc.start()
    try:
        m0 = tracemalloc.get_traced_memory()[0]
        big, s, out, node, saved_ref = _big_graph()
        m1 = tracemalloc.get_traced_memory()[0]
        assert saved_ref() is not None
        assert m1 - m0 >= 4 * N + 4 * N * 0.9  # big itself and the saved exp output
        out.backward()
        m2 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert saved_ref() is None  # the saved array is gone...
    assert m1 - m2 >= 0.9 * 4 * N  # ...and its 40 MB with it
    assert m2 - m0 < 4 * N * 1.1  # only big (and small things) remain
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors
    np.testing.assert_allclose(s.grad.item(), _expected_grad(big), rtol=1e-3)


def test_retain_graph_keeps_saved_arrays(no_pool):
    _warm_kernels()
    tracemalloc.start()
    try:
        m0 = tracemalloc.get_traced_memory()[0]
        big, s, out, node, saved_ref = _big_graph()
        m1 = tracemalloc.get_traced_memory()[0]
        out.backward(retain_graph=True)
        m2 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert saved_ref() is not None
    assert abs(m2 - m1) < 0.1 * 4 * N  # nothing big freed, nothing big leaked
    (saved,) = node.saved_tensors
    np.testing.assert_allclose(saved.detach().numpy()[:5], np.exp(0.5 * big.numpy()[:5]), rtol=1e-6)
    del saved
    g1 = s.grad.item()
    out.backward()  # the retained graph runs again, then is released
    np.testing.assert_allclose(s.grad.item(), 2 * g1, rtol=1e-6)
    np.testing.assert_allclose(g1, _expected_grad(big), rtol=1e-3)
    assert saved_ref() is None
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors


def test_saved_tensor_of_dead_graph_is_freed_without_backward():
    big, s, out, node, saved_ref = _big_graph()
    gc.disable()
    try:
        del out, node
        assert saved_ref() is None
    finally:
        gc.enable()
    assert s.grad is None
