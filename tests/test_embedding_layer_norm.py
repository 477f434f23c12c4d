"""``nn.functional.embedding`` and ``layer_norm`` as one op each (``EmbeddingBackward0``,
``NativeLayerNormBackward0``, issue 31), against PyTorch 2.13: the gradients that are not the
derivative (``padding_idx``, ``scale_grad_by_freq``), second derivatives, the hard inputs (empty,
non-contiguous, NaN and inf, rows of no elements, int32 indices) and the errors; and a compiled
step of both equal to eager. (Values, gradcheck and gradgradcheck of the ordinary cases: the
registry harness, tests/test_ops.py.)"""
import numpy as np
import pytest
import torch

import numgrad

RNG = np.random.default_rng(31)
W = RNG.standard_normal((6, 4))
IDX = [[1, 1, 0], [5, 1, 3]]
X = RNG.standard_normal((3, 2, 5))
G = RNG.standard_normal((3, 2, 5))


def _np(t):
    return np.asarray(t.detach().numpy())


def _both(fn):
    return fn(numgrad), fn(torch)


def _close(a, b, **tol):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if u is None or v is None:
            assert u is None and v is None
            continue
        np.testing.assert_allclose(_np(u), _np(v), equal_nan=True,
                                   **(tol or {"rtol": 1e-12, "atol": 1e-12}))


def _error(fn, m):
    try:
        fn(m)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


# ----------------------------------------------------------------- embedding
@pytest.mark.parametrize("padding_idx, scale", [(1, False), (None, True), (-1, True)])
def test_embedding_gradients_as_pytorch(padding_idx, scale):
    """PyTorch's gradients (no gradient at padding_idx, each row's divided by its count) and the
    second derivative through them (create_graph: with respect to the output's gradient)."""
    def run(m):
        w = m.tensor(W, requires_grad=True)
        y = m.nn.functional.embedding(m.tensor(IDX), w, padding_idx=padding_idx,
                                      scale_grad_by_freq=scale)
        v = m.tensor(RNG_V, requires_grad=True)
        (g,) = m.autograd.grad(y, w, v, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), v)
        return y, g, gg, y.grad_fn._saved_padding_idx
    ours, theirs = _both(run)
    _close(ours[:3], theirs[:3])
    assert ours[3] == theirs[3]


RNG_V = RNG.standard_normal((2, 3, 4))


def test_embedding_hard_inputs():
    """No indices, int32 indices, a transposed (non-contiguous) weight, a 0-d index."""
    def run(m):
        leaf = m.tensor(W.T.copy(), requires_grad=True)
        w = leaf.t()  # (6, 4), strides (1, 6)
        outs = [m.nn.functional.embedding(m.tensor([], dtype=m.int64), w),
                m.nn.functional.embedding(m.tensor(IDX, dtype=m.int32), w),
                m.nn.functional.embedding(m.tensor(4), w)]
        sum(o.sum() for o in outs).backward()
        return outs + [leaf.grad]
    ours, theirs = _both(run)
    _close(ours, theirs)
    assert [tuple(o.shape) for o in ours] == [tuple(t.shape) for t in theirs]


@pytest.mark.parametrize("index", [[6], [-1], [0, 9]])
def test_embedding_index_out_of_range(index):
    def run(m):
        return m.nn.functional.embedding(m.tensor(index), m.tensor(W, requires_grad=True))
    a, b = _error(run, numgrad), _error(run, torch)
    assert a is not None and a == b


# ----------------------------------------------------------------- layer_norm
def test_layer_norm_second_derivative_as_pytorch():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        w = m.tensor(X[0, 0], requires_grad=True)
        b = m.tensor(G[0, 0], requires_grad=True)
        y = m.nn.functional.layer_norm(x, (5,), w, b)
        gx, gw, gb = m.autograd.grad(y, (x, w, b), m.tensor(G), create_graph=True)
        second = m.autograd.grad((gx * gx).sum() + (gw * gb).sum(), (x, w))
        return (y, gx, gw, gb) + second
    ours, theirs = _both(run)
    _close(ours, theirs, rtol=1e-10, atol=1e-10)


