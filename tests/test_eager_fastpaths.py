"""The eager backward's shortcuts (issue 12) give PyTorch's gradients bit for bit: a mean's
gradient of one value filled, the two products of ``y * y``, the seed of ``loss.backward()``.
Each case runs the same graph on numgrad and PyTorch and compares the bits of the gradients."""
import numpy as np
import pytest
import torch

import numgrad

SPECIAL = [1.0, -0.0, 0.1, -3.7, 1e-40, 1e-310, 3.4e38, float("inf"), float("-inf"),
           float("nan")]


def _bits_equal(ours, theirs):
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    a, b = a.reshape(-1), b.reshape(-1)
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _grads(m, f, arrays, seed):
    xs = [m.tensor(a, requires_grad=True) for a in arrays]
    out = f(xs)
    if seed is None:
        out.backward()
    else:
        out.backward(m.tensor(np.asarray(seed, dtype=arrays[0].dtype)))
    return [x.grad.numpy() for x in xs]


def _same(f, arrays, seed=None):
    for ours, theirs in zip(_grads(numgrad, f, arrays, seed), _grads(torch, f, arrays, seed)):
        _bits_equal(ours, theirs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 2), (1,), (3, 1, 5), (4095,), (4096,), (7, 613)])
@pytest.mark.parametrize("value", SPECIAL)
def test_mean_gradient(dtype, shape, value):
    x = np.random.default_rng(0).uniform(-2, 2, shape).astype(dtype)
    _same(lambda t: t[0].mean(), [x], value)
    _same(lambda t: (t[0] * 3).mean(), [x], value)  # (its gradient goes on through a node)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mean_over_dims_of_one_value(dtype):
    x = np.random.default_rng(1).uniform(-2, 2, (1, 3, 1, 4)).astype(dtype)
    for value in SPECIAL:
        _same(lambda t: t[0].mean((1, 3)), [x], [[value]])
        _same(lambda t: t[0].mean((1, 3), keepdim=True).sum(), [x], value)
        _same(lambda t: t[0].mean(1).sum() * 0.5, [x], value)


def test_mean_of_empty():
    _same(lambda t: t[0].mean(), [np.zeros((0, 3))], 1.0)
    _same(lambda t: t[0].mean(), [np.zeros((0,), np.float32)], 2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seed_walkthrough_bits(dtype):
    x = np.ones((2, 2), dtype)
    _same(lambda t: ((t[0] + 2) * (t[0] + 2) * 3).mean(), [x])
    r = np.random.default_rng(2).uniform(-2, 2, (3, 4)).astype(dtype)
    _same(lambda t: ((t[0] + 2) * (t[0] + 2) * 3).mean(), [r])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_square_by_mul(dtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (5, 3)).astype(dtype)
    _same(lambda t: (t[0] * t[0]).sum(), [x])
    _same(lambda t: (t[0] * t[0] * t[0]).mean(), [x])
    _same(lambda t: ((t[0] + 1) * (t[0] + 1)).sum(), [x])
    g = rng.uniform(-2, 2, (5, 3)).astype(dtype)
    _same(lambda t: (t[0] * 2.5) * (t[0] * 2.5), [x], g)
    _same(lambda t: (lambda y: y * y)(t[0] * 2.5), [x], g)
    # a square whose input is a leaf reached by a second path too
    _same(lambda t: (t[0] * t[0] + t[0] * 2).sum(), [x])


def test_square_with_hooks_and_retain_grad():
    x = np.random.default_rng(4).uniform(-2, 2, (4,))
    seen = {}
    for m in (numgrad, torch):
        t = m.tensor(x, requires_grad=True)
        y = t * 1.5
        y.retain_grad()
        got = []
        y.register_hook(lambda g: got.append(g.detach().clone().numpy()))
        (y * y).sum().backward()
        seen[m.__name__] = (t.grad.numpy().copy(), y.grad.numpy().copy(), got)
    a, b = seen["numgrad"], seen["torch"]
    _bits_equal(a[0], b[0])
    _bits_equal(a[1], b[1])
    assert len(a[2]) == len(b[2]) == 1
    _bits_equal(a[2][0], b[2][0])


def test_square_create_graph():
    x = np.random.default_rng(5).uniform(-2, 2, (4,))
    res = {}
    for m in (numgrad, torch):
        t = m.tensor(x, requires_grad=True)
        (g,) = m.autograd.grad((t * t).sum(), t, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), t)
        res[m.__name__] = (g.detach().numpy().copy(), gg.numpy().copy(), type(g.grad_fn).__name__)
    _bits_equal(res["numgrad"][0], res["torch"][0])
    _bits_equal(res["numgrad"][1], res["torch"][1])
    assert res["numgrad"][2] == res["torch"][2]


def test_seed_gradient_is_fresh():
    for dtype in (numgrad.float32, numgrad.float64):
        x = numgrad.ones(3, dtype=dtype, requires_grad=True)
        out = x.sum()
        out.backward()
        first = x.grad
        assert first.dtype == dtype
        x.grad = None
        out2 = x.sum()
        out2.backward()
        assert x.grad is not first
        x.grad.add_(1)  # (a .grad of its own: writing it changes no later seed)
        x.grad = None
        x.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (2, 2), (3, 7), (1, 5, 1), (999,), (5000,)])
def test_mean_value_bits(dtype, shape):
    # Sums exact in any order (multiples of 1/8, small), so both means are one rounded quotient.
    rng = np.random.default_rng(6)
    x = (rng.integers(-1000, 1000, shape) / 8).astype(dtype)
    for data in (x, np.where(x > 50, np.inf, x), np.where(x > 50, np.nan, x)):
        data = data.astype(dtype)
        ours = numgrad.tensor(data).mean()
        theirs = torch.tensor(data).mean()
        _bits_equal(ours.numpy(), theirs.numpy())
        _bits_equal(numgrad.tensor(data).mean(tuple(range(len(shape))), keepdim=True).numpy(),
                    torch.tensor(data).mean(tuple(range(len(shape))), keepdim=True).numpy())



def test_index_tensors_key_is_the_general_walks(monkeypatch):
    # ``x[i, j]`` with int64 index tensors of one shape takes a short parse; its key must be the
    # one the general walk makes, and other indexes must not take it.
    from numgrad.ops import indexing

    rows, cols = numgrad.arange(4), numgrad.tensor([2, 0, 1, 2])
    short = [(rows, cols), (rows,), (rows.reshape(2, 2), cols.reshape(2, 2))]
    fast = [indexing.parse_index(c, (4, 3)) for c in short]
    monkeypatch.setattr(indexing, "_index_tensors_key", lambda index: None)
    for f, c in zip(fast, short):
        s = indexing.parse_index(c, (4, 3))  # (the general walk)
        assert f.basic == s.basic and (f.first, f.last, f.mask) == (s.first, s.last, s.mask)
        assert len(f.adv) == len(s.adv) and all(a is b for a, b in zip(f.adv, s.adv))
    monkeypatch.undo()
    for c in [(rows, cols[:3]), (rows.int(), cols), (rows, 1), (rows > 1,)]:
        assert indexing._index_tensors_key(c) is None  # (two shapes, int32, an int, a mask)
    for m in (numgrad, torch):  # (and the gradient: repeated rows add up)
        x = m.arange(12.0, requires_grad=True)
        x.reshape(4, 3)[m.tensor([0, 3, 0]), m.tensor([2, 1, 2])].sum().backward()
        assert x.grad.tolist() == [0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0]
