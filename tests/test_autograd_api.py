"""autograd.grad / backward options and detach_, against PyTorch."""
import warnings

import numpy as np
import pytest
import torch

import numgrad


def _both(fn):
    return fn(numgrad), fn(torch)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=1e-12)


def test_detach_in_place_makes_a_leaf():
    def run(m):
        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = x * 3
        y.detach_()
        return y.requires_grad, y.is_leaf, y.grad_fn is None
    assert _both(run)[0] == _both(run)[1] == (False, True, True)


def test_second_derivative_through_backward_create_graph():
    def run(m):
        x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = (x.tanh() * x.exp()).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        return g, x.grad
    (g1, h1), (g2, h2) = _both(run)
    _close(g1, g2)
    _close(h1, h2)


def test_backward_create_graph_leaves_differentiable_grad():
    def run(m):
        x = m.tensor([0.3, 0.7], dtype=m.float64, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        first = x.grad
        assert first.requires_grad
        (z,) = m.autograd.grad(first.sum(), x)
        return first, z
    (a1, b1), (a2, b2) = _both(run)
    _close(a1, a2)
    _close(b1, b2)


def test_grad_does_not_touch_dot_grad_and_allow_unused():
    x = numgrad.tensor([1.0, 2.0], requires_grad=True)
    unused = numgrad.tensor([5.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        numgrad.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = numgrad.autograd.grad(y, [x, unused], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    assert gu is None and x.grad is None and unused.grad is None


def test_backward_inputs_accumulates_only_into_those():
    def run(m):
        a = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        b = m.tensor([3.0, 4.0], dtype=m.float64, requires_grad=True)
        (a * b).sum().backward(inputs=[b])
        return a.grad, b.grad
    (a1, b1), (a2, b2) = _both(run)
    assert a1 is None and a2 is None
    _close(b1, b2)


def test_autograd_backward_of_several_outputs_sums_their_gradients():
    def run(m):
        x = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
        m.autograd.backward([x * 2, (x * x).sum()], [m.ones(2, dtype=m.float64), None])
        return x.grad
    _close(*_both(run))


def test_scalar_conversions_and_backward_misuse_in_pytorchs_words():
    """``float()``/``int()``/``complex()`` of a tensor of several elements: PyTorch's ValueError
    (was ``item()``'s RuntimeError); ``float()`` of a tensor requiring grad and a backward with
    ``create_graph=True`` give PyTorch's once-a-process warnings (every time under
    ``set_warn_always``); an unused input is named by its index; ``inputs=[]`` in its words."""
    import torch

    def outcome(m, fn):
        m.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    fn(m)
                    error = None
                except Exception as e:  # (compared: class and message)
                    error = (type(e).__name__, str(e))
        finally:
            m.set_warn_always(False)
        return error, [str(w.message).split(" (Triggered internally")[0] for w in caught]

    x = lambda m: m.tensor([1.0, 2.0], requires_grad=True)  # noqa: E731
    cases = [
        lambda m: float(x(m)), lambda m: int(m.tensor([1, 2])), lambda m: complex(m.ones(0)),
        lambda m: float(x(m)[:1]), lambda m: (x(m) * x(m)).sum().backward(create_graph=True),
        lambda m: m.autograd.grad(x(m).sum(), [x(m)]),
        lambda m: (lambda t: m.autograd.grad(t.sum(), [t, x(m)]))(x(m)),
        lambda m: x(m).sum().backward(inputs=[]),
    ]
    for fn in cases:
        assert outcome(numgrad, fn) == outcome(torch, fn)
