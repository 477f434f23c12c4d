"""``utils.checkpoint`` (``checkpoint`` in both variants, ``checkpoint_sequential``) against
PyTorch 2.13 (issue 31): gradients, nodes, recomputation, random state, warnings and errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint  # noqa: F401

import numgrad
import numgrad.utils.checkpoint  # noqa: F401

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 4))
W1 = RNG.standard_normal((4, 5))
W2 = RNG.standard_normal((5, 3))


def _both(fn):
    return fn(numgrad), fn(torch)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def _block_run(m, use_reentrant, kwargs=False):
    x = m.tensor(X, requires_grad=True)
    w1 = m.tensor(W1, requires_grad=True)
    w2 = m.tensor(W2, requires_grad=True)
    calls = []

    def block(x, scale=1.0):
        calls.append(m.is_grad_enabled())
        return ((x @ w1).tanh().sigmoid() * scale) @ w2

    if kwargs:
        y = m.utils.checkpoint.checkpoint(block, x, use_reentrant=use_reentrant, scale=0.5)
    else:
        y = m.utils.checkpoint.checkpoint(block, x, use_reentrant=use_reentrant)
    name = type(y.grad_fn).__name__
    y.exp().sum().backward()
    return name, calls, x.grad, w1.grad, w2.grad


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_gradients_nodes_and_recomputation(use_reentrant):
    (n1, c1, *g1), (n2, c2, *g2) = _both(lambda m: _block_run(m, use_reentrant))
    assert n1 == n2 == ("MmBackward0" if not use_reentrant else "CheckpointFunctionBackward")
    assert c1 == c2 == ([True, True] if not use_reentrant else [False, True])
    for a, b in zip(g1, g2):
        _close(a, b)


def test_checkpoint_non_reentrant_passes_keywords_and_works_with_autograd_grad():
    (n1, c1, *g1), (n2, c2, *g2) = _both(lambda m: _block_run(m, False, kwargs=True))
    for a, b in zip(g1, g2):
        _close(a, b)

    def run(m):
        x = m.tensor(X, requires_grad=True)
        y = m.utils.checkpoint.checkpoint(lambda t: (t * t).sin(), x, use_reentrant=False)
        (g,) = m.autograd.grad(y.sum(), x)
        return g
    _close(*_both(run))


def test_checkpoint_recomputes_once_per_backward():
    def run(m):
        calls = []
        x = m.tensor(X, requires_grad=True)

        def f(t):
            calls.append(1)
            return (t.sin() * t).exp()

        y = m.utils.checkpoint.checkpoint(f, x, use_reentrant=False).sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        y.backward()
        return len(calls), first, x.grad
    (n1, a1, b1), (n2, a2, b2) = _both(run)
    assert n1 == n2 == 3
    _close(a1, a2)
    _close(b1, b2)


def test_checkpoint_matches_the_unchecked_run_with_dropout_and_restores_the_random_state():
    """The recomputation draws the forward's dropout mask (preserve_rng_state), and the random
    state after backward is the one backward started with (numgrad alone: its generator is not
    PyTorch's)."""
    m = numgrad

    def f(x):
        return m.nn.functional.dropout((x * 2).exp(), 0.5, training=True).sum(1)

    results = []
    for checked in (False, True):
        m.manual_seed(3)
        x = m.tensor(X, requires_grad=True)
        y = m.utils.checkpoint.checkpoint(f, x, use_reentrant=False) if checked else f(x)
        state = m.get_rng_state()
        y.sum().backward()
        assert m.get_rng_state().equal(state)
        results.append((y.detach(), x.grad, m.rand(3)))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_checkpoint_warnings_and_errors():
    def warned(m, fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn(m)
        return [str(i.message) for i in w]

    x = X[0]
    a, b = _both(lambda m: warned(m, lambda m: m.utils.checkpoint.checkpoint(
        m.sin, m.tensor(x, requires_grad=True))))
    assert a == b and len(a) == 1
    a, b = _both(lambda m: warned(m, lambda m: m.utils.checkpoint.checkpoint(
        m.sin, m.tensor(x), use_reentrant=True)))
    assert a == b == ["None of the inputs have requires_grad=True. Gradients will be None"]
    a, b = _both(lambda m: warned(m, lambda m: m.utils.checkpoint.checkpoint_sequential(
        [m.nn.Tanh()], 1, m.tensor(x))))
    assert a == b and len(a) == 1

    def error(m, fn):
        try:
            fn(m)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None

    def grad_through_reentrant(m):
        t = m.tensor(x, requires_grad=True)
        m.autograd.grad(m.utils.checkpoint.checkpoint(m.sin, t, use_reentrant=True).sum(), t)

    def backward_inputs_through_reentrant(m):
        t = m.tensor(x, requires_grad=True)
        m.utils.checkpoint.checkpoint(m.sin, t, use_reentrant=True).sum().backward(inputs=[t])

    for fn in (
        grad_through_reentrant, backward_inputs_through_reentrant,
        lambda m: m.utils.checkpoint.checkpoint(m.sin, m.tensor(x), use_reentrant=True, foo=1),
        lambda m: m.utils.checkpoint.checkpoint(m.sin, m.tensor(x), use_reentrant=True,
                                                debug=True),
        lambda m: m.utils.checkpoint.checkpoint_sequential([m.sin], 1, m.tensor(x),
                                                           use_reentrant=False, foo=2),
    ):
        e1, e2 = error(numgrad, fn), error(torch, fn)
        assert e1 is not None and e1 == e2


@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(use_reentrant, segments):
    def run(m):
        m.manual_seed(0)
        net = m.nn.Sequential(m.nn.Linear(4, 8), m.nn.Tanh(), m.nn.Linear(8, 8), m.nn.ReLU(),
                              m.nn.Linear(8, 2)).double()
        rng = np.random.default_rng(1)
        with m.no_grad():
            for p in net.parameters():
                p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
        x = m.tensor(X, requires_grad=True)
        y = m.utils.checkpoint.checkpoint_sequential(net, segments, x,
                                                     use_reentrant=use_reentrant)
        (y ** 2).sum().backward()
        return [y, x.grad] + [p.grad for p in net.parameters()]
    for a, b in zip(*_both(run)):
        _close(a, b)