def test_layer_norm_hard_inputs():
    """Two normalised dimensions of a non-contiguous input; NaN and inf in a row (that row
    only); no rows; float32 values far from 0 (PyTorch's double accumulation)."""
    special = X.copy()
    special[0, 0, 1], special[1, 1, 0] = np.nan, np.inf

    def run(m):
        F = m.nn.functional
        leaf = m.tensor(np.ascontiguousarray(X.transpose(2, 1, 0)), requires_grad=True)
        x = leaf.permute(2, 1, 0)  # (3, 2, 5), not contiguous
        s = m.tensor(special, requires_grad=True)
        e = m.tensor(np.zeros((0, 5)), requires_grad=True)
        f = m.tensor(1e4 + X.astype(np.float32), requires_grad=True)
        outs = [F.layer_norm(x, (2, 5)), F.layer_norm(s, (5,)), F.layer_norm(e, (5,)),
                F.layer_norm(f, (5,))]
        for o in outs:
            o.backward(m.ones_like(o))
        return outs + [leaf.grad, s.grad, e.grad]
    ours, theirs = _both(run)
    _close(ours[:3] + ours[4:], theirs[:3] + theirs[4:])
    _close(ours[3:4], theirs[3:4], rtol=2e-3, atol=2e-3)  # (float32 of values near 1e4)


def test_native_layer_norm_statistics_and_rows_of_no_elements():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        out = m.native_layer_norm(x, (5,), None, None, 1e-5)
        empty = m.native_layer_norm(m.zeros(2, 0, dtype=m.float64), (0,), None, None, 1e-5)
        return out + empty + (out[0].grad_fn._saved_result1, out[0].grad_fn._saved_result2)
    ours, theirs = _both(run)
    _close(ours, theirs)
    assert [tuple(o.shape) for o in ours] == [tuple(t.shape) for t in theirs]


def test_layer_norm_values_do_not_depend_on_the_threads(monkeypatch):
    """The CPU kernels share a large layer norm's rows among threads, the backward summing the
    weight's and the bias's gradients per block of rows (blocks fixed by the shape) and then
    the blocks in order: one thread and two give the same bits (float64, whose sums show their
    order, and float32; a row length that is no multiple of the vector width), close to
    PyTorch's."""
    from numgrad.kernels.cpu import normalization

    rng = np.random.default_rng(5)
    x, g = (rng.standard_normal((512, 129)) * 3 + 1 for _ in range(2))
    w, b = (rng.standard_normal(129) for _ in range(2))
    assert normalization.BLOCK * 4 <= x.size  # (several blocks)

    def run(m, dtype):
        leaves = [m.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b)]
        y = m.nn.functional.layer_norm(leaves[0], (129,), *leaves[1:])
        y.backward(m.tensor(g.astype(dtype)))
        return [_np(t) for t in [y] + [t.grad for t in leaves]]
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-4)):
        runs = []
        for threads in (1, 2):
            monkeypatch.setattr(normalization, "_threads",
                                lambda parts, size, t=threads: min(t, parts))
            runs.append(run(numgrad, dtype))
        for a, c in zip(*runs):
            assert a.dtype == dtype and a.tobytes() == c.tobytes()
        for a, t in zip(runs[0], run(torch, dtype)):
            np.testing.assert_allclose(a, t, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", ["integer", "mixed_dtype", "shape"])
def test_layer_norm_errors_as_pytorch(case):
    def run(m):
        x = m.tensor(X, dtype=m.float32)
        if case == "integer":
            return m.nn.functional.layer_norm(m.ones(2, 3, dtype=m.int64), (3,))
        if case == "mixed_dtype":
            return m.nn.functional.layer_norm(x, (5,), m.ones(5, dtype=m.float64))
        return m.nn.functional.layer_norm(x, (4,))
    a, b = _error(run, numgrad), _error(run, torch)
    assert a is not None and a == b


# ----------------------------------------------------------------- numgrad.compile
def test_compiled_step_equals_eager():
    """An embedding, a layer norm and a linear head, trained three steps eagerly and compiled:
    the same losses and parameters."""
    def train(compiled):
        numgrad.manual_seed(0)
        nn = numgrad.nn
        model = nn.Sequential(nn.Embedding(7, 6, padding_idx=0), nn.LayerNorm(6),
                              nn.Linear(6, 7))
        opt = numgrad.optim.SGD(model.parameters(), lr=0.5)
        idx = numgrad.tensor([[0, 3, 3, 6], [2, 1, 0, 5]])

        def step():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(idx).view(-1, 7), idx.view(-1))
            loss.backward()
            opt.step()
            return loss
        f = numgrad.compile(step) if compiled else step
        losses = [float(f()) for _ in range(3)]
        return losses, [_np(p) for p in model.parameters()]
    (l1, p1), (l2, p2) = train(False), train(True)
    assert l1 == l2
    for a, b in zip(p1, p2):
        np.testing.assert_array_equal(a, b)
